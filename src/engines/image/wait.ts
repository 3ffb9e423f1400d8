/**
 * Waiting between polls and retries. Every wait ends early when the run is aborted and then
 * rejects with the signal's own reason, so callers can rethrow it as the port asks.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ServiceStopping } from '../../core/errors.js';

/** Waits `milliseconds`, or rejects with `signal.reason` as soon as the signal fires. */
export async function sleep(milliseconds: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  try {
    await delay(milliseconds, undefined, { signal });
  } catch (thrown) {
    // timers/promises rejects with its own AbortError; the port wants the caller's reason.
    if (signal.aborted) throw signal.reason;
    throw thrown;
  }
}

/**
 * Whether an aborted run's work should be stopped at the engine. A run aborted because the
 * service is stopping is left running there, so the next process can follow it again.
 */
export function cancelsRemoteWork(signal: AbortSignal): boolean {
  return signal.aborted && !(signal.reason instanceof ServiceStopping);
}

/**
 * The wait a `retry-after` header asks for, in milliseconds: delta-seconds or an HTTP date
 * (RFC 9110). Undefined when absent or unreadable.
 */
export function retryAfterMs(header: string | string[] | undefined, nowMillis = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMillis);
}

/**
 * Reports progress to a run without ever going backwards: engines that run several passes
 * (base, refiner, face inpainting) restart their progress bar for each, and a bar that jumps
 * back looks broken to the person waiting.
 */
export function forwardProgress(report: (fraction: number) => void): (fraction: number) => void {
  let last = -1;
  return (fraction) => {
    if (!Number.isFinite(fraction)) return;
    const clamped = Math.min(1, Math.max(0, fraction));
    if (clamped <= last) return;
    last = clamped;
    report(clamped);
  };
}

/** The last tqdm percentage (`" 45%|████▌     | 9/20 [...]"`) in model logs, as 0..1. */
export function progressOfLogs(logs: unknown): number | undefined {
  if (typeof logs !== 'string') return undefined;
  const matches = [...logs.matchAll(/(\d{1,3})%\|/g)];
  const last = matches.at(-1);
  return last === undefined ? undefined : Math.min(100, Number(last[1])) / 100;
}
