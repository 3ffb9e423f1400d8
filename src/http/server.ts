import type { AddressInfo, Socket } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { type ServerLimits, defaultServerLimits } from './server-limits.js';

export { type ServerLimits, defaultServerLimits } from './server-limits.js';

export interface RunningServer {
  /** The address it listens on, e.g. `http://127.0.0.1:3000`. */
  url: string;
  server: Server;
  /** Stops accepting connections, lets requests in flight finish (up to `graceMs`), then closes. */
  close(graceMs?: number): Promise<void>;
}

/** Serves a Hono app on `host:port` (port 0 picks a free one). */
export function listen<Env extends object>(
  app: Hono<Env & { Variables: object }>,
  options: { host: string; port: number; limits?: Partial<ServerLimits> },
): Promise<RunningServer> {
  const limits = { ...defaultServerLimits, ...options.limits };
  return new Promise((resolve, reject) => {
    const server = serve({
      fetch: app.fetch,
      hostname: options.host,
      port: options.port,
      serverOptions: {
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        // Node checks the two deadlines above on this interval (30 s by default, far past them).
        connectionsCheckingInterval: Math.max(100, Math.min(1_000, limits.headersTimeoutMs / 4)),
      },
    }) as Server;
    server.maxConnections = limits.maxConnections;
    // Idle sockets are closed (Node destroys a socket whose timeout fires with no listener):
    // before and between requests this is the body deadline; once a request is received the
    // answer is ours to take time over, so the socket's own timeout is lifted until the
    // response ends and Node arms keepAliveTimeout.
    server.timeout = limits.bodyIdleTimeoutMs;
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const socket: Socket = request.socket;
      const hasBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
      if (!hasBody || request.complete) {
        socket.setTimeout(0);
        return;
      }
      socket.setTimeout(limits.bodyIdleTimeoutMs);
      // Once the answer is finished Node has armed keepAliveTimeout: leave that in place.
      request.once('end', () => {
        if (!response.writableFinished) socket.setTimeout(0);
      });
    });
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({
        url: `http://${host}:${address.port}`,
        server,
        close: (graceMs = 10_000) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            timer.unref();
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
