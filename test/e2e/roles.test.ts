import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeCog, startFakeCog } from '../fakes/images/fake-cog.js';
import { onFreePort } from '../support/ports.js';
import { createTestDatabase } from '../store/postgres-database.js';
import { type ServiceProcess, call, startServing, stopService } from './service-processes.js';

const adminKey = 'admin-key-of-the-roles-test';
const metricsToken = 'a-metrics-token-of-the-roles-test';

/**
 * The same build run as separate roles on one PostgreSQL database: an API process that takes
 * requests but runs no job, and worker processes that run them, each with its health checks
 * and Prometheus figures.
 */
describe('ROLES: an API process and worker processes on one PostgreSQL database', () => {
  let database: { url: string; drop(): Promise<void> };
  let cog: FakeCog;
  let api: ServiceProcess;
  let worker: ServiceProcess;
  let workerMetricsPort: number;
  const started: ServiceProcess[] = [];
  let environment: Record<string, string>;

  const start = async (name: string, extra: Record<string, string>) => {
    const service = await startServing(name, { ...environment, ...extra });
    started.push(service);
    return service;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    cog = await startFakeCog({ capacity: 4, steps: 2, stepMs: 50 });
    environment = {
      STORE_URL: database.url,
      ADMIN_API_KEY: adminKey,
      // No chat here: a chat server on a closed loopback port, so no process fetches a model.
      LLM_BASE_URL: 'http://127.0.0.1:9/v1',
      IMAGE_ENGINE: 'cog',
      COG_BASE_URL: cog.url,
      API_RATE_LIMIT_PER_MINUTE: '100000',
      STARTING_BALANCE: '10',
    };
    [api, worker] = await Promise.all([
      start('api', { ROLES: 'api', METRICS_TOKEN: metricsToken }),
      // Its figures' port can be taken too: the worker then starts again on other ports.
      onFreePort(async (metricsPort) => {
        const started = await start('worker', { ROLES: 'worker', METRICS_PORT: String(metricsPort) });
        workerMetricsPort = metricsPort;
        return started;
      }),
    ]);
  });

  afterAll(async () => {
    await Promise.all(started.map(stopService));
    await cog?.close();
    await database?.drop();
  });

  async function user(username: string): Promise<{ id: string; key: string }> {
    const created = await call(api, 'POST', '/accounts', adminKey, { username });
    expect(created.status).toBe(201);
    return { id: created.body.account.id, key: created.body.apiKey };
  }

  it('runs an image job taken by the API process in the worker process', async () => {
    const { key } = await user('painter');
    const answer = await call(api, 'POST', '/images', key, { prompt: 'a lighthouse', width: 64, height: 64, samples: 1, synchronous: true });
    // The synchronous answer: the images, made by the worker, with the job's id.
    expect(answer.status).toBe(200);
    expect(answer.body.output).toHaveLength(1);
    expect((await call(api, 'GET', `/jobs/${answer.body.jobId ?? answer.body.id}`, key)).body.job.status).toBe('SUCCESS');
  });

  it('serves only health checks in a process without the api role', async () => {
    expect((await fetch(`${worker.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${worker.url}/readyz`)).status).toBe(200);
    const refused = await fetch(`${worker.url}/api/v0/accounts`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(refused.status).toBe(404);
  });

  it('serves Prometheus figures: behind the token on the API port, on its own port for the worker', async () => {
    expect((await fetch(`${api.url}/metrics`)).status).toBe(401);
    const scraped = await fetch(`${api.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    expect(scraped.status).toBe(200);
    const apiFigures = await scraped.text();
    expect(apiFigures).toMatch(/likeness_http_requests_total\{[^}]*route="\/api\/v0\/images"[^}]*\} [1-9]/);
    expect(apiFigures).toContain('role="api"');
    const workerFigures = await (await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`)).text();
    expect(workerFigures).toMatch(/likeness_jobs\{[^}]*type="IMAGE_INFERENCE"[^}]*state="SUCCESS"[^}]*\} [1-9]/);
    expect(workerFigures).toContain('likeness_jobs_queue_depth');
    expect(workerFigures).toContain('role="worker"');
  });

  it('leaves jobs queued while no worker runs, and a new worker takes them', async () => {
    const { key } = await user('patient');
    await stopService(worker);
    const accepted = await call(api, 'POST', '/images', key, { prompt: 'a quiet harbour', width: 64, height: 64, samples: 1 });
    expect(accepted.status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await call(api, 'GET', `/jobs/${accepted.body.jobId}`, key)).body.job.status).toBe('CREATED');
    await start('worker-2', { ROLES: 'worker' });
    await expect
      .poll(async () => (await call(api, 'GET', `/jobs/${accepted.body.jobId}`, key)).body.job.status, { timeout: 20_000, interval: 200 })
      .toBe('SUCCESS');
  });
});
