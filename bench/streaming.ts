import { ApiClient } from './api-client.js';
import { startProcess } from './processes.js';
import { startBenchService } from './setup.js';
import { megabytes, percentile, round } from './stats.js';

const tokensPerSecond = 40;

function expectedText(name: string, tokenCount: number): string {
  return Array.from({ length: tokenCount }, (_, index) => `${name}:${index} `).join('').trim();
}

async function openConversations(bench: Awaited<ReturnType<typeof startBenchService>>, count: number) {
  const { client, characterId } = await bench.account(`streamer${count}`);
  const ids: string[] = [];
  for (let batch = 0; batch < count; batch += 50) {
    const created = await Promise.all(
      Array.from({ length: Math.min(50, count - batch) }, () => client.json('POST', '/api/v0/conversations', { characterId })),
    );
    ids.push(...created.map((answer) => answer.id as string));
  }
  return { client, ids };
}

/** Per-chunk latency from the engine's write to the client's read, from both processes' wall clocks. */
function latenciesOf(writtenAt: Array<[string, number]>, readAt: Map<string, number>): number[] {
  return writtenAt.flatMap(([token, written]) => {
    const read = readAt.get(token);
    return read === undefined ? [] : [read - written];
  });
}

/**
 * 2. Streaming relay: time from the fake engine writing a chunk to our client reading it,
 * per chunk, with 100 streams at once at 40 tokens/s each; side by side with a bare node:http
 * relay piping the same engine's bytes, which shows what loopback and scheduling alone cost.
 */
export async function benchmarkStreamRelay(dataDir: string) {
  const streams = 100;
  const tokenCount = 80;
  const bench = await startBenchService(dataDir, { script: `stream:${tokenCount}:${tokensPerSecond}`, record: true });
  const bare = await startProcess('bare-relay-process.ts', { ENGINE_URL: bench.llm.url });
  try {
    const { client, ids } = await openConversations(bench, streams);
    const bareClient = new ApiClient(bare.url, 'none');
    const bareReadAt = new Map<string, number>();
    const bareResults = await Promise.all(
      ids.map((_, index) => bareClient.streamFrom('/', `bare ${index}`, (content, at) => bareReadAt.set(content, performance.timeOrigin + at))),
    );
    const readAt = new Map<string, number>();
    const before = await bench.service.usage();
    const engineBefore = await bench.llm.usage();
    const clientBefore = process.cpuUsage();
    const started = performance.now();
    const results = await Promise.all(
      ids.map((id, index) => client.stream(id, `stream ${index}`, (content, at) => readAt.set(content, performance.timeOrigin + at))),
    );
    const seconds = (performance.now() - started) / 1000;
    const after = await bench.service.usage();
    const engineAfter = await bench.llm.usage();
    const clientUsage = process.cpuUsage(clientBefore);
    // Both processes stamp wall-clock time from the same system clock, in milliseconds.
    const { writtenAt } = await bench.llm.ask<{ writtenAt: Array<[string, number]> }>('written');
    const latencies = latenciesOf(writtenAt, readAt);
    const bareLatencies = latenciesOf(writtenAt, bareReadAt);
    const correct = results.filter((result, index) => result.done && result.text.trim() === expectedText(`stream-${index}`, tokenCount)).length;
    const result = {
      streams,
      tokensPerStream: tokenCount,
      tokensPerSecond,
      chunksMeasured: latencies.length,
      latencyP50Ms: round(percentile(latencies, 0.5), 3),
      latencyP90Ms: round(percentile(latencies, 0.9), 3),
      latencyP99Ms: round(percentile(latencies, 0.99), 3),
      latencyMaxMs: round(Math.max(...latencies), 3),
      bareRelayChunksMeasured: bareLatencies.length,
      bareRelayCorrectStreams: bareResults.filter((entry, index) => entry.text.trim() === expectedText(`bare-${index}`, tokenCount)).length,
      bareRelayLatencyP50Ms: round(percentile(bareLatencies, 0.5), 3),
      bareRelayLatencyP99Ms: round(percentile(bareLatencies, 0.99), 3),
      correctStreams: correct,
      serviceCpuPercent: round(((after.cpuMicros - before.cpuMicros) / 1e6 / seconds) * 100, 1),
      // The machine has two cores; the engine and the measuring client take their share.
      engineCpuPercent: round(((engineAfter.cpuMicros - engineBefore.cpuMicros) / 1e6 / seconds) * 100, 1),
      clientCpuPercent: round(((clientUsage.user + clientUsage.system) / 1e6 / seconds) * 100, 1),
      target: 'p99 <= 5 ms',
    };
    console.error('stream relay', result);
    await Promise.all([client.close(), bareClient.close()]);
    return result;
  } finally {
    await bare.stop();
    await bench.stop();
  }
}

/** 3. 1,000 streaming chats at once: all complete, none lost; the service's peak RSS. */
export async function benchmarkManyStreams(dataDir: string) {
  const streams = 1000;
  const tokenCount = 40;
  const bench = await startBenchService(dataDir, { script: `stream:${tokenCount}:${tokensPerSecond}` });
  try {
    const { client, ids } = await openConversations(bench, streams);
    const before = await bench.service.usage();
    const engineBefore = await bench.llm.usage();
    const clientBefore = process.cpuUsage();
    const started = performance.now();
    const results = await Promise.all(ids.map((id, index) => client.stream(id, `many ${index}`)));
    const seconds = (performance.now() - started) / 1000;
    const after = await bench.service.usage();
    const completed = results.filter((result, index) => result.done && result.text.trim() === expectedText(`many-${index}`, tokenCount)).length;
    // None lost: every conversation holds the message and the whole reply.
    let stored = 0;
    for (let batch = 0; batch < ids.length; batch += 100) {
      const reads = await Promise.all(ids.slice(batch, batch + 100).map((id) => client.json('GET', `/api/v0/conversations/${id}`)));
      reads.forEach((conversation, offset) => {
        const index = batch + offset;
        const contents = conversation.messages.map((message: { content: string }) => message.content);
        if (contents.length === 2 && contents[0] === `many ${index}` && contents[1] === expectedText(`many-${index}`, tokenCount)) stored++;
      });
    }
    const result = {
      streams,
      tokensPerStream: tokenCount,
      tokensPerSecond,
      wallSeconds: round(seconds, 2),
      completed,
      storedIntact: stored,
      errors: results.filter((entry) => entry.error).length,
      peakRssMB: megabytes(after.maxRssBytes),
      rssBeforeMB: megabytes(before.rssBytes),
      serviceCpuSeconds: round((after.cpuMicros - before.cpuMicros) / 1e6, 2),
      target: 'all complete, none lost, peak RSS < 300 MB',
    };
    console.error('many streams', result);
    await client.close();
    return result;
  } finally {
    await bench.stop();
  }
}
