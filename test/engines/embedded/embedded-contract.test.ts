import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createEmbeddedChatModel, type EmbeddedChatModel } from '../../../src/engines/chat/embedded/embedded-chat.js';
import { LlamaRuntime } from '../../../src/engines/chat/embedded/llama-runtime.js';
import { writeTinyModel } from '../../fixtures/tiny-gguf.js';
import { chatModelContract } from '../chat-model-contract.js';

const reply = 'Fair winds to you, friend.';
const silent = { debug() {}, info() {}, warn() {}, error() {} };
let directory: string;
let loopingPath: string;
let answering: EmbeddedChatModel;
let endless: EmbeddedChatModel;
let structured: EmbeddedChatModel;

/**
 * Under a grammar the tiny model still says its words where the grammar lets it (inside a
 * string) and has no preference anywhere else: there the sampler picks among what the grammar
 * allows at random (an empty list, a second fact, spaces). So the schema asks for exactly one
 * fact, and the reply's last word carries the quote that closes it (`today."` is one token).
 * Unasked, the model says the same words, which are not JSON.
 */
const factsReply = 'The sea is calm today."';
const facts = {
  type: 'object',
  properties: { facts: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 1 } },
  required: ['facts'],
  additionalProperties: false,
};

/** One thread: tests share two cores with another test file. */
async function loaded(file: string, contextTokens?: number): Promise<EmbeddedChatModel> {
  const runtime = new LlamaRuntime({ modelName: path.basename(file), modelFile: async () => file, gpu: 'off', threads: 1, parallel: 2, contextTokens, logger: silent });
  await runtime.ready();
  return createEmbeddedChatModel(runtime, path.basename(file));
}

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-embedded-'));
  const known = await writeTinyModel(path.join(directory, 'known.gguf'), { reply, contextLength: 2048 });
  const looping = await writeTinyModel(path.join(directory, 'endless.gguf'), { reply: 'on and ever', endless: true, contextLength: 2048 });
  const quoting = await writeTinyModel(path.join(directory, 'facts.gguf'), { reply: factsReply, contextLength: 2048 });
  loopingPath = looping.path;
  [answering, endless, structured] = await Promise.all([loaded(known.path, 512), loaded(looping.path), loaded(quoting.path, 512)]);
});

afterAll(async () => {
  await Promise.all([answering?.close(), endless?.close(), structured?.close()]);
  await rm(directory, { recursive: true, force: true });
});

chatModelContract('embedded llama.cpp (tiny model)', {
  answering: async () => ({ model: answering, reply }),
  endless: async () => endless,
  // 512 tokens a slot: a prompt of a few thousand words cannot fit.
  tooLong: async () => ({ model: answering, request: { messages: [{ role: 'user', content: 'words '.repeat(2000) }] } }),
  textOnly: async () => answering,
  structured: async () => ({ model: structured, schema: facts, expected: { facts: ['The sea is calm today.'] } }),
  // No connection to cut in process: the engine's own failure mid-reply is it going away.
  midStreamFailures: [
    {
      name: 'the engine closes under the reply',
      async start() {
        const runtime = new LlamaRuntime({ modelName: 'closing', modelFile: async () => loopingPath, gpu: 'off', threads: 1, parallel: 1, logger: silent });
        await runtime.ready();
        return { model: createEmbeddedChatModel(runtime, 'closing'), afterTwoPieces: () => void runtime.close() };
      },
    },
  ],
});
