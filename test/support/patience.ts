/**
 * How long a test waits for something that should happen, at the least. The suite must pass on
 * a machine at load 8 (every process four to eight times slower than when it is quiet), so a
 * wait is bounded only to end a test that would otherwise hang, never to judge a speed: a
 * condition met early ends the wait early, so a long bound costs a passing test nothing.
 */
export const PATIENCE_MS = 60_000;

/** The bound a wait gives: what its caller asked, raised to {@link PATIENCE_MS}. */
export function patient(timeoutMs: number): number {
  return Math.max(timeoutMs, PATIENCE_MS);
}
