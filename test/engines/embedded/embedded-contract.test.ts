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
let answering: EmbeddedChatModel;
let endless: EmbeddedChatModel;

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
  [answering, endless] = await Promise.all([loaded(known.path, 512), loaded(looping.path)]);
});

afterAll(async () => {
  await Promise.all([answering?.close(), endless?.close()]);
  await rm(directory, { recursive: true, force: true });
});

chatModelContract('embedded llama.cpp (tiny model)', {
  answering: async () => ({ model: answering, reply }),
  endless: async () => endless,
  // 512 tokens a slot: a prompt of a few thousand words cannot fit.
  tooLong: async () => ({ model: answering, request: { messages: [{ role: 'user', content: 'words '.repeat(2000) }] } }),
  textOnly: async () => answering,
});
