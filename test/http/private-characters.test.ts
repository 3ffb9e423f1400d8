/**
 * A character its owner makes private stops answering in others' conversations and scenes at
 * once: every reply, regenerated reply and swipe checks it again (issue 28, item 3), not only
 * opening the conversation or adding it to a scene. Where its owner takes part, it goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { Conversations } from '../../src/core/conversations.js';
import type { Characters } from '../../src/core/characters.js';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import path from 'node:path';
import { type Harness, startHarness } from './harness.js';

type Person = { id: string; characterId: string; key: string };

describe('a character made private, over HTTP', () => {
  let api: Harness;
  let owner: Person;
  let stranger: Person;

  beforeAll(async () => {
    api = await startHarness({ script: { reply: 'Hello there.' } });
    [owner, stranger] = await Promise.all([api.account('private-owner'), api.account('private-stranger')]);
  });
  afterAll(async () => {
    await api?.close();
  });

  const setPublic = async (characterId: string, isPublic: boolean) =>
    expect((await api.call('PATCH', `/api/v0/characters/${characterId}`, { key: owner.key, body: { is_public: isPublic } })).status).toBe(200);
  const chatRequests = () => api.llm.requests.filter((request) => request.path.endsWith('/chat/completions')).length;
  const expectPrivate = (answer: { status: number; body: any }) => {
    expect(answer.status).toBe(403);
    expect(answer.body.error.code).toBe('CHARACTER_PRIVATE');
    expect(answer.body.error.message).toMatch(/was made private by its owner/);
  };

  it('refuses a reply, a streamed reply, a regenerated one and a swipe in a stranger’s conversation, and asks the engine nothing', async () => {
    const characterId = (await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name: 'Secretive Sam', is_public: true } })).body.character.id as string;
    const route = `/api/v0/conversations/${(await api.call('POST', '/api/v0/conversations', { key: stranger.key, body: { characterId } })).body.id}`;
    expect((await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'hello' } })).status).toBe(200);
    expect((await api.call('POST', `${route}/regenerate`, { key: stranger.key, body: {} })).status).toBe(200);
    const before = (await api.call('GET', route, { key: stranger.key })).body.messages;
    expect(before).toHaveLength(2);

    await setPublic(characterId, false);
    const asked = chatRequests();
    expectPrivate(await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'still there?' } }));
    expectPrivate(await api.call('POST', `${route}/chat/stream`, { key: stranger.key, body: { data: 'still there?' } }));
    expectPrivate(await api.call('POST', `${route}/regenerate`, { key: stranger.key, body: {} }));
    expectPrivate(await api.call('POST', `${route}/regenerate/stream`, { key: stranger.key, body: {} }));
    expectPrivate(await api.call('POST', `${route}/messages/${before[1].id}/swipe`, { key: stranger.key, body: { index: 0 } }));
    // The admin acts for the conversation's people: refused alike.
    expectPrivate(await api.call('POST', `${route}/chat`, { body: { data: 'admin here' } }));
    expect(chatRequests()).toBe(asked);
    // Nothing was stored, and the conversation can still be read.
    const after = await api.call('GET', route, { key: stranger.key });
    expect(after.status).toBe(200);
    expect(after.body.messages).toEqual(before);

    // Its owner's own conversation with it goes on; made public again, so does the stranger's.
    const own = `/api/v0/conversations/${(await api.call('POST', '/api/v0/conversations', { key: owner.key, body: { characterId } })).body.id}`;
    expect((await api.call('POST', `${own}/chat`, { key: owner.key, body: { data: 'just us' } })).status).toBe(200);
    await setPublic(characterId, true);
    expect((await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'back?' } })).status).toBe(200);
  });

  it('refuses it in a stranger’s scene while the scene’s other characters go on answering', async () => {
    const characterId = (await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name: 'Guest Gwen', is_public: true } })).body.character.id as string;
    const route = `/api/v0/conversations/${(await api.call('POST', '/api/v0/conversations', { key: stranger.key, body: { characterId: stranger.characterId } })).body.id}`;
    expect((await api.call('POST', `${route}/speakers`, { key: stranger.key, body: { characterId } })).status).toBe(200);
    expect((await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'hello Gwen', characterId } })).status).toBe(200);

    await setPublic(characterId, false);
    expectPrivate(await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'Gwen?', characterId } }));
    // The newest reply is Gwen's: writing it again would be hers.
    expectPrivate(await api.call('POST', `${route}/regenerate`, { key: stranger.key, body: {} }));
    expect((await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'and you?' } })).status).toBe(200);
  });

  it('lets it answer where its owner takes part, once the owner accepted to: being invited is not enough', async () => {
    const characterId = (await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name: 'Picky Pia', is_public: true } })).body.character.id as string;
    const route = `/api/v0/conversations/${(await api.call('POST', '/api/v0/conversations', { key: stranger.key, body: { characterId } })).body.id}`;
    await setPublic(characterId, false);
    expect((await api.call('POST', `${route}/speakers`, { key: stranger.key, body: { accountId: owner.id } })).status).toBe(202);
    expectPrivate(await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'Pia?' } }));
    expect((await api.call('POST', `${route}/speakers`, { key: owner.key, body: { accountId: owner.id } })).status).toBe(200);
    expect((await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'Pia, your owner is here.' } })).status).toBe(200);
    // Once the owner leaves, it stops again.
    expect((await api.call('DELETE', `${route}/speakers/${owner.id}`, { key: owner.key })).status).toBe(200);
    expectPrivate(await api.call('POST', `${route}/chat`, { key: stranger.key, body: { data: 'Pia?' } }));
  });

  it('stores no reply once the character was made private while it was being written (checked in the storing transaction)', async () => {
    const characterId = (await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name: 'Racing Rita', is_public: true } })).body.character.id as string;
    const conversationId = (await api.call('POST', '/api/v0/conversations', { key: stranger.key, body: { characterId } })).body.id as string;
    await setPublic(characterId, false);
    // What `Chat` does once the reply is written: the store refuses it now, whatever was checked before.
    const store = await openSqlStore(`sqlite://${path.join(api.dataDir, 'likeness.sqlite')}`);
    try {
      const conversations = new Conversations(store, {} as Characters, createSystemClock(), createRandomIds());
      const reply = { content: 'A secret.', mimeType: 'text/plain', participantId: characterId, participantType: 'character' as const, file: null };
      await expect(conversations.appendMessage(conversationId, reply)).rejects.toMatchObject({ code: 'CHARACTER_PRIVATE' });
      expect(await conversations.messages(conversationId)).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
