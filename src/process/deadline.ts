/**
 * A signal that aborts after `ms` (a TimeoutError, as AbortSignal.timeout's), for AbortSignal.any([signal, deadline(ms)]).
 * Not AbortSignal.timeout: Node 20 holds a timeout signal only weakly, its timer too, and AbortSignal.any holds its
 * sources weakly as well, so a garbage collection before the time is up collects it, clears its timer, and the request
 * is never ended (nodejs/node#57736). Here the timer holds the controller until it fires; unref'd, it keeps no process up.
 */
export function deadline(ms: number): AbortSignal {
  const controller = new AbortController();
  setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms).unref();
  return controller.signal;
}
