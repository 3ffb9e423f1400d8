import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import { createOpenAICompatibleEmbedder, type OpenAICompatibleEmbedder } from '../../src/engines/chat/openai-embeddings.js';
import { fakeEmbedding, startFakeOpenAI, type FakeOpenAI } from '../fakes/fake-openai.js';

const cosine = (left: number[], right: number[]): number => left.reduce((total, value, index) => total + value * (right[index] ?? 0), 0);

describe('OpenAI-compatible embedder', () => {
  let fake: FakeOpenAI;
  let embedder: OpenAICompatibleEmbedder;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    embedder = createOpenAICompatibleEmbedder({ baseURL: fake.baseURL, apiKey: 'key', model: 'fake-embedding', bodyTimeoutMs: 200 });
  });
  afterEach(() => {
    fake.setScript({});
    fake.requests.length = 0;
  });
  afterAll(async () => {
    await embedder.close();
    await fake.close();
  });

  it('embeds a batch in input order, and similar texts rank close', async () => {
    const texts = ['the cat sat on the mat', 'a cat sat on a mat', 'quarterly tax returns are due'];
    const vectors = await embedder.embed(texts);

    expect(vectors).toEqual(texts.map((text) => fakeEmbedding(text)));
    const [cat, similarCat, taxes] = vectors as [number[], number[], number[]];
    expect(cosine(cat, similarCat)).toBeGreaterThan(cosine(cat, taxes) + 0.3);
    expect(fake.requests[0]?.body).toEqual({ model: 'fake-embedding', input: texts });
    expect(fake.requests[0]?.path).toBe('/v1/embeddings');
    expect(fake.requests[0]?.headers.authorization).toBe('Bearer key');
  });

  it('puts vectors back in input order when the server answers out of order', async () => {
    fake.setScript({ reverseEmbeddings: true });
    const vectors = await embedder.embed(['first text', 'second text', 'third text']);
    expect(vectors).toEqual([fakeEmbedding('first text'), fakeEmbedding('second text'), fakeEmbedding('third text')]);
  });

  it('sends nothing for an empty batch', async () => {
    expect(await embedder.embed([])).toEqual([]);
    expect(fake.requests).toHaveLength(0);
  });

  it('keeps the upstream status and message of a failure', async () => {
    fake.setScript({ failure: { kind: 'http', status: 501, message: 'This server does not support embeddings. Start it with `--embeddings`', type: 'not_supported_error' } });
    const error = await embedder.embed(['x']).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({
      status: 501,
      provider: 'openai-compatible',
      upstream: 'Embedding engine answered 501: This server does not support embeddings. Start it with `--embeddings`',
    });
  });

  it('times out when the answer stalls', async () => {
    fake.setScript({ failure: { kind: 'hang' } });
    const stalled = createOpenAICompatibleEmbedder({ baseURL: fake.baseURL, model: 'm', headersTimeoutMs: 200 });
    try {
      await expect(stalled.embed(['x'])).rejects.toMatchObject({ code: 'ENGINE_TIMEOUT' });
    } finally {
      await stalled.close();
    }
  });
});
