/**
 * The fake must send the exact shapes the adapters are tested against; these tests read its
 * raw bytes, so a fake that drifts from the wire notes fails here rather than silently.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeTokenCount, startFakeOpenAI, type FakeChatScript, type FakeChunkWritten, type FakeOpenAI } from '../fakes/fake-openai.js';

describe('fake OpenAI-compatible server', () => {
  let fake: FakeOpenAI;
  const written: FakeChunkWritten[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI({ recordChunkTimes: true, onChunkWritten: (event) => written.push(event) });
  });
  afterAll(() => fake.close());

  async function rawStream(script: FakeChatScript): Promise<{ contentType: string | null; text: string }> {
    fake.setScript(script);
    const response = await fetch(`${fake.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }),
    });
    return { contentType: response.headers.get('content-type'), text: await response.text() };
  }

  const dataOf = (text: string): unknown[] =>
    text.split('\n\n').filter((event) => event.startsWith('data: ') && !event.endsWith('[DONE]')).map((event) => JSON.parse(event.slice(6)) as unknown);

  it('speaks llama-server: role-only first delta, empty last delta, usage chunk with no choices', async () => {
    const { contentType, text } = await rawStream({ flavor: 'llama-server', tokens: ['Hi'] });
    const chunks = dataOf(text) as Array<Record<string, unknown>>;

    expect(contentType).toBe('text/event-stream');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(chunks.map((chunk) => chunk['choices'])).toEqual([
      [{ finish_reason: null, index: 0, delta: { role: 'assistant', content: null } }],
      [{ finish_reason: null, index: 0, delta: { content: 'Hi' } }],
      [{ finish_reason: 'stop', index: 0, delta: {} }],
      [],
    ]);
    // 'hi' is one token, ChatML five around it and three for the generation prompt.
    expect(chunks[3]?.['usage']).toEqual({ completion_tokens: 1, prompt_tokens: 9, total_tokens: 10 });
  });

  it('speaks Ollama: role on every delta, one repeated id, fp_ollama', async () => {
    const first = dataOf((await rawStream({ flavor: 'ollama', tokens: ['a', 'b'] })).text) as Array<Record<string, unknown>>;
    const second = dataOf((await rawStream({ flavor: 'ollama', tokens: ['c'] })).text) as Array<Record<string, unknown>>;

    expect(new Set([...first, ...second].map((chunk) => chunk['id'])).size).toBe(1);
    expect(first.every((chunk) => chunk['system_fingerprint'] === 'fp_ollama')).toBe(true);
    expect(first.slice(0, 3).map((chunk) => (chunk['choices'] as Array<Record<string, unknown>>)[0]?.['delta'])).toEqual([
      { role: 'assistant', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'assistant', content: '' },
    ]);
  });

  it('writes keep-alive comments, event lines and CRLF exactly', async () => {
    const { text } = await rawStream({ tokens: ['x'], keepAlives: [':', ': ping'], eventName: 'message', lineEnding: '\r\n' });
    expect(text).toContain(':\r\n\r\n: ping\r\n\r\nevent: message\r\ndata: {');
    expect(text.endsWith('event: message\r\ndata: [DONE]\r\n\r\n')).toBe(true);
  });

  it('writes the legacy bare error line followed by [DONE]', async () => {
    const { text } = await rawStream({ tokens: ['x'], failure: { kind: 'legacy-error-line', message: 'boom' } });
    expect(text.endsWith('error: {"code":500,"message":"boom","type":"server_error"}\n\ndata: [DONE]\n\n')).toBe(true);
  });

  it('refuses a streamed prompt longer than the slot as llama-server b4748 does: 200, a bare error line, [DONE]', async () => {
    const { contentType, text } = await rawStream({ flavor: 'llama-server', slotContext: 2 });
    expect(contentType).toBe('text/event-stream');
    expect(text).toBe(
      'error: {"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error"}\n\ndata: [DONE]\n\n',
    );
  });

  it('renders ChatML at /apply-template, which /tokenize counts as the prompt', async () => {
    fake.setScript({ flavor: 'llama-server' });
    const root = fake.baseURL.replace(/\/v1$/, '');
    const post = async (path: string, body: unknown) => (await fetch(`${root}${path}`, { method: 'POST', body: JSON.stringify(body) })).json() as Promise<Record<string, unknown>>;
    const { prompt } = await post('/apply-template', { messages: [{ role: 'system', content: 'Be kind.' }, { role: 'user', content: 'hi' }] });
    expect(prompt).toBe('<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    const { tokens } = await post('/tokenize', { content: prompt, add_special: true });
    expect(tokens).toHaveLength(2 * 5 + 3 + fakeTokenCount('Be kind.') + fakeTokenCount('hi'));
  });

  it('stops at max_tokens, and without context shift fails at the end of the slot as llama-server does', async () => {
    const ask = async (script: FakeChatScript, body: Record<string, unknown>) => {
      fake.setScript({ flavor: 'llama-server', tokens: ['a ', 'b ', 'c ', 'd '], ...script });
      const response = await fetch(`${fake.baseURL}/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }) });
      return { status: response.status, text: await response.text() };
    };
    const cut = JSON.parse((await ask({}, { max_tokens: 2 })).text) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
    expect(cut.choices[0]).toMatchObject({ message: { content: 'a b ' }, finish_reason: 'length' });
    // 'hi' takes 1 + 5 + 3 = 9 tokens of an 11-token slot: two reply tokens fit.
    expect(await ask({ slotContext: 11 }, {})).toMatchObject({ status: 500, text: expect.stringContaining('context shift is disabled') });
    const streamed = await ask({ slotContext: 11 }, { stream: true });
    expect(streamed.status).toBe(200);
    expect(streamed.text).toContain('"content":"b "');
    expect(streamed.text).not.toContain('"content":"c "');
    expect(streamed.text.endsWith('error: {"code":500,"message":"context shift is disabled","type":"server_error"}\n\ndata: [DONE]\n\n')).toBe(true);
  });

  it('reports every token write with its time', async () => {
    written.length = 0;
    await rawStream({ tokens: ['one', 'two', 'three'], tokensPerSecond: 100 });
    const tokens = written.filter((event) => event.kind === 'token');
    expect(tokens.map((event) => event.text)).toEqual(['one', 'two', 'three']);
    expect(tokens[0]?.request.chunkWrittenAt).toEqual(tokens.map((event) => event.writtenAt));
    expect((tokens[2]?.writtenAt ?? 0) - (tokens[0]?.writtenAt ?? 0)).toBeGreaterThan(15);
    expect(written.map((event) => event.kind)).toEqual(['role', 'token', 'token', 'token', 'finish', 'usage', 'done']);
  });

  it('serves only httpThreads connections at once: an idle kept-alive one holds its thread', async () => {
    const threaded = await startFakeOpenAI({ httpThreads: 1, keepAliveTimeoutMs: 60_000, script: { flavor: 'llama-server' } });
    const first = new Agent();
    const second = new Agent();
    try {
      const tokenize = (dispatcher: Agent) => request(`${threaded.baseURL.replace(/\/v1$/, '')}/tokenize`, { method: 'POST', body: '{"content":"a"}', dispatcher });
      await (await tokenize(first)).body.json();
      const waiting = tokenize(second);
      await expect.poll(() => threaded.waitingConnections()).toBe(1);
      // The first client lets its idle connection go: the waiting one is served.
      await first.close();
      expect((await waiting).statusCode).toBe(200);
    } finally {
      await Promise.all([first.destroy(), second.destroy()]);
      await threaded.close();
    }
  });

  it('answers unknown routes with an OpenAI-style 404', async () => {
    const response = await fetch(`${fake.baseURL}/models/unknown`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { type: 'not_found_error' } });
  });
});
