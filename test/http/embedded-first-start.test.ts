/**
 * The first start with the default kind of LLM_MODEL (an hf: URI): the service serves at once,
 * fetches the model into DATA_DIR/models with progress in /readyz and in chat refusals, loads
 * it, and answers; offline, it says so at once and keeps serving everything else.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tinyModel } from '../fixtures/tiny-gguf.js';
import { type FakeModelHost, startFakeModelHost } from '../fakes/fake-model-host.js';
import { type Harness, startHarness } from './harness.js';
import { freePort } from '../support/ports.js';

const reply = 'Fresh from the harbour, hello.';
const file = 'owner/tiny-GGUF/tiny-Q4_K_M.gguf';

describe('the first start of the embedded engine', () => {
  let host: FakeModelHost | undefined;
  let api: Harness | undefined;
  afterAll(async () => {
    await api?.close();
    await host?.close();
  });

  it('fetches the model with progress, refusing chats with MODEL_LOADING meanwhile, then answers', async () => {
    host = await startFakeModelHost({ files: { [file]: Buffer.from(tinyModel({ reply, contextLength: 4096 })) }, redirect: true });
    let resume: () => void = () => {};
    host.script.push({ kind: 'pause', afterBytes: 64 * 1024, until: new Promise<void>((resolve) => (resume = resolve)) });
    api = await startHarness({
      environment: { LLM_BASE_URL: '', LLM_MODEL: `hf:${file}`, HF_ENDPOINT: host.url, LLM_THREADS: '1', LLM_PARALLEL: '1', LLM_GPU: 'off', LLM_MAX_REPLY_TOKENS: '64' },
    });
    const user = await api.account('early');
    const conversation = (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id;
    // Paused a part of the way in: /readyz and a chat both say how far.
    await expect.poll(async () => (await api!.call('GET', '/readyz', { key: null })).body.chatModel?.percent ?? 0).toBeGreaterThan(0);
    const waiting = await api.call('GET', '/readyz', { key: null });
    expect(waiting.status).toBe(503);
    expect(waiting.body).toMatchObject({ notReady: ['chat_model'], chatModel: { ready: false, engine: 'embedded', state: 'fetching' } });
    const early = await api.call('POST', `/api/v0/conversations/${conversation}/chat`, { key: user.key, body: { data: 'Are you there?' } });
    expect(early.status).toBe(503);
    expect(early.body.error.code).toBe('MODEL_LOADING');
    expect(early.body.error.details.percent).toBe(waiting.body.chatModel.percent);
    expect(early.body.error.message).toMatch(/\d+% of it is fetched/);
    // A long message is not measured against a guess of the slot meanwhile: the answer is the same.
    const long = await api.call('POST', `/api/v0/conversations/${conversation}/chat`, { key: user.key, body: { data: 'a long story about the sea '.repeat(500) } });
    expect(long.status).toBe(503);
    expect(long.body.error.code).toBe('MODEL_LOADING');

    resume();
    await expect.poll(async () => (await api!.call('GET', '/readyz', { key: null })).status, { timeout: 60_000 }).toBe(200);
    const answer = await api.call('POST', `/api/v0/conversations/${conversation}/chat`, { key: user.key, body: { data: 'Are you there now?' } });
    expect(answer.body.data).toBe(reply);
    expect(await readdir(path.join(api.dataDir, 'models', 'owner', 'tiny-GGUF'))).toContain('tiny-Q4_K_M.gguf');
  });
});

describe('the first start offline', () => {
  let api: Harness | undefined;
  afterAll(async () => {
    await api?.close();
  });

  it('fails fast and clearly, and serves everything else', async () => {
    const closed = await freePort();
    api = await startHarness({ environment: { LLM_BASE_URL: '', LLM_MODEL: `hf:${file}`, HF_ENDPOINT: `http://127.0.0.1:${closed}`, LLM_GPU: 'off' } });
    const user = await api.account('offline');
    await expect.poll(async () => (await api!.call('GET', '/readyz', { key: null })).body.chatModel?.state, { timeout: 60_000 }).toBe('failed');
    const ready = await api.call('GET', '/readyz', { key: null });
    expect(ready.status).toBe(503);
    expect(ready.body.chatModel.reason).toMatch(/reach|unreachable|connect/i);
    const conversation = await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } });
    expect(conversation.status).toBe(201);
    const refused = await api.call('POST', `/api/v0/conversations/${conversation.body.id}/chat`, { key: user.key, body: { data: 'hello?' } });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('MODEL_UNAVAILABLE');
  });
});
