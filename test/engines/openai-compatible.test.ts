import { describe, expect, it } from 'vitest';
import { collect, useFakeChat, userSays } from './chat-helpers.js';

describe('OpenAI-compatible chat model: answers', () => {
  const context = useFakeChat();

  it('streams the reply as text parts and ends with exactly one finish part with usage', async () => {
    const model = context.model();
    const { parts, text } = await collect(model.stream({ ...userSays('Tell me about the sea'), maxTokens: 64, temperature: 0.7 }));

    expect(text).toBe('Tell me about the sea');
    expect(parts.filter((part) => part.type === 'text').length).toBe(5);
    expect(parts.some((part) => part.type === 'text' && part.text === '')).toBe(false);
    expect(parts.filter((part) => part.type === 'finish')).toEqual([
      { type: 'finish', finishReason: 'stop', usage: { promptTokens: 5, completionTokens: 5 } },
    ]);
    expect(parts.at(-1)?.type).toBe('finish');
    const [received] = context.fake.requests;
    expect(received?.path).toBe('/v1/chat/completions');
    expect(received?.body).toEqual({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Tell me about the sea' }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 64,
      temperature: 0.7,
    });
    expect(received?.headers.authorization).toBeUndefined();
    expect(received?.headers.accept).toBe('text/event-stream');
  });

  it('sends the API key as a bearer token when one is set', async () => {
    await collect(context.model({ apiKey: 'secret-key' }).stream(userSays('hi')));
    expect(context.fake.requests[0]?.headers.authorization).toBe('Bearer secret-key');
  });

  it('yields each token as it arrives from a slow stream', async () => {
    context.fake.setScript({ tokens: ['one ', 'two ', 'three ', 'four'], tokensPerSecond: 20 });
    const { text, arrivals, parts } = await collect(context.model().stream(userSays('count')));

    expect(text).toBe('one two three four');
    const textArrivals = arrivals.filter((_, index) => parts[index]?.type === 'text');
    expect(textArrivals).toHaveLength(4);
    // Four tokens at 20 per second: about 150 ms between the first and the last.
    expect((textArrivals[3] ?? 0) - (textArrivals[0] ?? 0)).toBeGreaterThan(100);
  });

  it('ignores keep-alive comments, and they keep a slow stream inside the body timeout', async () => {
    // undici checks body timeouts on a coarse (about 1 s) clock, so the gap must exceed that.
    context.fake.setScript({ tokens: ['slow ', 'alive'], tokensPerSecond: 0.6, keepAlives: [':', ': ping'], keepAliveIntervalMs: 100 });
    const { text, parts } = await collect(context.model({ bodyTimeoutMs: 200 }).stream(userSays('x')));

    expect(text).toBe('slow alive');
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });

  it('reads llama-server streams: a role-only first delta and a usage chunk with no choices', async () => {
    context.fake.setScript({ flavor: 'llama-server', tokens: ['Hello', ' there'] });
    const { parts } = await collect(context.model().stream(userSays('hi')));

    expect(parts).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ' there' },
      { type: 'finish', finishReason: 'stop', usage: { promptTokens: 9, completionTokens: 2 } },
    ]);
  });

  it('reads Ollama streams: role on every delta and ids repeated across answers', async () => {
    context.fake.setScript({ flavor: 'ollama', tokens: ['Bonjour', '!'] });
    const model = context.model();
    const first = await collect(model.stream(userSays('hi')));
    const second = await collect(model.stream(userSays('hi')));

    for (const answer of [first, second]) {
      expect(answer.parts).toEqual([
        { type: 'text', text: 'Bonjour' },
        { type: 'text', text: '!' },
        { type: 'finish', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 2 } },
      ]);
    }
  });

  it('accepts CRLF line endings and event lines', async () => {
    context.fake.setScript({ tokens: ['a', 'b'], lineEnding: '\r\n', eventName: 'message', keepAlives: [':'] });
    const { text, parts } = await collect(context.model().stream(userSays('x')));
    expect(text).toBe('ab');
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });

  it('leaves reasoning deltas out and passes <think> content through untouched', async () => {
    context.fake.setScript({ flavor: 'llama-server', reasoning: ['Let me think.'], tokens: ['<think>', 'hm', '</think>', 'Yes.'] });
    expect((await collect(context.model().stream(userSays('?')))).text).toBe('<think>hm</think>Yes.');

    context.fake.setScript({ flavor: 'ollama', reasoning: ['Pondering.'], tokens: ['Sure.'] });
    expect((await collect(context.model().stream(userSays('?')))).text).toBe('Sure.');
  });

  it('reports the finish reason the engine gave', async () => {
    context.fake.setScript({ tokens: ['cut'], finishReason: 'length' });
    const { parts } = await collect(context.model().stream(userSays('x')));
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' });
  });

  it('accepts a stream that gave a finish reason but no [DONE]', async () => {
    context.fake.setScript({ tokens: ['done', '.'], omitDone: true });
    const { text, parts } = await collect(context.model().stream(userSays('x')));
    expect(text).toBe('done.');
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });

  it('reads a whole JSON answer from a server that ignores stream: true', async () => {
    context.fake.setScript({ reply: 'All at once.', ignoreStream: true });
    const { parts } = await collect(context.model().stream(userSays('x')));
    expect(parts).toEqual([
      { type: 'text', text: 'All at once.' },
      { type: 'finish', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 3 } },
    ]);
  });

  it('generates without streaming', async () => {
    context.fake.setScript({ reply: 'A calm answer.', finishReason: 'stop' });
    const result = await context.model().generate({ messages: [{ role: 'system', content: 'Be calm.' }, { role: 'user', content: 'Hi' }] });

    expect(result).toEqual({ text: 'A calm answer.', finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 3 } });
    expect(context.fake.requests[0]?.body).toEqual({
      model: 'fake-model',
      messages: [{ role: 'system', content: 'Be calm.' }, { role: 'user', content: 'Hi' }],
      stream: false,
    });
  });

  it('asks for a response format as strict json_schema, whole and streamed, and sends none unless asked', async () => {
    const schema = { type: 'object', properties: { mood: { type: 'string' } }, required: ['mood'], additionalProperties: false };
    context.fake.setScript({ tokens: ['{"mood": ', '"calm"}'] });
    const model = context.model();
    const request = { ...userSays('How is the sea?'), responseFormat: { name: 'sea_mood', schema } };

    expect((await model.generate(request)).text).toBe('{"mood": "calm"}');
    expect((await collect(model.stream(request))).text).toBe('{"mood": "calm"}');
    await model.generate(userSays('How is the sea?'));

    const [whole, streamed, plain] = context.fake.requests.map((received) => received.body);
    const responseFormat = { type: 'json_schema', json_schema: { name: 'sea_mood', schema, strict: true } };
    expect(whole).toMatchObject({ stream: false, response_format: responseFormat });
    expect(streamed).toMatchObject({ stream: true, response_format: responseFormat });
    expect(plain).not.toHaveProperty('response_format');
  });

  it('sends image parts as data URLs and text parts as text parts', async () => {
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const view = new Uint8Array(png.buffer, 2, 4); // a view into a larger buffer must send only its bytes
    await context.model().generate({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', mimeType: 'image/png', data: png }, { type: 'image', mimeType: 'image/jpeg', data: view }] }],
    });

    expect(context.fake.requests[0]?.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from(png).toString('base64')}` } },
          { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${Buffer.from([0x4e, 0x47, 0x0d, 0x0a]).toString('base64')}` } },
        ],
      },
    ]);
  });

  it('finishes at [DONE] and keeps the connection even when the body ends later', async () => {
    context.fake.setScript({ endDelayMs: 300 });
    const model = context.model();
    const before = context.fake.connectionCount();
    for (const text of ['one', 'two']) {
      let bodyEnded = false;
      const finished = await collect(model.stream(userSays(text)));
      const record = context.fake.requests.at(-1)!;
      void record.outcome.then(() => (bodyEnded = true));
      await Promise.resolve();
      // Finished at [DONE], while the engine still held its body open (it ends 300 ms after).
      expect(finished.text).toBe(text);
      expect(bodyEnded).toBe(false);
      await record.outcome;
      // undici frees a socket for the pool a moment after its body ends.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(context.fake.connectionCount() - before).toBe(1);
  });

  it('reports its provider and model', () => {
    const model = context.model({ model: 'llama-3.1-8b' });
    expect(model.provider).toBe('openai-compatible');
    expect(model.modelId).toBe('llama-3.1-8b');
  });
});
