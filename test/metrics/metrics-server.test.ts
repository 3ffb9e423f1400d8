/**
 * /metrics over real HTTP: its own port with and without a token, the mountable route on an
 * API-like Hono app, and registries of two Metrics objects kept apart.
 */
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { listen, type RunningServer } from '../../src/http/server.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { metricsRoutes, startMetricsServer, type RunningMetricsServer } from '../../src/metrics/metrics-server.js';
import { parseExposition, scrape, valueOf } from './exposition.js';

const token = 'scrape-token-0123456789';

describe('metrics server', () => {
  const servers: Array<RunningMetricsServer | RunningServer> = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  it('serves the exposition text with its content type, process metrics included', async () => {
    const metrics = new Metrics();
    metrics.http.observe('/api/v0/characters/:characterId', 'GET', 200, 0.012);
    const server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
    servers.push(server);

    const exposition = await scrape(server.url);
    expect(valueOf(exposition, 'likeness_http_requests_total', { method: 'GET', route: '/api/v0/characters/:characterId', status_class: '2xx' })).toBe(1);
    expect(exposition.types.get('likeness_http_request_duration_seconds')).toBe('histogram');
    expect(exposition.help.get('likeness_http_requests_total')).toMatch(/route pattern/);
    expect(valueOf(exposition, 'likeness_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect((await fetch(`${server.url}/elsewhere`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('asks for the bearer token when one is set, and takes only that one', async () => {
    const server = await startMetricsServer(new Metrics(), { host: '127.0.0.1', port: 0, token });
    servers.push(server);

    const anonymous = await fetch(`${server.url}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Basic ${token}` } })).status).toBe(401);
    expect(valueOf(await scrape(server.url, token), 'likeness_jobs_queue_depth')).toBe(0);
  });

  it('mounts /metrics on an API app behind the token instead of a port of its own', async () => {
    const metrics = new Metrics();
    metrics.discord.restResponse('POST', '/channels/:id/messages', 200);
    const app = new Hono<{ Variables: object }>();
    app.route('/', metricsRoutes(metrics, { token }));
    app.get('/healthz', (context) => context.json({ ok: true }));
    const server = await listen(app, { host: '127.0.0.1', port: 0 });
    servers.push(server);

    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    const exposition = await scrape(server.url, token);
    expect(valueOf(exposition, 'likeness_discord_rest_requests_total', { method: 'POST', route: '/channels/:id/messages' })).toBe(1);
  });

  it('keeps two Metrics objects apart: what one counts never shows in the other', async () => {
    const first = new Metrics({ processMetrics: false });
    const second = new Metrics({ processMetrics: false, defaultLabels: { role: 'worker' } });
    first.http.observe('/healthz', 'GET', 200, 0.001);
    first.http.observe('/healthz', 'GET', 503, 0.001);
    second.chat.outcome('llama', 'timeout');
    const [firstServer, secondServer] = await Promise.all([
      startMetricsServer(first, { host: '127.0.0.1', port: 0 }),
      startMetricsServer(second, { host: '127.0.0.1', port: 0 }),
    ]);
    servers.push(firstServer, secondServer);

    const [firstScrape, secondScrape] = await Promise.all([scrape(firstServer.url), scrape(secondServer.url)]);
    expect(valueOf(firstScrape, 'likeness_http_requests_total', { status_class: '5xx' })).toBe(1);
    expect(valueOf(firstScrape, 'likeness_chat_requests_total')).toBeUndefined();
    expect(valueOf(secondScrape, 'likeness_http_requests_total')).toBeUndefined();
    expect(valueOf(secondScrape, 'likeness_chat_requests_total', { provider: 'llama', outcome: 'timeout', role: 'worker' })).toBe(1);
    expect(valueOf(firstScrape, 'likeness_process_resident_memory_bytes')).toBeUndefined();
  });

  it('reads the jobs table only when scraped, once per scrape, and survives a failed read', async () => {
    const metrics = new Metrics({ processMetrics: false });
    let reads = 0;
    let failing = false;
    metrics.jobs.collectWith(async () => {
      reads += 1;
      if (failing) throw new Error('database is down');
      return {
        counts: [
          { type: 'IMAGE_INFERENCE', state: 'CREATED', count: 3 },
          { type: 'IMAGE_INFERENCE', state: 'IN_PROGRESS', count: 2 },
          { type: 'FACE_MODEL_TRAINING', state: 'SUCCESS', count: 7 },
        ],
        queueDepth: 3,
      };
    });
    const server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
    servers.push(server);
    expect(reads).toBe(0);

    const exposition = await scrape(server.url);
    expect(reads).toBe(1);
    expect(valueOf(exposition, 'likeness_jobs', { type: 'IMAGE_INFERENCE', state: 'IN_PROGRESS' })).toBe(2);
    expect(valueOf(exposition, 'likeness_jobs', { type: 'FACE_MODEL_TRAINING', state: 'SUCCESS' })).toBe(7);
    expect(valueOf(exposition, 'likeness_jobs_queue_depth')).toBe(3);

    failing = true;
    const duringOutage = await scrape(server.url);
    expect(reads).toBe(2);
    expect(valueOf(duringOutage, 'likeness_jobs', { type: 'IMAGE_INFERENCE', state: 'CREATED' })).toBeUndefined();
    expect(valueOf(duringOutage, 'likeness_metrics_collect_errors_total', { source: 'jobs' })).toBe(1);
  });

  it('parses label values with escapes as a scraper would', () => {
    const exposition = parseExposition('# TYPE x counter\nx{a="q\\"uote",b="back\\\\slash"} 2\n');
    expect(valueOf(exposition, 'x', { a: 'q"uote', b: 'back\\slash' })).toBe(2);
  });
});
