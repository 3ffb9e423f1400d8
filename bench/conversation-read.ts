import autocannon from 'autocannon';
import { createTestDatabase } from '../test/store/postgres-database.js';
import { startProcess } from './processes.js';
import { startBenchService } from './setup.js';
import { percentile, round } from './stats.js';

const durationSeconds = 5;
/** Five interleaved rounds: the bare server's speed on this machine swings by half from minute to minute. */
const rounds = 5;
const connections = 32;

function load(url: string, key: string): Promise<autocannon.Result> {
  return autocannon({ url, connections, duration: durationSeconds, headers: { authorization: `Bearer ${key}` } });
}

/**
 * 1. `GET /api/v0/conversations/:id` with 100 messages, in requests/s, as a ratio to a bare
 * node:http server sending the very same bytes.
 */
export async function benchmarkConversationRead(dataDir: string, storeKind: 'sqlite' | 'postgres' = 'sqlite') {
  const database = storeKind === 'postgres' ? await createTestDatabase() : undefined;
  const bench = await startBenchService(
    dataDir,
    { script: 'reply:A reply of ordinary length, a sentence or two, as characters often answer.' },
    database ? { STORE_URL: database.url } : {},
  );
  try {
    const { client, characterId } = await bench.account('reader');
    const { id } = await client.json('POST', '/api/v0/conversations', { characterId });
    for (let index = 0; index < 50; index++) await client.json('POST', `/api/v0/conversations/${id}/chat`, { data: `Message number ${index}, with a few words in it.` });
    const url = `${bench.service.url}/api/v0/conversations/${id}`;
    const sample = await fetch(url, { headers: { authorization: `Bearer ${client.key}` } });
    const body = Buffer.from(await sample.arrayBuffer());
    const messages = JSON.parse(body.toString()).messages.length;
    if (messages !== 100) throw new Error(`expected 100 messages, got ${messages}`);
    const bare = await startProcess('bare-process.ts', { BARE_BODY_BASE64: body.toString('base64') });
    try {
      await load(url, client.key); // warm-up: JIT and caches
      await load(bare.url, client.key);
      // Interleaved rounds: this machine's speed drifts by tens of percent from minute to minute.
      const ours: autocannon.Result[] = [];
      const baseline: autocannon.Result[] = [];
      for (let round = 0; round < rounds; round++) {
        ours.push(await load(url, client.key));
        baseline.push(await load(bare.url, client.key));
      }
      const ratios = ours.map((result, index) => result.requests.average / baseline[index]!.requests.average);
      const result = {
        store: storeKind,
        messages,
        bodyBytes: body.length,
        connections,
        durationSeconds,
        rounds,
        serviceRequestsPerSecond: ours.map((entry) => round(entry.requests.average, 0)),
        bareRequestsPerSecond: baseline.map((entry) => round(entry.requests.average, 0)),
        ratioPerRound: ratios.map((ratio) => round(ratio, 2)),
        ratioMedian: round(percentile(ratios, 0.5), 2),
        serviceLatencyP99Ms: Math.max(...ours.map((entry) => entry.latency.p99)),
        errors: ours.reduce((sum, entry) => sum + entry.errors + entry.non2xx, 0),
        target: storeKind === 'sqlite' ? 'ratio >= 0.5' : 'reported',
      };
      console.error(`conversation read (${storeKind})`, result);
      return result;
    } finally {
      await bare.stop();
      await client.close();
    }
  } finally {
    await bench.stop();
    await database?.drop();
  }
}
