import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import autocannon from 'autocannon';
import { createTestDatabase } from '../test/store/postgres-database.js';
import { ApiClient } from './api-client.js';
import { type BenchProcess, startProcess, startServiceProcess } from './processes.js';
import { adminKey } from './setup.js';
import { pool, round } from './stats.js';

const connections = 32;
const durationSeconds = 5;
const jobCount = 1_500;


/** Reads `urls` together for the same time, the connections split between them; requests/s in sum. */
async function loadAll(urls: string[], key: string): Promise<{ requestsPerSecond: number; p99Ms: number; errors: number }> {
  const results = await Promise.all(
    urls.map((url) => autocannon({ url, connections: connections / urls.length, duration: durationSeconds, headers: { authorization: `Bearer ${key}` } })),
  );
  return {
    requestsPerSecond: round(results.reduce((sum, result) => sum + result.requests.average, 0), 0),
    p99Ms: Math.max(...results.map((result) => result.latency.p99)),
    errors: results.reduce((sum, result) => sum + result.errors + result.non2xx, 0),
  };
}

/**
 * Issue 12's scale-out on one PostgreSQL database, on this machine: the conversation read
 * (100 messages) with one and with two API replicas, and image jobs through the whole path
 * with one and with two worker processes (an instant fake Cog in its own process, eight
 * predictions at once in all). Every process is `node dist/src/main.js` with its `ROLES`.
 */
export async function benchmarkScale(dataDir: string) {
  const database = await createTestDatabase();
  const llm = await startProcess('engine-process.ts', { BENCH_SCRIPT: 'reply:A reply of ordinary length, a sentence or two, as characters often answer.' });
  const engine: BenchProcess = await startProcess('image-engine-process.ts', {});
  const services: BenchProcess[] = [];
  const start = async (name: string, environment: Record<string, string>) => {
    const directory = path.join(dataDir, name);
    await mkdir(directory, { recursive: true });
    const service = await startServiceProcess({
      PORT: '0',
      DATA_DIR: directory,
      STORE_URL: database.url,
      ADMIN_API_KEY: adminKey,
      URL_SIGNING_SECRET: 'one-secret-for-every-bench-process',
      PUBLIC_BASE_URL: 'http://likeness.bench',
      LLM_BASE_URL: llm.url,
      LLM_MODEL: 'fake-model',
      IMAGE_ENGINE: 'cog',
      COG_BASE_URL: engine.url,
      IMAGE_CONCURRENCY: '8',
      API_RATE_LIMIT_PER_MINUTE: '1000000',
      STARTING_BALANCE: String(jobCount * 4),
      ...environment,
    });
    services.push(service);
    return service;
  };
  try {
    // One API process (no worker) first; the read is measured before any worker starts.
    const first = await start('api-1', { ROLES: 'api' });
    const admin = new ApiClient(first.url, adminKey);
    const created = await admin.json('POST', '/api/v0/accounts', { username: 'scaler' });
    const client = new ApiClient(first.url, created.apiKey);
    const { id } = await client.json('POST', '/api/v0/conversations', { characterId: created.account.characterId });
    for (let index = 0; index < 50; index++) await client.json('POST', `/api/v0/conversations/${id}/chat`, { data: `Message number ${index}, with a few words in it.` });
    const readPath = `/api/v0/conversations/${id}`;
    await loadAll([`${first.url}${readPath}`], created.apiKey);
    const oneReplica = await loadAll([`${first.url}${readPath}`], created.apiKey);
    const second = await start('api-2', { ROLES: 'api' });
    await loadAll([`${first.url}${readPath}`, `${second.url}${readPath}`], created.apiKey);
    const twoReplicas = await loadAll([`${first.url}${readPath}`, `${second.url}${readPath}`], created.apiKey);

    // Jobs: queued through the API with no worker running, then drained by one, then two workers.
    const drain = async (workers: number) => {
      const jobIds: string[] = [];
      await pool(jobCount, 16, async (index) => {
        jobIds[index] = (await client.json('POST', '/api/v0/images', { prompt: `scale ${workers} ${index}`, width: 64, height: 64 })).jobId;
      });
      const started = performance.now();
      const running = await Promise.all(Array.from({ length: workers }, (_, index) => start(`worker-${workers}-${index}`, { ROLES: 'worker' })));
      const last = jobIds.at(-1)!;
      for (;;) {
        const { job } = await client.json('GET', `/api/v0/jobs/${last}`);
        if (job.status !== 'CREATED' && job.status !== 'IN_PROGRESS') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const seconds = (performance.now() - started) / 1000;
      let succeeded = 0;
      for (const jobId of jobIds) if ((await client.json('GET', `/api/v0/jobs/${jobId}`)).job.status === 'SUCCESS') succeeded += 1;
      for (const worker of running) {
        await worker.stop();
        services.splice(services.indexOf(worker), 1);
      }
      // Start-up of the workers is counted: it is part of what a new worker costs.
      return { workers, jobs: jobCount, succeeded, seconds: round(seconds, 1), jobsPerSecond: round(jobCount / seconds, 0) };
    };
    const oneWorker = await drain(1);
    const twoWorkers = await drain(2);
    await client.close();
    await admin.close();
    const result = {
      store: 'postgres',
      conversationRead: { messages: 100, connections, durationSeconds, oneReplica, twoReplicas },
      jobs: { oneWorker, twoWorkers },
    };
    console.error('scale', JSON.stringify(result, null, 2));
    return result;
  } finally {
    for (const service of services.reverse()) await service.stop();
    await engine.stop();
    await llm.stop();
    await database.drop();
  }
}
