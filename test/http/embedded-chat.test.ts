/**
 * The service as `npm start` runs it with no LLM_BASE_URL: chat answered by llama.cpp in the
 * process, on a tiny model the test writes (no model can be downloaded here).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyModel } from '../fixtures/tiny-gguf.js';
import { type Harness, readEvents, startHarness } from './harness.js';

const reply = 'Welcome aboard, I am Ana.';
let models: string;
let known: string;
let endless: string;

beforeAll(async () => {
  models = await mkdtemp(path.join(os.tmpdir(), 'likeness-models-'));
  known = (await writeTinyModel(path.join(models, 'known.gguf'), { reply, contextLength: 4096 })).path;
  endless = (await writeTinyModel(path.join(models, 'endless.gguf'), { reply: 'and so on', endless: true, contextLength: 4096 })).path;
});
afterAll(async () => {
  await rm(models, { recursive: true, force: true });
});

/** The service on the embedded engine: no chat server anywhere. */
function embedded(model: string, environment: Record<string, string> = {}): Promise<Harness> {
  return startHarness({ environment: { LLM_BASE_URL: '', LLM_MODEL: model, LLM_THREADS: '1', LLM_PARALLEL: '2', LLM_GPU: 'off', LLM_MAX_REPLY_TOKENS: '64', ...environment } });
}

/** Until /readyz says the model is loaded (it loads in the background after the API serves). */
async function whenReady(api: Harness): Promise<void> {
  for (;;) {
    const ready = await api.call('GET', '/readyz', { key: null });
    if (ready.status === 200) return;
    if (ready.body.chatModel?.state === 'failed') throw new Error(`the model failed: ${ready.body.chatModel.reason}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('chat on the embedded engine', () => {
  let api: Harness;
  let user: { id: string; characterId: string; key: string };
  const conversation = async () => (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id as string;

  beforeAll(async () => {
    api = await embedded(known);
    user = await api.account('sailor');
    await whenReady(api);
  });
  afterAll(async () => {
    await api.close();
  });

  it('says in /readyz which engine and model answer', async () => {
    const ready = await api.call('GET', '/readyz', { key: null });
    expect(ready.body).toMatchObject({ status: 'ready', notReady: [], chatModel: { ready: true, engine: 'embedded', model: known } });
  });

  it('answers a chat whole, and stores both messages', async () => {
    const id = await conversation();
    const answer = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Hello!' } });
    expect(answer.body).toEqual({ data: reply, mimeType: 'text/plain', finishReason: 'stop' });
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages.map((message: { content: string }) => message.content)).toEqual(['Hello!', reply]);
  });

  it('streams a chat in spec chunks ending with stop and [DONE], turn after turn', async () => {
    const id = await conversation();
    for (const line of ['Hi there', 'How are you?']) {
      const response = await fetch(`${api.url}/api/v0/conversations/${id}/chat/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ data: line }),
      });
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      const events = await readEvents(response);
      expect(events.at(-1)).toBe('[DONE]');
      const chunks = events.slice(0, -1).map((event) => JSON.parse(event));
      expect(chunks.map((chunk) => chunk.choices[0].delta.content).join('')).toBe(reply);
      expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    }
  });

  it('answers four conversations sent at once on two slots', async () => {
    const ids = await Promise.all([1, 2, 3, 4].map(() => conversation()));
    const answers = await Promise.all(ids.map((id, index) => api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: `I am number ${index}` } })));
    expect(answers.map((answer) => answer.body.data)).toEqual([reply, reply, reply, reply]);
  });

  it('answers an image MODEL_CANNOT_SEE_IMAGES and keeps it; later chats go on without it', async () => {
    const id = await conversation();
    const image = new PNG({ width: 4, height: 4 });
    image.data.fill(200);
    const bytes = PNG.sync.write(image);
    const refused = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: `data:image/png;base64,${bytes.toString('base64')}`, mimeType: 'image/png' } });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('MODEL_CANNOT_SEE_IMAGES');
    const next = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Did you see it?' } });
    expect(next.body.data).toBe(reply);
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages.map((message: { mimetype: string }) => message.mimetype)).toEqual(['image/png', 'text/plain', 'text/plain']);
  });

  it("refuses a message longer than the model's context before storing it, counting with its tokenizer", async () => {
    const id = await conversation();
    // 2,400 ASCII characters: about 800 tokens by the estimate (which would let it through a
    // 2,048-token slot), but the tiny model has few word pieces and spends a token a letter.
    const refused = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'harbour '.repeat(300).trim() } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    expect(refused.body.error.message).toContain("too long for this character's context");
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages).toEqual([]);
  });
});

describe('the embedded engine at the reply limit', () => {
  let api: Harness;
  afterAll(async () => {
    await api?.close();
  });

  it('ends a reply at LLM_MAX_REPLY_TOKENS with finish_reason length', async () => {
    api = await embedded(endless, { LLM_MAX_REPLY_TOKENS: '16' });
    const user = await api.account('talker');
    await whenReady(api);
    const id = (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id;
    const answer = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Go on' } });
    expect(answer.body.finishReason).toBe('length');
    expect(answer.body.data.split(' ').length).toBeLessThanOrEqual(16);
  });
});

describe('the embedded engine without its model', () => {
  let api: Harness;
  afterAll(async () => {
    await api?.close();
  });

  it('serves everything else, answers chats 503 MODEL_UNAVAILABLE at once, and /readyz names the chat model and why', async () => {
    api = await embedded(path.join(models, 'missing.gguf'));
    const user = await api.account('waiting');
    const id = (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id;
    await expect.poll(async () => (await api.call('GET', '/readyz', { key: null })).body.chatModel?.state, { timeout: 60_000 }).toBe('failed');
    const ready = await api.call('GET', '/readyz', { key: null });
    expect(ready.status).toBe(503);
    expect(ready.body.notReady).toEqual(['chat_model']);
    expect(ready.body.chatModel.reason).toContain('missing.gguf');

    const refused = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Anyone there?' } });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('MODEL_UNAVAILABLE');
    // Who can fix it, and where to read why; the file's path is for the operator only.
    expect(refused.body.error.message).toContain('LLM_MODEL');
    expect(refused.body.error.message).not.toContain(models);
  });
});

describe('a process that does not chat', () => {
  let api: Harness;
  afterAll(async () => {
    await api?.close();
  });

  it('loads no model (ROLES=worker): /readyz is ready without one', async () => {
    api = await embedded(path.join(models, 'never-loaded.gguf'), { ROLES: 'worker' });
    const ready = await api.call('GET', '/readyz', { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body.chatModel).toBeUndefined();
  });
});

describe('the rolling summary on the embedded engine', () => {
  let api: Harness;
  afterAll(async () => {
    await api?.close();
  });

  it('writes the summary of what fell out of a small context with the model itself', async () => {
    api = await embedded(known, { LLM_CONTEXT_TOKENS: '512', LLM_SUMMARY_MIN_MESSAGES: '2', LLM_SUMMARY_MAX_TOKENS: '64' });
    const user = await api.account('longtalker');
    await whenReady(api);
    const id = (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id;
    let summary: string | null = null;
    for (let turn = 0; turn < 40 && summary === null; turn++) {
      const answer = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: `This is line ${turn} of a long talk about boats.` } });
      expect(answer.body.data).toBe(reply);
      summary = (await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key })).body.summary;
    }
    // The summary is written in the background after a reply; wait for it if the last turn started it.
    await expect.poll(async () => (await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key })).body.summary, { timeout: 60_000 }).toBe(reply);
  });
});
