import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type Harness, startHarness } from './harness.js';

type Person = { id: string; characterId: string; key: string };

const isChat = (request: { path: string; body: FakeRequestBody }) => request.path.endsWith('/chat/completions');

describe('greetings: a conversation opens with the character first message', () => {
  let api: Harness;
  let writer: Person;
  let reader: Person;
  let keeper: string;
  beforeAll(async () => {
    api = await startHarness({ script: { reply: 'Welcome aboard.' } });
    [writer, reader] = await Promise.all([api.account('greet-writer'), api.account('greet-reader')]);
    keeper = (
      await api.call('POST', '/api/v0/characters', {
        key: writer.key,
        body: {
          name: 'Bram the Keeper', nickname: 'Bram', is_public: true,
          first_message: 'Who goes there, {{user}}? {{char}} keeps this light.',
          alternate_greetings: ['<USER>! <BOT> has tea on.', '{{// a note for editors}}Storm tonight, {{user}}.'],
          group_only_greetings: ['{{char}} nods to everyone.'],
        },
      })
    ).body.character.id;
  });
  afterAll(async () => {
    await api.close();
  });

  it('stores the greeting with its alternatives, macros resolved with the conversation names', async () => {
    const conversationId = (await api.call('POST', '/api/v0/conversations', { key: reader.key, body: { characterId: keeper } })).body.id as string;
    const read = await api.call('GET', `/api/v0/conversations/${conversationId}`, { key: reader.key });
    expect(read.body.messages).toHaveLength(1);
    const [greeting] = read.body.messages;
    expect(greeting).toMatchObject({
      participant_id: keeper, participant_type: 'character', swipe_index: 0,
      content: 'Who goes there, greet-reader? Bram keeps this light.',
      swipes: ['Who goes there, greet-reader? Bram keeps this light.', 'greet-reader! Bram has tea on.', 'Storm tonight, greet-reader.'],
    });

    // Swiped to another greeting, the conversation goes on from it.
    const swiped = await api.call('POST', `/api/v0/conversations/${conversationId}/messages/${greeting.id}/swipe`, { key: reader.key, body: { index: 1 } });
    expect(swiped.body.message.content).toBe('greet-reader! Bram has tea on.');
    expect((await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key: reader.key, body: { data: 'Thanks!' } })).status).toBe(200);
    const prompt = api.llm.requests.filter(isChat).at(-1)!.body.messages!;
    const turns = prompt.filter((message) => message.role !== 'system').map((message) => [message.role, message.content]);
    expect(turns.slice(0, 2)).toEqual([['assistant', 'greet-reader! Bram has tea on.'], ['user', 'Thanks!']]);
    // Only the newest character message can be swiped: the greeting no more.
    const late = await api.call('POST', `/api/v0/conversations/${conversationId}/messages/${greeting.id}/swipe`, { key: reader.key, body: { index: 0 } });
    expect(late.body.error.code).toBe('NOT_NEWEST_REPLY');
  });

  it('greets a scene with the group-only greetings when a character joins, and opens without one when the card has none', async () => {
    const conversationId = (await api.call('POST', '/api/v0/conversations', { key: writer.key, body: { characterId: writer.characterId } })).body.id as string;
    expect((await api.call('GET', `/api/v0/conversations/${conversationId}`, { key: writer.key })).body.messages).toEqual([]);
    await api.call('POST', `/api/v0/conversations/${conversationId}/speakers`, { key: writer.key, body: { characterId: keeper } });
    await api.call('POST', `/api/v0/conversations/${conversationId}/speakers`, { key: writer.key, body: { characterId: keeper } });
    const messages = (await api.call('GET', `/api/v0/conversations/${conversationId}`, { key: writer.key })).body.messages;
    expect(messages.map((message: { content: string; participant_id: string }) => [message.participant_id, message.content])).toEqual([[keeper, 'Bram nods to everyone.']]);
  });
});
