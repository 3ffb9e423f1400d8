/**
 * Benchmark 11 (issue 20): the embedded chat engine through the whole service, side by side
 * with node-llama-cpp called directly on the same model, threads and parallelism.
 *
 * No model can be downloaded here, so the model is written by the test fixture: a llama
 * architecture with the shape of a small real model's layers (random-size F32 matrices, the
 * blocks zeroed so the answer is known and never ends), which costs real arithmetic per token.
 * Its absolute tokens/s are not a real model's (README: "On paper"); what it measures is our
 * share: the service against the library, the batching gain, and the event loop.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { getLlama, LlamaChat, resolveChatWrapper, type ChatHistoryItem } from 'node-llama-cpp';
import { availableCores } from '../src/engines/chat/embedded/machine.js';
import { writeTinyModel } from '../test/fixtures/tiny-gguf.js';
import { ApiClient } from './api-client.js';
import { adminKey } from './setup.js';
import { startServiceProcess } from './processes.js';
import { percentile, round } from './stats.js';

/** Replies generated together, and the tokens of each. */
const parallel = 8;
const replyTokens = Number(process.env.BENCH_REPLY_TOKENS ?? 96);

export interface GenerationFigures {
  conversations: number;
  /** Time from the request to the first token, per conversation. */
  firstTokenMs: { p50: number; max: number };
  /** Tokens per second of each conversation, from its first token to its last. */
  perConversationTokensPerSecond: number;
  /** All tokens of all conversations over the wall time from the first request to the last token. */
  aggregateTokensPerSecond: number;
}

export async function benchmarkEmbedded(scratch: string): Promise<unknown> {
  await mkdir(scratch, { recursive: true });
  const threads = availableCores();
  const model = await writeTinyModel(path.join(scratch, 'bench-model.gguf'), {
    reply: 'waves rolled under a grey sky while the old ship groaned',
    endless: true,
    embeddingLength: 768,
    blockCount: 12,
    headCount: 12,
    headCountKeyValue: 4,
    feedForwardLength: 2048,
    contextLength: 32_768,
  });
  const contextTokens = 1024;
  console.error(`embedded: model written (${model.bytes} bytes); node-llama-cpp directly…`);
  const direct = await directFigures(model.path, threads, contextTokens);
  console.error('embedded: the service…');
  const service = await serviceFigures(path.join(scratch, 'service'), model.path, threads, contextTokens);
  const ratio = (serviceValue: number, directValue: number) => round(serviceValue / directValue, 3);
  return {
    model: { bytes: model.bytes, layers: 12, embedding: 768, threads, parallel, replyTokens, contextTokens },
    direct,
    service: service.figures,
    eventLoop: service.eventLoop,
    ratios: {
      aggregateAt8: ratio(service.figures.eight.aggregateTokensPerSecond, direct.eight.aggregateTokensPerSecond),
      aggregateAt1: ratio(service.figures.one.aggregateTokensPerSecond, direct.one.aggregateTokensPerSecond),
      batchingGainService: round(service.figures.eight.aggregateTokensPerSecond / service.figures.one.aggregateTokensPerSecond, 2),
      batchingGainDirect: round(direct.eight.aggregateTokensPerSecond / direct.one.aggregateTokensPerSecond, 2),
    },
  };
}

/** node-llama-cpp alone: one context of `parallel` sequences, a LlamaChat each, as the service sets them up. */
async function directFigures(modelPath: string, threads: number, contextTokens: number): Promise<{ one: GenerationFigures; eight: GenerationFigures }> {
  const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, progressLogs: false, maxThreads: threads });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  const context = await model.createContext({ sequences: parallel, contextSize: contextTokens, threads });
  const chatWrapper = resolveChatWrapper(model);
  const chats = Array.from({ length: parallel }, () => new LlamaChat({ contextSequence: context.getSequence(), chatWrapper }));
  // Each conversation's history as the service keeps it: its system prompt (the core's, for an
  // account's own character named sailorN), then every turn so far, the reply as text.
  const histories: ChatHistoryItem[][] = chats.map((_, index) => [{ type: 'system', text: `You are sailor${index}. Stay in character and answer as sailor${index} only.` }]);
  const run = async (count: number, round: number): Promise<GenerationFigures> => {
    const began = performance.now();
    const timings = await Promise.all(
      chats.slice(0, count).map(async (chat, index) => {
        const history = histories[index]!;
        history.push({ type: 'user', text: turnText(round, index) });
        let first = 0;
        const answer = await chat.generateResponse([...history, { type: 'model', response: [] }], {
          maxTokens: replyTokens,
          temperature: 0.8,
          onTextChunk: () => {
            first ||= performance.now();
          },
        });
        history.push({ type: 'model', response: [answer.response.trim()] });
        return { first, last: performance.now() };
      }),
    );
    return figures(timings, began, count);
  };
  await run(1, 0); // warm-up
  const one = await run(1, 1);
  const eight = await run(parallel, 2);
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  return { one, eight };
}

/** The service as `npm start` runs it, on the same model, threads and parallelism, through /chat/stream. */
async function serviceFigures(dataDir: string, modelPath: string, threads: number, contextTokens: number) {
  await mkdir(dataDir, { recursive: true });
  const service = await startServiceProcess({
    PORT: '0',
    DATA_DIR: dataDir,
    ADMIN_API_KEY: adminKey,
    LLM_MODEL: modelPath,
    LLM_THREADS: String(threads),
    LLM_PARALLEL: String(parallel),
    LLM_GPU: 'off',
    LLM_CONTEXT_TOKENS: String(contextTokens),
    LLM_MAX_REPLY_TOKENS: String(replyTokens),
    API_RATE_LIMIT_PER_MINUTE: '1000000',
    METRICS_TOKEN: 'bench-metrics-token-0123456789',
    // The start-up line the benchmark waits for is at info.
    LOG_LEVEL: 'info',
  });
  const admin = new ApiClient(service.url, adminKey);
  try {
    while ((await fetch(`${service.url}/readyz`)).status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    const clients = await Promise.all(
      Array.from({ length: parallel }, async (_, index) => {
        const created = await admin.json('POST', '/api/v0/accounts', { username: `sailor${index}` });
        const client = new ApiClient(service.url, created.apiKey);
        const conversation = await client.json('POST', '/api/v0/conversations', { characterId: created.account.characterId });
        return { client, conversationId: conversation.id as string };
      }),
    );
    const run = async (count: number, round: number): Promise<GenerationFigures> => {
      const began = performance.now();
      const timings = await Promise.all(
        clients.slice(0, count).map(async ({ client, conversationId }, index) => {
          let first = 0;
          const answer = await client.stream(conversationId, turnText(round, index), () => {
            first ||= performance.now();
          });
          if (!answer.done) throw new Error(`a stream did not end: ${answer.error ?? 'no [DONE]'}`);
          return { first, last: performance.now() };
        }),
      );
      return figures(timings, began, count);
    };
    await run(1, 0); // warm-up
    const one = await run(1, 1);
    // The service's event loop while eight replies generate: its own histogram (read and reset
    // by each scrape), and how long a plain API read takes meanwhile, probed every 20 ms.
    await eventLoopP99(service.url);
    const probes: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const sent = performance.now();
        await fetch(`${service.url}/healthz`).then((response) => response.text());
        probes.push(performance.now() - sent);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const eight = await run(parallel, 2);
    probing = false;
    await probe;
    const generatingP99Ms = await eventLoopP99(service.url);
    // The same two figures with nothing generating, for the floor of this machine.
    const idleProbes: number[] = [];
    for (let index = 0; index < 50; index += 1) {
      const sent = performance.now();
      await fetch(`${service.url}/healthz`).then((response) => response.text());
      idleProbes.push(performance.now() - sent);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const idleP99Ms = await eventLoopP99(service.url);
    return {
      figures: { one, eight },
      eventLoop: {
        serviceDelayP99MsWhileGenerating: generatingP99Ms,
        serviceDelayP99MsIdle: idleP99Ms,
        healthzP99MsWhileGenerating: round(percentile(probes, 0.99), 1),
        healthzP50MsWhileGenerating: round(percentile(probes, 0.5), 1),
        healthzP99MsIdle: round(percentile(idleProbes, 0.99), 1),
      },
    };
  } finally {
    await admin.close();
    await service.stop();
  }
}

/** What conversation `index` says in `round`, the same to the service and to the library. */
function turnText(round: number, index: number): string {
  return `Round ${round}, tell story number ${index}.`;
}

/** The service's event-loop delay p99 since the last scrape, in ms (prom-client resets it at each). */
async function eventLoopP99(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer bench-metrics-token-0123456789' } })).text();
  const line = text.split('\n').find((each) => each.startsWith('likeness_nodejs_eventloop_lag_p99_seconds'));
  return round(Number(line?.split(' ').at(-1)) * 1000, 2);
}

function figures(timings: Array<{ first: number; last: number }>, began: number, count: number): GenerationFigures {
  const firsts = timings.map((timing) => timing.first - began);
  const perConversation = timings.map((timing) => (replyTokens - 1) / ((timing.last - timing.first) / 1000));
  const end = Math.max(...timings.map((timing) => timing.last));
  return {
    conversations: count,
    firstTokenMs: { p50: round(percentile(firsts, 0.5), 1), max: round(Math.max(...firsts), 1) },
    perConversationTokensPerSecond: round(percentile(perConversation, 0.5), 1),
    aggregateTokensPerSecond: round((count * replyTokens) / ((end - began) / 1000), 1),
  };
}
