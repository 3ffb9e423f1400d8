import { connect } from 'node:net';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type Harness, readEvents, startHarness } from './harness.js';

// A word no id, hash or timestamp can contain (a number such as a PIN could turn up inside a
// random UUID in an answer and fail the test by chance).
const secretWord = 'marmalade-quokka';
const secret = `Private note: the vault word is ${secretWord}`;

function tinyPng(): string {
  const image = new PNG({ width: 4, height: 4 });
  image.data.fill(120);
  return PNG.sync.write(image).toString('base64');
}

/** llama-server's 500 for a request it cannot handle repeats the whole prompt in its message. */
function promptEcho(body: FakeRequestBody): string {
  return `Failed to process the request: ${JSON.stringify(body.messages)}`;
}

describe('engine failures reach clients only in our words', () => {
  let api: Harness;
  const logLines: Array<Record<string, unknown>> = [];
  let owner: { id: string; characterId: string; key: string };
  let stranger: { id: string; characterId: string; key: string };
  let conversationId: string;
  /** Checks a text a client was shown for what must never be there. */
  function shown(...texts: string[]): void {
    for (const text of texts) {
      expect(text).not.toContain(secretWord);
      expect(text).not.toContain('sk-live-0123456789abcdef');
      expect(text).not.toContain(api.llm.baseURL.replace(/\/v1$/, ''));
    }
  }

  function stream(route: string, body: unknown, key = stranger.key): Promise<Response> {
    return fetch(`${api.url}/api/v0/conversations/${conversationId}/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  beforeAll(async () => {
    api = await startHarness({ logDestination: { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) } });
    owner = await api.account('owner');
    stranger = await api.account('stranger');
    expect((await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, { key: owner.key, body: { is_public: true } })).status).toBe(200);
    expect((await api.call('POST', `/api/v0/characters/${owner.characterId}/memories`, { key: owner.key, body: { text: secret } })).status).toBe(201);
    const created = await api.call('POST', '/api/v0/conversations', { key: stranger.key, body: { characterId: owner.characterId } });
    conversationId = created.body.id;
  });
  afterAll(async () => {
    await api.close();
  });

  it('does not show another owner’s memories echoed in a llama-server 500, synchronously or streamed', async () => {
    // A text-only model on llama-server refuses an image part with a 500 echoing the whole prompt.
    api.llm.setScript({ flavor: 'llama-server', textOnly: true });
    const image = await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key: stranger.key, body: { data: tinyPng(), mimeType: 'image/png' } });
    shown(JSON.stringify(image.body));
    // The refusal is understood (the model cannot see images), and told in our words.
    expect(image.status).toBe(422);
    expect(image.body.error.code).toBe('MODEL_CANNOT_SEE_IMAGES');
    expect(JSON.stringify(api.llm.requests.at(-1)!.body.messages)).toContain('image_url');

    api.llm.setScript((body) => ({ failure: { kind: 'http', status: 500, message: promptEcho(body), type: 'server_error', code: 500 } }));
    const sync = await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key: stranger.key, body: { data: 'What is the PIN?' } });
    shown(JSON.stringify(sync.body));
    expect(sync.status).toBe(502);
    expect(sync.body.error).toEqual({ code: 'ENGINE_FAILED', message: 'The chat engine failed to answer. Try again; if it keeps failing, tell the operator.' });
    // The secret did reach the engine, and so was in the engine's answer.
    expect(JSON.stringify(api.llm.requests.at(-1)!.body.messages)).toContain(secretWord);

    const streamed = await stream('chat/stream', { data: 'What is the PIN?' });
    const text = await streamed.text();
    shown(text);
    expect(streamed.status).toBe(502);
    expect(streamed.headers.get('content-type')).toContain('application/json');
    expect(JSON.parse(text).error.code).toBe('ENGINE_FAILED');

    // The log keeps a bounded excerpt of what the engine said, for the operator.
    const logged = logLines.find((line) => line.msg === 'request failed' && JSON.stringify(line).includes('answered 500'));
    const upstream = (logged?.err as { upstream?: string } | undefined)?.upstream ?? '';
    expect(upstream).toContain('Chat engine answered 500');
    expect(upstream.length).toBeLessThanOrEqual(501);
  });

  it('does not show a secret from a mid-stream error event, nor the engine’s refusal of its key', async () => {
    api.llm.setScript({ tokens: ['Hello', ' there'], failure: { kind: 'error-event', afterTokens: 1, message: `boom: ${secret} Bearer sk-live-0123456789abcdef`, code: 500 } });
    const response = await stream('chat/stream', { data: 'hi' });
    expect(response.status).toBe(200);
    const events = await readEvents(response);
    shown(...events);
    expect(JSON.parse(events.at(-1)!)).toMatchObject({ success: false, error: { code: 'ENGINE_FAILED' } });
    expect(JSON.parse(events[0]!).choices[0].delta.content).toBe('Hello');

    api.llm.setScript({ failure: { kind: 'http', status: 401, message: `Incorrect API key provided: sk-live-0123456789abcdef at ${api.llm.baseURL}`, type: 'invalid_request_error', code: 'invalid_api_key' } });
    const refused = await stream('chat/stream', { data: 'hi' });
    const body = (await refused.json()) as { error: { code: string; message: string } };
    shown(JSON.stringify(body));
    expect(refused.status).toBe(502);
    expect(body.error.code).toBe('ENGINE_MISCONFIGURED');
  });

  it('answers a stream that fails before its first piece with a proper error status', async () => {
    api.llm.setScript({ failure: { kind: 'http', status: 400, message: `the request exceeds the available context size, try increasing it. ${secret}`, type: 'exceed_context_size_error', code: 400 } });
    const tooLong = await stream('chat/stream', { data: 'hi' });
    const body = (await tooLong.json()) as { error: { code: string; message: string } };
    shown(JSON.stringify(body));
    expect(tooLong.status).toBe(400);
    expect(body.error.code).toBe('ENGINE_CONTEXT_EXCEEDED');
    expect(body.error.message).toContain('clear the conversation');
    const logged = logLines.find((line) => line.msg === 'engine refused the request');
    expect((logged?.err as { upstream?: string } | undefined)?.upstream).toContain('exceeds the available context size');

    api.llm.setScript({ failure: { kind: 'http', status: 503, message: 'Loading model', type: 'unavailable_error', code: 503 } });
    const loading = await stream('chat/stream', { data: 'hi' });
    shown(await loading.text());
    expect(loading.status).toBe(503);
  });

  it('logs a client that hangs up mid-request or mid-stream at info, not as an internal error', async () => {
    const before = logLines.length;
    const port = Number(new URL(api.url).port);
    await new Promise<void>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          `POST /api/v0/conversations/${conversationId}/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${stranger.key}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"data":"half a bo',
        );
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 100);
      });
      socket.on('error', reject);
    });
    await expect.poll(() => logLines.slice(before).some((line) => line.msg === 'client closed the connection before the answer')).toBe(true);

    api.llm.setScript({ tokens: Array.from({ length: 40 }, (_, index) => `word${index} `), tokensPerSecond: 40 });
    const controller = new AbortController();
    const response = await fetch(`${api.url}/api/v0/conversations/${conversationId}/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stranger.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'Talk for a while' }),
      signal: controller.signal,
    });
    await response.body!.getReader().read();
    controller.abort();
    await expect.poll(() => logLines.slice(before).some((line) => line.msg === 'the caller left: the reply was stopped and not stored; the user message is kept'), { timeout: 60_000 }).toBe(true);
    expect(logLines.slice(before).filter((line) => (line.level as number) >= 50)).toEqual([]);
  });
});

describe('engine down', () => {
  let api: Harness;

  beforeAll(async () => {
    api = await startHarness({ environment: { LLM_BASE_URL: 'http://127.0.0.1:9/v1' } });
  });
  afterAll(async () => {
    await api.close();
  });

  it('answers 503 with our message, naming no address, before any stream starts', async () => {
    const user = await api.account('alone');
    const { body } = await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } });
    const response = await fetch(`${api.url}/api/v0/conversations/${body.id}/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'hi' }),
    });
    const text = await response.text();
    expect(response.status).toBe(503);
    expect(JSON.parse(text).error.code).toBe('ENGINE_UNAVAILABLE');
    expect(text).not.toContain('127.0.0.1');
  });
});

describe('who may name which account', () => {
  let api: Harness;

  beforeAll(async () => {
    api = await startHarness();
  });
  afterAll(async () => {
    await api.close();
  });

  it('refuses ?accountId= naming another account with an account key, and accepts one’s own', async () => {
    const first = await api.account('first');
    const second = await api.account('second');
    for (const route of ['/api/v0/conversations', '/api/v0/jobs']) {
      const other = await api.call('GET', `${route}?accountId=${second.id}`, { key: first.key });
      expect(other.status).toBe(403);
      expect(other.body.error.code).toBe('FORBIDDEN');
      expect((await api.call('GET', `${route}?accountId=${first.id}`, { key: first.key })).status).toBe(200);
    }
    const created = await api.call('POST', '/api/v0/conversations', { key: first.key, body: { characterId: first.characterId, accountId: second.id } });
    expect(created.status).toBe(403);
  });

  it('tells a non-owner that only the owner can read the memories', async () => {
    const owner = await api.account('keeper');
    const other = await api.account('reader');
    await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, { key: owner.key, body: { is_public: true } });
    const read = await api.call('GET', `/api/v0/characters/${owner.characterId}/memories`, { key: other.key });
    expect(read.status).toBe(403);
    expect(read.body.error.message).toBe('Only the owner of character "keeper" can read its memories.');
  });
});
