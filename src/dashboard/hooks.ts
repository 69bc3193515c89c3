import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApiError, Result } from './api.js';

/** Data a page loads when it opens (and again on `reload`), with the error that kept it from loading. */
export function useLoad<T>(load: () => Promise<Result<T>>, deps: unknown[] = []) {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<ApiError>();
  const reload = useCallback(async () => {
    const result = await load();
    if (result.ok) {
      setData(result.data);
      setError(undefined);
    } else {
      setError(result.error);
    }
  }, deps); // the caller lists what `load` depends on
  useEffect(() => void reload(), [reload]);
  return { data, error, reload, setData };
}

/**
 * A call started by the user (a submit, a button): `busy` while it runs (buttons say so and cannot be pressed twice),
 * its error kept until the next try. What the user typed stays in the form's own state either way.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const run = async <T>(action: () => Promise<Result<T>>): Promise<Result<T>> => {
    setBusy(true);
    setError(undefined);
    const result = await action();
    setBusy(false);
    if (!result.ok) setError(result.error);
    return result;
  };
  return { busy, error, run, clearError: () => setError(undefined) };
}
