/**
 * The Hono middleware on an app shaped like ours (sub-apps mounted under /api/v0, auth
 * middleware, onError and notFound), served over real HTTP and scraped: labels carry route
 * patterns, never the ids in the paths.
 */
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, type RunningServer } from '../../src/http/server.js';
import { httpMetrics } from '../../src/metrics/http-metrics.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { metricsRoutes } from '../../src/metrics/metrics-server.js';
import { find, scrape, valueOf } from './exposition.js';

const token = 'scrape-token-0123456789';

function createApiLikeApp(metrics: Metrics) {
  const app = new Hono<{ Variables: object }>();
  app.use(httpMetrics(metrics));
  app.onError((error, context) => context.json({ error: error.message }, error instanceof HTTPException ? error.status : 500));
  app.notFound((context) => context.json({ error: 'no such endpoint' }, 404));
  app.route('/', metricsRoutes(metrics, { token }));
  app.get('/healthz', (context) => context.json({ ok: true }));

  const characters = new Hono();
  characters.get('/:characterId', (context) => context.json({ id: context.req.param('characterId') }));
  characters.post('/:characterId/messages', () => {
    throw new HTTPException(422, { message: 'empty message' });
  });
  const api = new Hono();
  api.use(async (context, next) => {
    if (context.req.header('authorization') !== 'Bearer key') throw new HTTPException(401, { message: 'who are you?' });
    await next();
  });
  api.route('/characters', characters);
  app.route('/api/v0', api);
  return app;
}

describe('HTTP metrics middleware', () => {
  const metrics = new Metrics({ processMetrics: false });
  let server: RunningServer;
  beforeAll(async () => {
    server = await listen(createApiLikeApp(metrics), { host: '127.0.0.1', port: 0 });
  });
  afterAll(() => server.close());

  it('labels requests by method, route pattern and status class', async () => {
    const authorized = { headers: { authorization: 'Bearer key' } };
    for (const id of ['c_1', 'c_2', 'c_3']) expect((await fetch(`${server.url}/api/v0/characters/${id}`, authorized)).status).toBe(200);
    expect((await fetch(`${server.url}/api/v0/characters/c_4/messages`, { ...authorized, method: 'POST' })).status).toBe(422);
    expect((await fetch(`${server.url}/api/v0/characters/c_5`)).status).toBe(401);
    expect((await fetch(`${server.url}/api/v0/nothing/here/42`, authorized)).status).toBe(404);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    const exposition = await scrape(server.url, token);
    const requests = (labels: Record<string, string>) => valueOf(exposition, 'likeness_http_requests_total', labels);
    expect(requests({ method: 'GET', route: '/api/v0/characters/:characterId', status_class: '2xx' })).toBe(3);
    expect(requests({ method: 'POST', route: '/api/v0/characters/:characterId/messages', status_class: '4xx' })).toBe(1);
    // Turned away by the auth middleware: the label is where it was answered, still a pattern.
    expect(requests({ method: 'GET', route: '/api/v0/*', status_class: '4xx' })).toBe(1);
    expect(requests({ method: 'GET', route: 'unmatched', status_class: '4xx' })).toBe(1);
    expect(requests({ method: 'GET', route: '/healthz', status_class: '2xx' })).toBe(1);
    expect(valueOf(exposition, 'likeness_http_request_duration_seconds_count', { method: 'GET', route: '/api/v0/characters/:characterId' })).toBe(3);

    const routes = new Set(find(exposition, 'likeness_http_requests_total').map((sample) => sample.labels.route));
    expect([...routes].filter((route) => /c_\d|42/.test(route ?? ''))).toEqual([]);
  });
});
