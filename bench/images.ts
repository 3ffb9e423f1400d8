import autocannon from 'autocannon';
import { type BenchProcess, startProcess } from './processes.js';
import { startBenchService } from './setup.js';
import { megabytes, percentile, pool, round } from './stats.js';

const storedJobs = Number(process.env.BENCH_JOBS ?? 10_000);
const clients = 16;


/**
 * Issue 5's benchmarks with an instant fake Cog container in its own process:
 * - jobs per second through the whole path (POST /images, queue, engine, copying the PNG
 *   into storage, the job read back as SUCCESS), asynchronous and synchronous;
 * - `GET /api/v0/jobs` over an account holding 10,000 jobs, first page and a deep page.
 */
export async function benchmarkImageJobs(dataDir: string) {
  const engine: BenchProcess = await startProcess('image-engine-process.ts', {});
  const bench = await startBenchService(dataDir, { script: 'reply:unused' }, {
    IMAGE_ENGINE: 'cog',
    COG_BASE_URL: engine.url,
    IMAGE_CONCURRENCY: '8',
    STARTING_BALANCE: String(storedJobs * 2),
  });
  try {
    const { client } = await bench.account('painter');
    // Warm-up: JIT, first file directories, engine connections.
    await pool(50, clients, async (index) => {
      await client.json('POST', '/api/v0/images', { prompt: `warm ${index}`, width: 64, height: 64, synchronous: true });
    });

    // Synchronous: each client waits for its images before asking again.
    const synchronousCount = 500;
    const latencies: number[] = [];
    let started = performance.now();
    await pool(synchronousCount, clients, async (index) => {
      const begun = performance.now();
      const answer = await client.json('POST', '/api/v0/images', { prompt: `sync ${index}`, width: 512, height: 512, synchronous: true });
      if (answer.output?.length !== 1) throw new Error(`job ${answer.jobId} gave no image: ${JSON.stringify(answer)}`);
      latencies.push(performance.now() - begun);
    });
    const synchronousSeconds = (performance.now() - started) / 1000;

    // Asynchronous: 10,000 jobs queued as fast as clients can post them, then all awaited.
    const usageBefore = await bench.service.usage();
    started = performance.now();
    const jobIds: string[] = [];
    await pool(storedJobs - synchronousCount - 50, clients, async (index) => {
      jobIds[index] = (await client.json('POST', '/api/v0/images', { prompt: `async ${index}`, width: 64, height: 64 })).jobId;
    });
    const postedSeconds = (performance.now() - started) / 1000;
    const last = jobIds.at(-1)!;
    for (;;) {
      const { job } = await client.json('GET', `/api/v0/jobs/${last}`);
      if (job.status !== 'CREATED' && job.status !== 'IN_PROGRESS') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const asynchronousSeconds = (performance.now() - started) / 1000;
    const usageAfter = await bench.service.usage();

    // Every job listed once, all finished.
    const statuses = new Map<string, number>();
    let listed = 0;
    let cursor: string | undefined;
    do {
      const page = await client.json('GET', `/api/v0/jobs?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
      for (const job of page.jobs) statuses.set(job.status, (statuses.get(job.status) ?? 0) + 1);
      listed += page.jobs.length;
      cursor = page.nextCursor;
    } while (cursor);

    const listUrl = (query: string) => `${bench.service.url}/api/v0/jobs?${query}`;
    const load = (url: string) => autocannon({ url, connections: 32, duration: 5, headers: { authorization: `Bearer ${client.key}` } });
    await load(listUrl('limit=50'));
    const firstPage = await load(listUrl('limit=50'));
    const deepPage = await load(listUrl(`limit=50&cursor=${Math.floor(storedJobs / 2)}`));
    const result = {
      engine: 'fake Cog, instant, 8 slots, in its own process; IMAGE_CONCURRENCY=8',
      synchronous: {
        jobs: synchronousCount,
        clients,
        size: '512x512',
        jobsPerSecond: round(synchronousCount / synchronousSeconds, 1),
        latencyP50Ms: round(percentile(latencies, 0.5), 1),
        latencyP99Ms: round(percentile(latencies, 0.99), 1),
      },
      asynchronous: {
        jobs: jobIds.length,
        size: '64x64',
        postsPerSecond: round(jobIds.length / postedSeconds, 1),
        jobsCompletedPerSecond: round(jobIds.length / asynchronousSeconds, 1),
        serviceCpuSeconds: round((usageAfter.cpuMicros - usageBefore.cpuMicros) / 1e6, 2),
      },
      listing: {
        storedJobs: listed,
        statuses: Object.fromEntries(statuses),
        firstPageRequestsPerSecond: round(firstPage.requests.average, 0),
        firstPageLatencyP50Ms: firstPage.latency.p50,
        firstPageLatencyP99Ms: firstPage.latency.p99,
        deepPageRequestsPerSecond: round(deepPage.requests.average, 0),
        deepPageLatencyP99Ms: deepPage.latency.p99,
        errors: firstPage.errors + firstPage.non2xx + deepPage.errors + deepPage.non2xx,
      },
      servicePeakRssMB: megabytes(usageAfter.maxRssBytes),
    };
    console.error('image jobs', result);
    await client.close();
    return result;
  } finally {
    await bench.stop();
    await engine.stop();
  }
}
