import type { Response } from 'express';
import { WINDOW_SECONDS, type RateLimitState } from '../registry/rate-limit.js';

/**
 * The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-09, structured fields): the policy,
 * named after the bucket, with its quota `q` per window `w` seconds, and what is left of it, `r`, for `t` seconds.
 */
export function setRateLimitHeaders(res: Response, state: RateLimitState | undefined): void {
  if (!state) return;
  res.set('RateLimit-Policy', `"${state.bucket}";q=${state.limit};w=${WINDOW_SECONDS}`);
  res.set('RateLimit', `"${state.bucket}";r=${state.remaining};t=${state.resetSeconds}`);
}

/** Retry-After on a refusal: whole seconds, at least one. */
export function retryAfterSeconds(state: RateLimitState): string {
  return String(Math.max(1, state.resetSeconds));
}
