import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Characters } from '../../src/core/characters.js';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { Conversations } from '../../src/core/conversations.js';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { type Harness, startHarness } from './harness.js';

interface SerialisedMessage {
  id: string;
  content: string;
  participant_type: string;
  swipes: string[];
  swipe_index: number;
}

describe('swipes: a reply’s alternatives over the API', () => {
  let api: Harness;
  let user: { id: string; characterId: string; key: string };

  const route = (conversationId: string) => `/api/v0/conversations/${conversationId}`;
  const messages = async (conversationId: string): Promise<SerialisedMessage[]> => (await api.call('GET', route(conversationId), { key: user.key })).body.messages;
  const swipe = (conversationId: string, messageId: string, body: unknown, key = user.key) => api.call('POST', `${route(conversationId)}/messages/${messageId}/swipe`, { key, body });

  /** A conversation whose reply to "Tell me a joke." was written three times: A, B, C. */
  async function threeAlternatives(): Promise<{ id: string; reply: SerialisedMessage; question: SerialisedMessage }> {
    const id = (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id;
    api.llm.setScript({ reply: 'Joke A.' });
    await api.call('POST', `${route(id)}/chat`, { key: user.key, body: { data: 'Tell me a joke.' } });
    for (const letter of ['B', 'C']) {
      api.llm.setScript({ reply: `Joke ${letter}.` });
      expect((await api.call('POST', `${route(id)}/regenerate`, { key: user.key, body: {} })).status).toBe(200);
    }
    const [question, reply] = await messages(id);
    return { id, question: question!, reply: reply! };
  }

  beforeAll(async () => {
    api = await startHarness();
    user = await api.account('swiper');
  });
  beforeEach(() => api.llm.setScript({}));
  afterAll(async () => {
    await api.close();
  });

  it('keeps every regenerated reply as an alternative of one message, the newest chosen', async () => {
    const { question, reply } = await threeAlternatives();
    expect(question).toMatchObject({ content: 'Tell me a joke.', swipes: ['Tell me a joke.'], swipe_index: 0 });
    expect(reply).toMatchObject({ content: 'Joke C.', participant_type: 'character', swipes: ['Joke A.', 'Joke B.', 'Joke C.'], swipe_index: 2 });
    // Each new alternative was written from the history without the one it joins.
    const prompt = JSON.stringify(api.llm.requests.at(-1)!.body.messages);
    expect(prompt).not.toContain('Joke A.');
    expect(prompt).not.toContain('Joke B.');
  });

  it('chooses an alternative, and the next prompt goes on from the chosen one', async () => {
    const { id, reply } = await threeAlternatives();
    const chosen = await swipe(id, reply.id, { index: 0 });
    expect(chosen.status).toBe(200);
    expect(chosen.body).toMatchObject({ success: true, message: { id: reply.id, content: 'Joke A.', swipes: ['Joke A.', 'Joke B.', 'Joke C.'], swipe_index: 0 } });
    expect((await messages(id)).at(-1)).toMatchObject({ content: 'Joke A.', swipe_index: 0 });

    api.llm.setScript({ reply: 'Glad you liked it.' });
    await api.call('POST', `${route(id)}/chat`, { key: user.key, body: { data: 'Ha!' } });
    const prompt = api.llm.requests.at(-1)!.body.messages!;
    const assistant = prompt.filter((message) => message.role === 'assistant').map((message) => message.content);
    expect(assistant).toEqual(['Joke A.']);
    expect(JSON.stringify(prompt)).not.toMatch(/Joke [BC]\./);
  });

  it('adds a regenerated reply after a swipe as the last alternative, and chooses it', async () => {
    const { id, reply } = await threeAlternatives();
    await swipe(id, reply.id, { index: 1 });
    api.llm.setScript({ reply: 'Joke D.' });
    await api.call('POST', `${route(id)}/regenerate`, { key: user.key, body: {} });
    expect((await messages(id)).at(-1)).toMatchObject({ id: reply.id, swipes: ['Joke A.', 'Joke B.', 'Joke C.', 'Joke D.'], swipe_index: 3 });
  });

  it('refuses an index that is not an integer within the swipes', async () => {
    const { id, reply } = await threeAlternatives();
    for (const body of [{ index: 3 }, { index: -1 }, { index: 1.5 }, { index: '1' }, {}]) {
      const refused = await swipe(id, reply.id, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    }
    expect((await messages(id)).at(-1)!.swipe_index).toBe(2);
  });

  it('answers 404 for an unknown conversation or message, and for someone not in the conversation', async () => {
    const { id, reply } = await threeAlternatives();
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await swipe(unknown, reply.id, { index: 0 })).status).toBe(404);
    expect((await swipe(id, unknown, { index: 0 })).body.error.code).toBe('NOT_FOUND');
    const stranger = await api.account('stranger');
    expect((await swipe(id, reply.id, { index: 0 }, stranger.key)).status).toBe(404);
  });

  it('swipes only the newest message, a character’s: 409 NOT_NEWEST_REPLY otherwise', async () => {
    const { id, reply, question } = await threeAlternatives();
    const person = await swipe(id, question.id, { index: 0 });
    expect(person.status).toBe(409);
    expect(person.body.error.code).toBe('NOT_NEWEST_REPLY');
    api.llm.setScript({ failure: { kind: 'http', status: 500, message: 'down' } });
    await api.call('POST', `${route(id)}/chat`, { key: user.key, body: { data: 'Another one?' } });
    const older = await swipe(id, reply.id, { index: 0 });
    expect(older.status).toBe(409);
    expect(older.body.error).toMatchObject({ code: 'NOT_NEWEST_REPLY', details: { messageId: reply.id } });
  });

  it('shows a greeting written with its alternates as one message with its swipes (the core API for greetings)', async () => {
    const id = (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id;
    const store = await openSqlStore(`sqlite://${path.join(api.dataDir, 'likeness.sqlite')}`);
    try {
      const conversations = new Conversations(store, {} as Characters, createSystemClock(), createRandomIds());
      const greeting = await conversations.appendGreeting(id, user.characterId, ['Hello.', 'Good evening.', 'You again?'], 1);
      expect(greeting).toMatchObject({ content: 'Good evening.', chosenIndex: 1 });
    } finally {
      await store.close();
    }
    const [greeting] = await messages(id);
    expect(greeting).toMatchObject({ participant_type: 'character', content: 'Good evening.', swipes: ['Hello.', 'Good evening.', 'You again?'], swipe_index: 1 });
    expect((await swipe(id, greeting!.id, { index: 2 })).body.message.content).toBe('You again?');
    api.llm.setScript({ reply: 'Yes, me.' });
    await api.call('POST', `${route(id)}/chat`, { key: user.key, body: { data: 'Hi!' } });
    expect(JSON.stringify(api.llm.requests.at(-1)!.body.messages)).toContain('You again?');
    expect(JSON.stringify(api.llm.requests.at(-1)!.body.messages)).not.toContain('Good evening.');
  });
});
