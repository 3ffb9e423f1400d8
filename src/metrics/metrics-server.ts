import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import type { Metrics } from './metrics.js';

export interface MetricsServerOptions {
  /** Where to listen; `127.0.0.1` keeps the figures on the machine unless a scraper is let in. */
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** When set, scrapes must send `Authorization: Bearer <token>`. */
  token?: string | undefined;
}

export interface RunningMetricsServer {
  /** e.g. `http://127.0.0.1:9464`; the figures are at `${url}/metrics`. */
  url: string;
  close(): Promise<void>;
}

/** One scrape's answer, whichever server carries it. */
interface ScrapeAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Serves `GET /metrics` on a port of its own through node:http, apart from the API: the API's
 * limits, auth and error mapping do not apply, and a busy or stuck API still gets scraped.
 */
export function startMetricsServer(metrics: Metrics, options: MetricsServerOptions): Promise<RunningMetricsServer> {
  const authorized = bearerCheck(options.token);
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    const answer: Promise<ScrapeAnswer> =
      path !== '/metrics'
        ? Promise.resolve({ status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'Not found: scrape /metrics.\n' })
        : scrape(metrics, request.method ?? 'GET', authorized(request.headers.authorization));
    void answer.then((result) => {
      response.writeHead(result.status, { ...result.headers, 'content-length': Buffer.byteLength(result.body) });
      response.end(request.method === 'HEAD' ? undefined : result.body);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({
        url: `http://${host}:${address.port}`,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
            // Scrapers keep connections alive between scrapes; they hold nothing worth waiting for.
            server.closeIdleConnections();
          }),
      });
    });
  });
}

/**
 * `/metrics` as a Hono app, for a process that wants no second port: mount it on the API with
 * `app.route('/', metricsRoutes(metrics, { token }))`, ahead of the `/api/v0` auth. Give it a
 * token: on the API's port the figures would otherwise be public.
 */
export function metricsRoutes(metrics: Metrics, options: { token?: string | undefined }): Hono {
  const authorized = bearerCheck(options.token);
  const app = new Hono();
  app.on(['GET', 'HEAD'], '/metrics', async (context) => {
    const result = await scrape(metrics, context.req.method, authorized(context.req.header('authorization')));
    return context.body(result.body, result.status as 200, result.headers);
  });
  return app;
}

async function scrape(metrics: Metrics, method: string, authorized: boolean): Promise<ScrapeAnswer> {
  const text = { 'content-type': 'text/plain; charset=utf-8' };
  if (method !== 'GET' && method !== 'HEAD') return { status: 405, headers: { ...text, allow: 'GET, HEAD' }, body: 'Only GET and HEAD.\n' };
  if (!authorized) return { status: 401, headers: { ...text, 'www-authenticate': 'Bearer realm="metrics"' }, body: 'A bearer token is required.\n' };
  try {
    const { contentType, body } = await metrics.exposition();
    return { status: 200, headers: { 'content-type': contentType, 'cache-control': 'no-store' }, body };
  } catch {
    // A collect callback failed outright; the scraper records the target as down.
    return { status: 500, headers: text, body: 'Collecting the metrics failed.\n' };
  }
}

/** Compares digests so the check takes the same time whatever the length or content sent. */
function bearerCheck(token: string | undefined): (header: string | undefined) => boolean {
  if (token === undefined || token === '') return () => true;
  const expected = digest(token);
  return (header) => {
    const match = /^Bearer\s+(.+)$/i.exec(header?.trim() ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
