/**
 * Replies generated together on one context, each on its own sequence, must each be exactly
 * what the scripted model says: no token of one reply may land in another (issue 29, item 1).
 * Requests arrive staggered, so a new prompt is evaluated in the same batch as other replies'
 * next tokens: the case where llama.cpp reorders a batch's outputs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/core/ports.js';
import { createEmbeddedChatModel } from '../../../src/engines/chat/embedded/embedded-chat.js';
import { LlamaRuntime } from '../../../src/engines/chat/embedded/llama-runtime.js';
import { writeTinyModel } from '../../fixtures/tiny-gguf.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const reply = 'gull9 tide9 reef9 shore9 kelp9 wave9 foam9 sand9 cove9 mast9 sail9 keel9 helm9 buoy9 dock9 pier9';
let directory: string;
let runtime: LlamaRuntime;

/** mulberry32, so a failing order can be run again. */
function randomSource(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d_2b_79_f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-parallel-'));
  // A vocabulary of a real model's size: the logits llama.cpp reorders are one row of it per
  // reply, and with a few hundred tokens the reorder is over too fast for two samplings to meet.
  const vocabulary = ['Question', 'tell', 'me', 'of', 'the', 'sea', 'You', 'are', 'sailor', ...Array.from({ length: 30_000 }, (_, index) => `x${index.toString(36)}`)];
  const model = await writeTinyModel(path.join(directory, 'scripted.gguf'), { reply, contextLength: 8192, vocabulary });
  runtime = new LlamaRuntime({ modelName: 'scripted', modelFile: async () => model.path, gpu: 'off', threads: 1, parallel: 8, contextTokens: 1024, logger: silent });
  await runtime.ready();
});

afterAll(async () => {
  await runtime.close();
  await rm(directory, { recursive: true, force: true });
});

describe('embedded engine: replies generated together', () => {
  it('gives every one of hundreds of staggered parallel replies exactly its own words', async () => {
    const model = createEmbeddedChatModel(runtime, 'scripted');
    const random = randomSource(29);
    const total = 240;
    let started = 0;
    const wrong: string[] = [];
    // Eight people, one a slot, each waits 1–40 ms and asks the next turn of their conversation,
    // so a turn's new tokens are evaluated beside the others' replies. Every fifth turn starts
    // the conversation afresh; every other turn is greedy, the rest use the service's sampling.
    await Promise.all(
      Array.from({ length: 8 }, async (_, person) => {
        let history: ChatMessage[] = [];
        while (started < total) {
          const number = started++;
          await new Promise((resolve) => setTimeout(resolve, 1 + Math.floor(random() * 40)));
          if (history.length >= 10) history = [];
          history.push({ role: 'user', content: `Question ${number}: tell me of the sea.` });
          const answer = await model.generate({
            messages: [{ role: 'system', content: `You are sailor ${person}.` }, ...history],
            ...(number % 2 === 0 ? {} : { temperature: 0 }),
          });
          history.push({ role: 'assistant', content: answer.text });
          if (answer.text !== reply) wrong.push(`#${number}: ${answer.text}`);
        }
      }),
    );
    expect(wrong).toEqual([]);
  });
});
