import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterEach, describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/core/tokens.js';
import { type FakeRequestBody, type FakeScriptSource, fakePromptTokens } from '../fakes/fake-openai.js';
import { type Harness, startHarness } from './harness.js';

const isChat = (request: { path: string; body: FakeRequestBody }) =>
  request.path.endsWith('/chat/completions') && !String(request.body.messages?.[0]?.content).includes('running summary');

/** The files the service has stored (avatars, images, recordings), by name. */
async function storedFiles(dataDir: string): Promise<string[]> {
  const entries = await readdir(path.join(dataDir, 'files'), { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => entry.name).sort();
}

function png(width: number, height: number): string {
  const image = new PNG({ width, height });
  image.data.fill(120);
  return `data:image/png;base64,${PNG.sync.write(image).toString('base64')}`;
}

describe('the prompt fits the engine and keeps the newest message', () => {
  let api: Harness | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  async function open(environment: Record<string, string>, script?: FakeScriptSource) {
    api = await startHarness({ environment, ...(script ? { script } : {}) });
    const person = await api.account('fitter');
    const created = await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
    const id = created.body.id as string;
    const harness = api;
    const chat = (data: string, mimeType?: string) =>
      harness.call('POST', `/api/v0/conversations/${id}/chat`, { key: person.key, body: { data, ...(mimeType ? { mimeType } : {}) } });
    const read = async () => (await harness.call('GET', `/api/v0/conversations/${id}`, { key: person.key })).body;
    const stream = async (data: string) => {
      const response = await fetch(`${harness.url}/api/v0/conversations/${id}/chat/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${person.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ data }),
      });
      return { status: response.status, text: await response.text() };
    };
    return { harness, person, id, chat, read, stream };
  }

  it('refuses, before storing it, a message that cannot fit the context even alone, and says the limit in characters', async () => {
    const { harness, chat, read } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' });
    const answer = await chat('word '.repeat(300).trim());
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('VALIDATION_FAILED');
    expect(answer.body.error.message).toMatch(/at most about \d+ characters/);
    expect(harness.llm.requests.filter(isChat)).toHaveLength(0);
    expect((await read()).messages).toEqual([]);
  });

  it('says it is the character, not the message, when the character’s own texts leave no room', async () => {
    const { harness, person, chat, read } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' });
    await harness.call('PATCH', `/api/v0/characters/${person.characterId}`, { key: person.key, body: { scenario: 'A long and winding scenario. '.repeat(120) } });
    const answer = await chat('hi');
    expect(answer.status).toBe(422);
    expect(answer.body.error.code).toBe('CHARACTER_TOO_LONG_FOR_CONTEXT');
    expect(answer.body.error.message).toMatch(/own texts .* take about \d+ tokens/);
    expect(harness.llm.requests.filter(isChat)).toHaveLength(0);
    expect((await read()).messages).toEqual([]);
  });

  it('always sends the newest message, dropping older history instead', async () => {
    const { harness, chat } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' });
    for (let index = 0; index < 3; index++) await chat(`Earlier ${index}: ${'talk '.repeat(40)}`);
    const long = `Newest: ${'story '.repeat(130)}`.trim();
    expect((await chat(long)).status).toBe(200);
    const sent = harness.llm.requests.filter(isChat).at(-1)!.body.messages!;
    expect(sent.at(-1)).toEqual({ role: 'user', content: long });
  });

  it('keeps CJK and emoji history within a real llama-server slot, counted by its /tokenize', async () => {
    const { harness, chat } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' }, { flavor: 'llama-server', slotContext: 512, reply: '好的' });
    for (let index = 0; index < 8; index++) {
      const answer = await chat(`${index}: ${'今天天气很好我们去公园散步吧'.repeat(6)}🎉🎉`);
      expect(answer.status).toBe(200);
    }
    const prompts = harness.llm.requests.filter(isChat).map((request) => fakePromptTokens(request.body));
    expect(Math.max(...prompts)).toBeLessThanOrEqual(512 - 128);
    expect(harness.llm.requests.some((request) => request.path === '/tokenize')).toBe(true);
  });

  it.each(['streamed', 'whole'])('when the engine finds the prompt too long (%s), drops older history, tries once more, and learns the slot context', async (mode) => {
    // The README mistake: LLM_CONTEXT_TOKENS set to -c while -np 4 gives each slot a quarter.
    const { harness, chat, read, stream } = await open({ LLM_CONTEXT_TOKENS: '2400', LLM_MAX_REPLY_TOKENS: '100' }, { flavor: 'llama-server', slotContext: 600, slots: 4, reply: 'Noted.' });
    for (let index = 0; index < 18; index++) {
      const data = `Line ${index}: ${'plenty of words here '.repeat(6)}`;
      // A streamed refusal comes inside a 200 stream (b4748), before the first piece: retried all the same.
      if (mode === 'whole') expect((await chat(data)).status).toBe(200);
      else {
        const answer = await stream(data);
        expect(answer.status).toBe(200);
        expect(answer.text).toContain('[DONE]');
        expect(answer.text).not.toContain('"success":false');
      }
    }
    const chats = harness.llm.requests.filter(isChat);
    // One refusal, answered by one retry; afterwards every prompt fits the slot at once.
    expect(chats.length).toBe(19);
    const refusedAt = chats.findIndex((request) => fakePromptTokens(request.body) > 600);
    expect(refusedAt).toBeGreaterThan(0);
    expect(chats[refusedAt]!.body.stream).toBe(mode === 'streamed');
    expect(chats.slice(refusedAt + 1).every((request) => fakePromptTokens(request.body) <= 600 - 100)).toBe(true);
    expect(JSON.stringify(chats.at(-1)!.body.messages!.at(-1))).toContain('Line 17');
    // Nothing stored twice.
    expect((await read()).messages).toHaveLength(36);
    expect(harness.llm.requests.some((request) => request.path === '/props')).toBe(true);
  });

  it('warns at start, before any failure, when the engine gives each request less context than LLM_CONTEXT_TOKENS', async () => {
    let warned: (line: Record<string, unknown>) => void = () => {};
    const warning = new Promise<Record<string, unknown>>((resolve) => (warned = resolve));
    api = await startHarness({
      environment: { LLM_CONTEXT_TOKENS: '8192' },
      script: { flavor: 'llama-server', slotContext: 2048, slots: 4 },
      logDestination: {
        write: (text: string) => {
          const line = JSON.parse(text) as Record<string, unknown>;
          if (line['engine'] !== undefined) warned(line);
        },
      },
    });
    expect(await warning).toMatchObject({ level: 40, configured: 8192, engine: 2048 });
    expect(api.llm.requests.filter(isChat)).toHaveLength(0);
  });

  it('still answers when the slot it learned is no larger than LLM_MAX_REPLY_TOKENS: the reply gets at most half of it', async () => {
    // -c 2048 -np 4: 512 tokens a slot, while LLM_MAX_REPLY_TOKENS alone asks for 1024.
    const { harness, chat } = await open({ LLM_CONTEXT_TOKENS: '2048', LLM_MAX_REPLY_TOKENS: '1024' }, { flavor: 'llama-server', slotContext: 512, slots: 4, reply: 'Noted.' });
    // Fits what is configured, not the slot: refused by the engine, which teaches the slot.
    expect((await chat('word '.repeat(480).trim())).status).toBeGreaterThanOrEqual(400);
    for (let index = 0; index < 4; index++) {
      const answer = await chat(`Short line ${index}.`);
      expect(answer.status).toBe(200);
    }
    const last = harness.llm.requests.filter(isChat).at(-1)!.body;
    expect(last['max_tokens']).toBe(256);
    expect(fakePromptTokens(last) + 256).toBeLessThanOrEqual(512);
  });

  it('leaves room for a reply of the whole LLM_MAX_REPLY_TOKENS beside the fullest prompt, the chat template counted', async () => {
    // Without context shift llama-server fails a reply that reaches the end of its slot. Each
    // reply is cut at max_tokens, and stored short (the spaces trimmed), so many messages fit.
    const long = ['Aye.', ...Array.from({ length: 400 }, () => ' ')];
    const { harness, chat } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' }, { flavor: 'llama-server', slotContext: 512, tokens: long });
    for (let index = 0; index < 30; index++) expect((await chat(`Line ${index}`)).status).toBe(200);
    const chats = harness.llm.requests.filter(isChat);
    expect(chats.every((request) => fakePromptTokens(request.body) + 128 <= 512)).toBe(true);
    // The history filled the context: the test reached the slot's end.
    // The history filled the context (our count keeps a token a message spare): the test reached the slot's end.
    expect(Math.max(...chats.map((request) => fakePromptTokens(request.body)))).toBeGreaterThan(512 - 128 - 64);
  });

  it('keeps a streamed reply the end of the slot cut short, with what arrived and finish reason length', async () => {
    const script: FakeScriptSource = (body) =>
      isChat({ path: '/v1/chat/completions', body }) ? { flavor: 'llama-server', tokens: ['Once ', 'upon ', 'a ', 'time'], failure: { kind: 'legacy-error-line', code: 500, message: 'context shift is disabled', afterTokens: 3 } } : { flavor: 'llama-server' };
    const { stream, read } = await open({}, script);
    const answer = await stream('Tell me a story.');
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"finish_reason":"length"');
    expect(answer.text).toContain('[DONE]');
    const stored = (await read()).messages.at(-1);
    expect(stored).toMatchObject({ content: 'Once upon a', finish_reason: 'length' });
  });

  it('sends the rolling summary only with room for its reply, and not at all when its fixed part alone does not fit', async () => {
    // A summary of the whole LLM_SUMMARY_MAX_TOKENS (300): the next one's instruction and summary so far leave no room for lines.
    const script: FakeScriptSource = (body) =>
      String(body.messages?.[0]?.content).includes('running summary') ? { flavor: 'llama-server', slotContext: 512, tokens: Array.from({ length: 400 }, () => 'abc ') } : { flavor: 'llama-server', slotContext: 512, reply: 'Aye.' };
    const { harness, chat, read } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' }, script);
    for (let index = 0; index < 30; index++) expect((await chat(`Tale ${index}: ${'the boat sailed to the lighthouse '.repeat(2)}`)).status).toBe(200);
    // A restart waits for the summaries still being written.
    await harness.restart();
    const summaries = harness.llm.requests.filter((request) => !isChat(request) && request.path.endsWith('/chat/completions'));
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.every((request) => fakePromptTokens(request.body) + Number(request.body['max_tokens']) <= 512)).toBe(true);
    expect((await read()).summary).toMatch(/^abc/);
  });

  it.each([
    ['truncated: true', true],
    ['only usage.prompt_tokens, as b4748', false],
  ])('notices llama-server’s context shift (%s) and sends prompts that fit from then on', async (_, reportsTruncation) => {
    const { harness, chat } = await open({ LLM_CONTEXT_TOKENS: '2400', LLM_MAX_REPLY_TOKENS: '100' }, { flavor: 'llama-server', slotContext: 600, contextShift: true, reportsTruncation, reply: 'Noted.' });
    for (let index = 0; index < 18; index++) expect((await chat(`Line ${index}: ${'plenty of words here '.repeat(6)}`)).status).toBe(200);
    const prompts = harness.llm.requests.filter(isChat).map((request) => fakePromptTokens(request.body));
    const cut = prompts.findIndex((tokens) => tokens > 600);
    expect(cut).toBeGreaterThan(0);
    expect(prompts.slice(cut + 1).every((tokens) => tokens <= 600)).toBe(true);
  });

  it('does not take a regenerated reply, which the prompt leaves out, for a prompt the engine cut', async () => {
    const cuts: unknown[] = [];
    api = await startHarness({
      script: { flavor: 'llama-server', reply: `A long first answer: ${'many words in it '.repeat(40)}` },
      logDestination: { write: (text: string) => void (text.includes('cut the prompt') && cuts.push(JSON.parse(text))) },
    });
    const person = await api.account('again');
    const id = (await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } })).body.id as string;
    expect((await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: person.key, body: { data: 'Tell me more.' } })).status).toBe(200);
    api.llm.setScript({ flavor: 'llama-server', reply: 'Short.' });
    for (let index = 0; index < 2; index++) expect((await api.call('POST', `/api/v0/conversations/${id}/regenerate`, { key: person.key })).status).toBe(200);
    expect(cuts).toEqual([]);
  });

  it('says MODEL_CANNOT_SEE_IMAGES when the engine refuses image parts, keeps the image, and goes on in text, in every process', async () => {
    const { harness, chat, read } = await open({}, { flavor: 'llama-server', textOnly: true, reply: 'I hear you.' });
    const refused = await chat(png(8, 8), 'image/png');
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('MODEL_CANNOT_SEE_IMAGES');
    expect(JSON.stringify(refused.body)).not.toContain('Unsupported content part');
    expect((await read()).messages.map((message: { mimetype: string }) => message.mimetype)).toEqual(['image/png']);
    const goesOn = await chat('Did you like it?');
    expect(goesOn.status).toBe(200);
    const sent = JSON.stringify(harness.llm.requests.filter(isChat).at(-1)!.body.messages);
    expect(sent).not.toContain('image_url');
    expect(sent).toContain('cannot see images');
    await harness.restart();
    // Chats only: the restarted service also asks /props in the background.
    const before = harness.llm.requests.filter(isChat).length;
    const again = await chat(png(8, 8), 'image/png');
    expect(again.status).toBe(422);
    expect(again.body.error.code).toBe('MODEL_CANNOT_SEE_IMAGES');
    expect(harness.llm.requests.filter(isChat).length).toBe(before);
    expect((await read()).messages).toHaveLength(3);
  });

  it('downscales images at ingest and refuses one the context cannot hold', async () => {
    const { harness, chat, read } = await open({ LLM_CONTEXT_TOKENS: '2048', LLM_MAX_REPLY_TOKENS: '128' }, { reply: 'A picture.' });
    expect((await chat(png(2000, 1000), 'image/png')).status).toBe(200);
    const stored = (await read()).messages[0];
    const bytes = Buffer.from(await (await fetch(stored.content)).arrayBuffer());
    expect(PNG.sync.read(bytes)).toMatchObject({ width: 1024, height: 512 });
    const part = (harness.llm.requests.filter(isChat).at(-1)!.body.messages!.at(-1)!.content as Array<{ image_url?: { url: string } }>)[0];
    expect(part?.image_url?.url).toBe(`data:image/png;base64,${bytes.toString('base64')}`);
    // 1024² takes about 1369 tokens: more than 2048 - 128 - the character leaves beside history, but it fits alone.
    const square = await chat(png(1024, 1024), 'image/png');
    expect(square.status).toBe(200);
    const sent = JSON.stringify(harness.llm.requests.filter(isChat).at(-1)!.body.messages);
    // The older image no longer fits beside the newest: a placeholder says so.
    expect(sent.match(/"type":"image_url"/g)).toHaveLength(1);
    expect(sent).toContain('left out to fit the context');
    await api?.close();
    const tiny = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' });
    const filesBefore = await storedFiles(tiny.harness.dataDir);
    const tooBig = await tiny.chat(png(1024, 1024), 'image/png');
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.error.message).toContain('smaller image');
    expect((await tiny.read()).messages).toEqual([]);
    // Refused before its file was stored: nothing is left behind.
    expect(await storedFiles(tiny.harness.dataDir)).toEqual(filesBefore);
  });

  it('keeps a rolling summary of what fell out of the window, in the prompt and the conversation read', async () => {
    const script: FakeScriptSource = (body) =>
      String(body.messages?.[0]?.content).includes('running summary') ? { flavor: 'llama-server', reply: 'They spoke of boats and a lighthouse.' } : { flavor: 'llama-server', reply: 'Aye.' };
    const { harness, chat, read, person, id } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' }, script);
    expect((await read()).summary).toBeNull();
    for (let index = 0; index < 24; index++) expect((await chat(`Tale ${index}: ${'the boat sailed to the lighthouse '.repeat(2)}`)).status).toBe(200);
    let summary: string | null = null;
    for (let attempt = 0; attempt < 50 && summary === null; attempt++) {
      summary = (await read()).summary;
      if (summary === null) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(summary).toBe('They spoke of boats and a lighthouse.');
    const summaryRequest = harness.llm.requests.find((request) => !isChat(request) && request.path.endsWith('/chat/completions'))!;
    expect(JSON.stringify(summaryRequest.body.messages)).toContain('Tale 0');
    await chat('And then?');
    const system = String(harness.llm.requests.filter(isChat).at(-1)!.body.messages![0]!.content);
    expect(system).toContain('They spoke of boats and a lighthouse.');
    expect((await harness.call('POST', `/api/v0/conversations/${id}/clear`, { key: person.key })).status).toBeLessThan(300);
    expect((await read()).summary).toBeNull();
  });

  it('learns the model’s tokens per character from usage.prompt_tokens where the engine cannot count for us', async () => {
    const { harness, chat } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' }, { flavor: 'llama-server', slotContext: 512, noTokenize: true, reply: 'はい' });
    for (let index = 0; index < 14; index++) expect((await chat(`${index}${'今日は海へ行きました楽しかったです'.repeat(3)}`)).status).toBe(200);
    const last = harness.llm.requests.filter(isChat).at(-1)!.body;
    // Every prompt fits the slot as the engine counts it…
    expect(harness.llm.requests.filter(isChat).every((request) => fakePromptTokens(request.body) <= 512)).toBe(true);
    // …and the last carries more history than the bare estimate would have let through.
    const estimated = (last.messages ?? []).reduce((total, message) => total + estimateTokens(String(message.content)), 0);
    expect(estimated).toBeGreaterThan(512 - 128);
  });
});
