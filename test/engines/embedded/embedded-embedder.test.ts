import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedEmbedder, type EmbeddedEmbedder } from '../../../src/engines/chat/embedded/embedded-embedder.js';
import { writeTinyModel } from '../../fixtures/tiny-gguf.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
let directory: string;
let embedder: EmbeddedEmbedder;

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-embedder-'));
  const model = await writeTinyModel(path.join(directory, 'embed.gguf'), { seed: 3, embeddingLength: 64 });
  embedder = createEmbeddedEmbedder({ modelName: 'tiny-embed', modelFile: async () => model.path, gpu: 'off', threads: 1, logger: silent });
});
afterAll(async () => {
  await embedder.close();
  await rm(directory, { recursive: true, force: true });
});

describe('embedded embedder', () => {
  it('refuses until loaded, then gives one vector per text, the same for the same text', async () => {
    await expect(embedder.embed(['too early'])).rejects.toMatchObject({ code: 'MODEL_LOADING', purpose: 'embedding' });
    await embedder.ready();
    const [sea, ships, seaAgain] = await embedder.embed(['the sea at night', 'ships in the harbour', 'the sea at night']);
    expect(sea).toHaveLength(64);
    expect(ships).toHaveLength(64);
    expect(seaAgain).toEqual(sea);
    expect(ships).not.toEqual(sea);
    expect(sea!.every(Number.isFinite)).toBe(true);
  });

  it('fails for good, saying why, when its model cannot be had', async () => {
    const missing = createEmbeddedEmbedder({ modelName: 'gone', modelFile: async () => Promise.reject(new Error('no such model')), gpu: 'off', threads: 1, logger: silent });
    await missing.ready();
    await expect(missing.embed(['x'])).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    await missing.close();
  });
});
