import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

export interface RunningServer {
  /** The address it listens on, e.g. `http://127.0.0.1:3000`. */
  url: string;
  server: Server;
  /** Stops accepting connections, lets requests in flight finish (up to `graceMs`), then closes. */
  close(graceMs?: number): Promise<void>;
}

/** Serves a Hono app on `host:port` (port 0 picks a free one). */
export function listen<Env extends object>(app: Hono<Env & { Variables: object }>, options: { host: string; port: number }): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: options.host, port: options.port }) as Server;
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
