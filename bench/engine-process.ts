/**
 * The fake chat engine in its own process for benchmarks, so its timers and writes do not
 * share a core with the client that measures. `BENCH_SCRIPT` picks the reply:
 * `stream:<tokens>:<tokensPerSecond>` answers `stream <n>` with tokens unique to that stream;
 * `reply:<text>` answers every message with the same text. With `BENCH_RECORD=1` it keeps
 * the wall-clock time (ms, `performance.timeOrigin + performance.now()`) of each token write
 * and hands them over on request.
 */
import type { FakeChatScript, FakeRequestBody } from '../test/fakes/fake-openai.js';
import { startFakeOpenAI } from '../test/fakes/fake-openai.js';

const [kind, ...rest] = (process.env.BENCH_SCRIPT ?? 'reply:Hello.').split(':');
const script =
  kind === 'stream'
    ? (body: FakeRequestBody): FakeChatScript => {
        const [tokenCount, tokensPerSecond] = rest.map(Number);
        const last = body.messages?.at(-1)?.content;
        const name = typeof last === 'string' ? last.replace(/\s+/g, '-') : 'unknown';
        return { tokens: Array.from({ length: tokenCount ?? 10 }, (_, index) => `${name}:${index} `), tokensPerSecond };
      }
    : { reply: rest.join(':') };
const writtenAt: Array<[string, number]> = [];
const engine = await startFakeOpenAI({
  script,
  recordRequests: false,
  ...(process.env.BENCH_RECORD
    ? {
        onChunkWritten: (event) => {
          if (event.kind === 'token') writtenAt.push([event.text, performance.timeOrigin + event.writtenAt]);
        },
      }
    : {}),
});
process.send?.({ type: 'ready', url: engine.baseURL });
process.on('message', (message: { type: string }) => {
  if (message.type === 'written') process.send?.({ type: 'written', writtenAt });
  if (message.type === 'usage') {
    const usage = process.resourceUsage();
    process.send?.({ type: 'usage', maxRssBytes: usage.maxRSS * 1024, rssBytes: process.memoryUsage().rss, cpuMicros: usage.userCPUTime + usage.systemCPUTime });
  }
  if (message.type === 'stop') void engine.close().then(() => process.exit(0));
});
