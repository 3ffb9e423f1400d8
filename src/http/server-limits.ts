/**
 * Deadlines and caps that keep slow or idle clients from holding connections. None of them
 * limits how long a response may take: a streamed chat reply, or a synchronous one waiting on
 * a slow engine, runs as long as the engine's own timeouts allow.
 */
export interface ServerLimits {
  /** Time to receive the request line and headers (slowloris). */
  headersTimeoutMs: number;
  /** Time to receive the whole request, body included (a body trickled a byte at a time). */
  requestTimeoutMs: number;
  /** Longest silence while a request's body is still arriving (headers sent, body withheld). */
  bodyIdleTimeoutMs: number;
  /** How long a kept-alive connection may sit idle between requests. */
  keepAliveTimeoutMs: number;
  /** Open connections at most; more are closed as they arrive. */
  maxConnections: number;
}

export const defaultServerLimits: ServerLimits = {
  headersTimeoutMs: 20_000,
  // A 110 MB face-photo upload at 1 MB/s fits.
  requestTimeoutMs: 120_000,
  bodyIdleTimeoutMs: 20_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1_000,
};
