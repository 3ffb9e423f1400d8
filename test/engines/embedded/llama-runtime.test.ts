import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../../src/core/errors.js';
import type { ChatRequest } from '../../../src/core/ports.js';
import { createEmbeddedChatModel } from '../../../src/engines/chat/embedded/embedded-chat.js';
import { createEmbeddedTokenCounter } from '../../../src/engines/chat/embedded/embedded-tokens.js';
import { type FetchProgress, LlamaRuntime, type LlamaRuntimeOptions } from '../../../src/engines/chat/embedded/llama-runtime.js';
import { ModelFileError } from '../../../src/engines/chat/embedded/model-file-error.js';
import { writeTinyModel } from '../../fixtures/tiny-gguf.js';
import { collect } from '../chat-helpers.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const reply = 'Ahoy there, sailor.';
let directory: string;
let knownPath: string;
let endlessPath: string;
const runtimes: LlamaRuntime[] = [];

function runtime(options: Partial<LlamaRuntimeOptions> & Pick<LlamaRuntimeOptions, 'modelFile'>): LlamaRuntime {
  const created = new LlamaRuntime({ modelName: 'tiny', gpu: 'off', threads: 1, parallel: 2, logger: silent, ...options });
  runtimes.push(created);
  return created;
}

const says = (system: string, ...lines: string[]): ChatRequest => ({
  messages: [{ role: 'system', content: system }, ...lines.map((line, index) => ({ role: index % 2 === 0 ? ('user' as const) : ('assistant' as const), content: line }))],
});

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-runtime-'));
  knownPath = (await writeTinyModel(path.join(directory, 'known.gguf'), { reply })).path;
  endlessPath = (await writeTinyModel(path.join(directory, 'endless.gguf'), { reply: 'again and more', endless: true })).path;
});

afterAll(async () => {
  await Promise.all(runtimes.map((each) => each.close()));
  await rm(directory, { recursive: true, force: true });
});

describe('embedded engine: before the model is ready', () => {
  it('refuses a chat at once with MODEL_LOADING and how much is fetched, then answers once loaded', async () => {
    let report: (progress: FetchProgress) => void = () => {};
    let finish: (file: string) => void = () => {};
    const loading = runtime({
      modelFile: (onProgress) => {
        report = onProgress;
        return new Promise((resolve) => (finish = resolve));
      },
    });
    loading.start();
    report({ percent: 42.7 });
    const model = createEmbeddedChatModel(loading, 'tiny');
    const refused = await model.generate(says('You are Ana.', 'hi')).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EngineError);
    expect(refused).toMatchObject({ code: 'MODEL_LOADING', details: { state: 'fetching', percent: 42 } });
    expect((refused as Error).message).toContain('42% of it is fetched');
    expect(loading.status).toEqual({ state: 'fetching', percent: 42.7, detail: undefined });

    finish(knownPath);
    expect(await loading.ready()).toMatchObject({ state: 'ready', parallel: 2, threads: 1 });
    expect((await model.generate(says('You are Ana.', 'hi'))).text).toBe(reply);
  });

  it('answers MODEL_UNAVAILABLE with what to do when the model cannot be had, and never retries alone', async () => {
    const missing = runtime({ modelFile: async () => Promise.reject(new ModelFileError('MODEL_NOT_FOUND', 'LLM_MODEL names /nowhere.gguf, which does not exist.')) });
    expect(await missing.ready()).toMatchObject({ state: 'failed', reason: 'LLM_MODEL names /nowhere.gguf, which does not exist.' });
    const refused = await createEmbeddedChatModel(missing, 'tiny').generate(says('x', 'hi')).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'MODEL_UNAVAILABLE', retryable: false });
    // The operator reads the path (/readyz, the log); a person who chats reads who can fix it.
    expect((refused as Error).message).toContain('LLM_MODEL');
    expect((refused as Error).message).not.toContain('/nowhere.gguf');
    expect((refused as EngineError).upstream).toContain('/nowhere.gguf');
  });

  it('fetches again later when the network failed it, and answers once it succeeds', async () => {
    let calls = 0;
    const offlineFirst = runtime({
      retryMs: 20,
      modelFile: async () => {
        calls += 1;
        if (calls === 1) throw new ModelFileError('MODEL_HOST_UNREACHABLE', 'Could not reach the model host: check the network.');
        return knownPath;
      },
    });
    const first = await offlineFirst.ready();
    expect(first).toMatchObject({ state: 'failed' });
    expect(first.state === 'failed' && first.reason).toContain('trying again in');
    await expect.poll(() => offlineFirst.status.state, { timeout: 60_000 }).toBe('ready');
    expect(calls).toBe(2);
    expect((await createEmbeddedChatModel(offlineFirst, 'tiny').generate(says('x', 'back online?'))).text).toBe(reply);
  });

  it('does not fetch again what needs a change of settings (a model that does not exist)', async () => {
    const wrong = runtime({ retryMs: 20, modelFile: async () => Promise.reject(new ModelFileError('MODEL_NOT_FOUND', 'No such model: set LLM_MODEL.')) });
    const status = await wrong.ready();
    expect(status).toMatchObject({ state: 'failed', reason: 'No such model: set LLM_MODEL.' });
    expect(status.state === 'failed' && status.reason).not.toContain('trying again');
  });

  it('fails clearly on a file that is not a GGUF model', async () => {
    const damaged = path.join(directory, 'damaged.gguf');
    await writeFile(damaged, 'GGUF but nothing after it');
    const broken = runtime({ modelFile: async () => damaged });
    const status = await broken.ready();
    expect(status.state).toBe('failed');
    await expect(createEmbeddedChatModel(broken, 'tiny').generate(says('x', 'hi'))).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' });
  });
});

describe('embedded engine: slots', () => {
  it('queues requests past the slots in arrival order, tells their place, and frees a place when a waiter leaves', async () => {
    const single = runtime({ modelFile: async () => endlessPath, parallel: 1 });
    await single.ready();
    const model = createEmbeddedChatModel(single, 'tiny');
    const running = new AbortController();
    const first = collect(model.stream({ ...says('x', 'first'), maxTokens: 100_000 }, { signal: running.signal })).catch((error: unknown) => error);
    const places: Record<string, number[]> = { second: [], third: [] };
    const leaving = new AbortController();
    const second = collect(model.stream({ ...says('x', 'second'), maxTokens: 3 }, { signal: leaving.signal, onQueued: (ahead) => places.second!.push(ahead) })).catch((error: unknown) => error);
    const third = collect(model.stream({ ...says('x', 'third'), maxTokens: 3 }, { onQueued: (ahead) => places.third!.push(ahead) }));
    await expect.poll(() => places.third!.length).toBe(1);
    expect(places).toEqual({ second: [0], third: [1] });

    leaving.abort(new Error('client left'));
    expect(await second).toMatchObject({ message: 'client left' });
    expect(places.third).toEqual([1, 0]);
    running.abort(new Error('done with it'));
    await first;
    const answered = await third;
    expect(answered.parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' });
  });

  it("gives a conversation's next turn the slot that holds its previous one, and evaluates only what is new", async () => {
    const pair = runtime({ modelFile: async () => knownPath, parallel: 2 });
    await pair.ready();
    const model = createEmbeddedChatModel(pair, 'tiny');
    const { slots } = pair.loaded();
    const holding = (text: string) => [0, 1].find((index) => JSON.stringify(slotAt(index).history).includes(text));
    const borrowed: Array<{ index: number; history: unknown[]; chat: { sequence: { tokenMeter: { usedInputTokens: number } } } }> = [];
    const slotAt = (index: number) => borrowed.find((slot) => slot.index === index)!;
    // Both slots, to look at their state.
    borrowed.push((await slots.acquire()) as never, (await slots.acquire()) as never);
    for (const slot of borrowed) slots.release(slot as never);

    await model.generate(says('You are Ana, from the harbour.', 'Tell me of the harbour.'));
    await model.generate(says('You are Bo, from the mountains.', 'Tell me of the mountains.'));
    const anaSlot = holding('harbour');
    const boSlot = holding('mountains');
    expect(anaSlot).toBeDefined();
    expect(boSlot).not.toBe(anaSlot);

    const before = slotAt(anaSlot!).chat.sequence.tokenMeter.usedInputTokens;
    const next = await model.generate(says('You are Ana, from the harbour.', 'Tell me of the harbour.', reply, 'And the boats?'));
    expect(holding('boats')).toBe(anaSlot);
    const evaluated = slotAt(anaSlot!).chat.sequence.tokenMeter.usedInputTokens - before;
    expect(evaluated).toBeGreaterThan(0);
    expect(evaluated).toBeLessThan(next.usage!.promptTokens! / 2);
  });
});

describe('embedded engine: token counts', () => {
  it("counts text with the model's tokenizer and measures its template exactly: the prompt it reports adds up", async () => {
    const counting = runtime({ modelFile: async () => knownPath, parallel: 1 });
    await counting.ready();
    const counter = createEmbeddedTokenCounter(counting);
    expect(counter.exact).toBe(true);
    const request = says('You are Ana, from the harbour.', 'Tell me of the harbour.', reply, 'And the boats? 海 🚢');
    const texts = request.messages.map((message) => String(message.content));
    const counts = await counter.count(texts);
    const framing = (await counter.promptFraming!())!;
    const result = await createEmbeddedChatModel(counting, 'tiny').generate(request);
    // Each text counted alone may take one token more than inside the template (a word's leading space): never fewer.
    const counted = counts.reduce((sum, count) => sum + count, 0) + texts.length * framing.messageTokens + framing.promptTokens;
    expect(counted).toBeGreaterThanOrEqual(result.usage!.promptTokens!);
    expect(counted).toBeLessThanOrEqual(result.usage!.promptTokens! + texts.length);
    expect(await counter.engineContext!()).toBe(counting.contextTokens);
  });

  it('estimates, never under-counting, until the model is loaded', async () => {
    const waiting = runtime({ modelFile: () => new Promise(() => {}) });
    waiting.start();
    const counter = createEmbeddedTokenCounter(waiting);
    expect(counter.exact).toBe(false);
    expect((await counter.count(['hello there']))[0]).toBeGreaterThan(0);
    expect(await counter.promptFraming!()).toBeUndefined();
  });
});
