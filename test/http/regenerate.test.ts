import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defaultMaxReplyCharacters } from '../../src/core/chat.js';
import { type Harness, readEvents, startHarness } from './harness.js';

describe('regenerating a reply, finish reasons and the reply limit', () => {
  let api: Harness;
  let user: { id: string; characterId: string; key: string };

  async function conversation(): Promise<string> {
    const created = await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } });
    return created.body.id;
  }

  async function messages(id: string): Promise<Array<{ content: string; participant_type: string; finish_reason?: string }>> {
    return (await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key })).body.messages;
  }

  function post(route: string, body: unknown = {}): Promise<Response> {
    return fetch(`${api.url}/api/v0/conversations/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  beforeAll(async () => {
    api = await startHarness();
    user = await api.account('again');
  });
  beforeEach(() => {
    api.llm.setScript({});
  });
  afterAll(async () => {
    await api.close();
  });

  it('answers the last message again after a failure without storing it twice', async () => {
    const id = await conversation();
    api.llm.setScript({ failure: { kind: 'http', status: 500, message: 'boom' } });
    expect((await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Are you there?' } })).status).toBe(502);
    api.llm.setScript({ reply: 'I am here.' });
    const again = await api.call('POST', `/api/v0/conversations/${id}/regenerate`, { key: user.key });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ data: 'I am here.', mimeType: 'text/plain', finishReason: 'stop' });
    expect((await messages(id)).map((message) => message.content)).toEqual(['Are you there?', 'I am here.']);
    const prompt = api.llm.requests.at(-1)!.body.messages!;
    expect(prompt.filter((message) => message.role === 'user')).toHaveLength(1);
  });

  it('replaces the previous reply, in reads and in the next prompt, also when streamed', async () => {
    const id = await conversation();
    api.llm.setScript({ reply: 'First answer.' });
    await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Tell me a joke.' } });
    api.llm.setScript({ tokens: ['Second', ' answer.'] });
    const response = await post(`${id}/regenerate/stream`);
    expect(response.status).toBe(200);
    const events = await readEvents(response);
    expect(events.at(-1)).toBe('[DONE]');
    expect(events.slice(0, -2).map((event) => JSON.parse(event).choices[0].delta.content).join('')).toBe('Second answer.');
    expect((await messages(id)).map((message) => message.content)).toEqual(['Tell me a joke.', 'Second answer.']);
    const regeneratePrompt = JSON.stringify(api.llm.requests.at(-1)!.body.messages);
    expect(regeneratePrompt).not.toContain('First answer.');

    api.llm.setScript({ reply: 'Third.' });
    await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Another?' } });
    const nextPrompt = JSON.stringify(api.llm.requests.at(-1)!.body.messages);
    expect(nextPrompt).toContain('Second answer.');
    expect(nextPrompt).not.toContain('First answer.');
  });

  it('says there is nothing to answer again in an empty conversation', async () => {
    const id = await conversation();
    const nothing = await api.call('POST', `/api/v0/conversations/${id}/regenerate`, { key: user.key });
    expect(nothing.status).toBe(409);
    const stranger = await api.account('stranger');
    expect((await api.call('POST', `/api/v0/conversations/${id}/regenerate`, { key: stranger.key })).status).toBe(404);
  });

  it('passes the engine’s finish reason to the last chunk, the sync answer and the stored reply', async () => {
    const id = await conversation();
    api.llm.setScript({ tokens: ['Cut', ' short'], finishReason: 'length' });
    const events = await readEvents(await post(`${id}/chat/stream`, { data: 'Go on' }));
    expect(JSON.parse(events.at(-2)!).choices[0].finish_reason).toBe('length');
    api.llm.setScript({ reply: 'Also cut', finishReason: 'length' });
    const sync = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'And?' } });
    expect(sync.body.finishReason).toBe('length');
    const stored = await messages(id);
    expect(stored.filter((message) => message.participant_type === 'character').map((message) => message.finish_reason)).toEqual(['length', 'length']);
    expect(stored.filter((message) => message.participant_type === 'account').every((message) => message.finish_reason === undefined)).toBe(true);
  });

  it('stops reading an endless answer at the reply limit and stores what came, as cut by length', async () => {
    const id = await conversation();
    // Paced, so the whole answer would take four seconds: we must hang up long before it ends.
    api.llm.setScript({ tokens: Array.from({ length: 2_000 }, () => 'x'.repeat(1_000)), tokensPerSecond: 500 });
    const response = await post(`${id}/chat/stream`, { data: 'Say everything' });
    const events = await readEvents(response);
    expect(JSON.parse(events.at(-2)!).choices[0].finish_reason).toBe('length');
    const streamedText = events.slice(0, -2).map((event) => JSON.parse(event).choices[0].delta.content).join('');
    expect(streamedText).toHaveLength(defaultMaxReplyCharacters);
    // We hung up on the engine rather than read two million characters.
    expect(await api.llm.requests.at(-1)!.outcome).toBe('client-closed');

    api.llm.setScript({ reply: 'y'.repeat(2_000_000) });
    const sync = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Again' } });
    expect(sync.body.data).toHaveLength(defaultMaxReplyCharacters);
    expect(sync.body.finishReason).toBe('length');
    const replies = (await messages(id)).filter((message) => message.participant_type === 'character');
    expect(replies.map((message) => [message.content.length, message.finish_reason])).toEqual([
      [defaultMaxReplyCharacters, 'length'],
      [defaultMaxReplyCharacters, 'length'],
    ]);
  });
});
