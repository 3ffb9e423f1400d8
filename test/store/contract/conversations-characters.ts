import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { characterRecord, messageRecord } from '../repository-fixtures.js';
import { type ContractContext, outcomes } from './contract-context.js';

/** Conversations, messages, characters and memories: one agreed order, no lost message, limited search. */
export function conversationsAndCharactersContract(context: ContractContext): void {
  const { createAccount } = context;
  // The stores are opened in the suite's beforeAll; read them when a test runs.
  let store: RepositoryStore;
  let other: RepositoryStore;
  beforeEach(() => {
    store = context.store();
    other = context.other();
  });

  describe('conversations and messages', () => {
    const openConversation = async () => {
      const { account, character } = await createAccount('talker');
      const now = Date.now() * 1000;
      const conversation = await store.conversations.create(
        { id: randomUUID(), accountId: account.id, characterId: character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null },
        account.id,
      );
      return { account, character, conversation };
    };

    it('stores every concurrent append once, in one order every store agrees on', async () => {
      const { account, conversation } = await openConversation();
      const appended = await Promise.all(
        Array.from({ length: 100 }, (_, index) =>
          (index % 2 ? other : store).conversations.append(conversation.id, messageRecord(account.id, `message ${index}`)),
        ),
      );
      const fromStore = await store.conversations.messages(conversation.id);
      const fromOther = await other.conversations.messages(conversation.id);
      expect(fromStore).toHaveLength(100);
      expect(fromOther).toEqual(fromStore);
      expect(new Set(fromStore.map((message) => message.content)).size).toBe(100);
      const positions = fromStore.map((message) => message.position);
      expect(positions).toEqual([...positions].sort((left, right) => left - right));
      expect(new Set(positions).size).toBe(100);
      // Each append learned the position the readers see.
      const byId = new Map(fromStore.map((message) => [message.id, message.position]));
      for (const message of appended) expect(byId.get(message.id)).toBe(message.position);
      expect(await other.conversations.countMessages(conversation.id)).toBe(100);
    });

    it('gives every message a created time no earlier than the one before it, whatever clock it came with', async () => {
      const { account, conversation } = await openConversation();
      const base = Date.now() * 1000;
      // A clock behind the conversation's newest message (another process's, or an append that
      // took the pool late) stores the newest time, not its own.
      const first = await store.conversations.append(conversation.id, { ...messageRecord(account.id, 'first'), createdMicros: base + 5_000_000 });
      const late = await other.conversations.append(conversation.id, { ...messageRecord(account.id, 'late'), createdMicros: base });
      const later = await store.conversations.append(conversation.id, { ...messageRecord(account.id, 'later'), createdMicros: base + 6_000_000 });
      expect(first.createdMicros).toBe(base + 5_000_000);
      expect(late.createdMicros).toBe(base + 5_000_000);
      expect(later.createdMicros).toBe(base + 6_000_000);
      // Concurrent appends with scattered clocks: read oldest first, the times never go back.
      await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          (index % 2 ? other : store).conversations.append(conversation.id, { ...messageRecord(account.id, `m${index}`), createdMicros: base + 6_000_000 + ((index * 7919) % 40) * 1000 }),
        ),
      );
      const times = (await other.conversations.messages(conversation.id)).map((message) => message.createdMicros);
      expect(times).toEqual([...times].sort((left, right) => left - right));
    });

    it('reads ranges and the newest page oldest first', async () => {
      const { account, conversation } = await openConversation();
      for (let index = 0; index < 10; index++) await store.conversations.append(conversation.id, messageRecord(account.id, `m${index}`));
      const all = await store.conversations.messages(conversation.id);
      const newest = await store.conversations.messages(conversation.id, { newest: true, limit: 3 });
      expect(newest.map((message) => message.content)).toEqual(['m7', 'm8', 'm9']);
      const older = await store.conversations.messages(conversation.id, { beforePosition: newest[0]!.position, newest: true, limit: 3 });
      expect(older.map((message) => message.content)).toEqual(['m4', 'm5', 'm6']);
      const after = await store.conversations.messages(conversation.id, { afterPosition: all[1]!.position, limit: 2 });
      expect(after.map((message) => message.content)).toEqual(['m2', 'm3']);
      expect((await store.conversations.lastMessage(conversation.id))?.content).toBe('m9');
    });

    it('keeps the finish reason, a regenerated reply as an alternative of its message, and continues after a clear', async () => {
      const { account, character, conversation } = await openConversation();
      await store.conversations.append(conversation.id, messageRecord(account.id, 'hello'));
      const reply = await store.conversations.append(conversation.id, {
        ...messageRecord(character.id, 'first reply'),
        participantType: 'character',
        finishReason: 'length',
      });
      expect(reply.finishReason).toBe('length');
      const before = await other.conversations.snapshot(conversation.id);
      expect(before).toMatchObject({ lastPosition: reply.position, newestRevision: '1:0' });
      const regenerated = await other.conversations.addAlternative(conversation.id, reply.id, { id: randomUUID(), content: 'second reply', finishReason: 'stop', createdMicros: Date.now() * 1000 });
      expect(regenerated).toMatchObject({ id: reply.id, position: reply.position, content: 'second reply', finishReason: 'stop', chosenIndex: 1 });
      expect((await store.conversations.messages(conversation.id)).map((message) => message.content)).toEqual(['hello', 'second reply']);
      // The snapshot moved with the new alternative: same list only at the same position and revision.
      const after = await store.conversations.snapshot(conversation.id);
      expect(after).toMatchObject({ lastPosition: reply.position, newestRevision: '2:1' });
      expect(after.messages.map((message) => message.content)).toEqual(['hello', 'second reply']);
      expect(after.messages[1]!.alternatives.map((alternative) => [alternative.content, alternative.finishReason])).toEqual([
        ['first reply', 'length'],
        ['second reply', 'stop'],
      ]);
      expect(before.messages.map((message) => message.content)).toEqual(['hello', 'first reply']);
      await store.conversations.setSummary(conversation.id, 'They said hello.', regenerated.position);
      expect(await other.conversations.get(conversation.id)).toMatchObject({ summary: 'They said hello.', summaryThroughPosition: regenerated.position });
      await store.conversations.clear(conversation.id, Date.now() * 1000);
      expect(await store.conversations.messages(conversation.id)).toEqual([]);
      expect(await store.conversations.get(conversation.id)).toMatchObject({ summary: null, summaryThroughPosition: null });
      const next = await store.conversations.append(conversation.id, messageRecord(account.id, 'again'));
      expect(next.position).toBeGreaterThan(regenerated.position);
    });

    it('adds speakers once, in the order they joined, and lists conversations newest first', async () => {
      const { account, conversation } = await openConversation();
      const guest = (await createAccount('guest')).account;
      const results = await Promise.all([
        store.conversations.addSpeaker(conversation.id, guest.id, 1),
        other.conversations.addSpeaker(conversation.id, guest.id, 2),
      ]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await other.conversations.speakers(conversation.id)).toEqual([account.id, guest.id]);
      const second = await store.conversations.create({ ...conversation, id: randomUUID() }, account.id);
      expect((await store.conversations.listFor(account.id, { limit: 50 })).conversations.map((each) => each.id)).toEqual([second.id, conversation.id]);
      expect((await store.conversations.listFor(guest.id, { limit: 50 })).conversations.map((each) => each.id)).toEqual([conversation.id]);
    });

    it('pages the conversations an account speaks in, the one joined last first, and lets a speaker go', async () => {
      const { account, conversation } = await openConversation();
      const opened = [conversation.id];
      for (let index = 0; index < 4; index++) opened.push((await store.conversations.create({ ...conversation, id: randomUUID() }, account.id)).id);
      const listed: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await (pages % 2 ? other : store).conversations.listFor(account.id, { limit: 2, ...(cursor ? { cursor } : {}) });
        listed.push(...page.conversations.map((each) => each.id));
        cursor = page.nextCursor ?? undefined;
        pages += 1;
      } while (cursor && pages < 10);
      expect(listed).toEqual([...opened].reverse());
      expect(pages).toBe(3);

      const guest = (await createAccount('leaver')).account;
      await store.conversations.addSpeaker(conversation.id, guest.id, 1);
      expect(await other.conversations.removeSpeaker(conversation.id, guest.id)).toBe(true);
      expect(await store.conversations.removeSpeaker(conversation.id, guest.id)).toBe(false);
      expect(await store.conversations.speakers(conversation.id)).toEqual([account.id]);
      expect((await store.conversations.listFor(guest.id, { limit: 50 })).conversations).toEqual([]);
    });

    it('keeps invitations until answered, once per conversation, never past the limit however many processes invite', async () => {
      const { account, conversation } = await openConversation();
      const invited = (await createAccount('invitee')).account;
      const conversations = [conversation.id];
      for (let index = 0; index < 5; index++) conversations.push((await store.conversations.create({ ...conversation, id: randomUUID() }, account.id)).id);
      const invitation = (conversationId: string, createdMicros = 1) => ({ conversationId, accountId: invited.id, invitedByAccountId: account.id, createdMicros });
      // The same conversation twice is one invitation; five conversations at once under a limit of 3 pass 3.
      expect(await store.invitations.invite(invitation(conversations[0]!, 1), 3)).toEqual(invitation(conversations[0]!, 1));
      expect(await other.invitations.invite(invitation(conversations[0]!, 2), 3)).toEqual(invitation(conversations[0]!, 1));
      const { values, codes } = await outcomes(conversations.slice(1).map((id, index) => (index % 2 ? other : store).invitations.invite(invitation(id, 10 + index), 3)));
      expect(values).toHaveLength(2);
      expect(codes).toEqual(Array(3).fill('INVITATION_LIMIT_REACHED'));
      const waiting = await other.invitations.listFor(invited.id);
      expect(waiting.map((each) => each.conversationId)[0]).toBe(conversations[0]);
      expect(waiting).toHaveLength(3);
      await expect(store.invitations.invite({ ...invitation(randomUUID()), accountId: randomUUID() }, 3)).rejects.toMatchObject({ code: 'NOT_FOUND' });

      // Accepting makes a speaker once; declining removes; neither twice.
      expect(await store.invitations.accept(conversations[0]!, invited.id, 5)).toBe(true);
      expect(await other.invitations.accept(conversations[0]!, invited.id, 6)).toBe(false);
      expect(await store.conversations.speakers(conversations[0]!)).toEqual([account.id, invited.id]);
      expect(await store.invitations.remove(waiting[1]!.conversationId, invited.id)).toBe(true);
      expect(await other.invitations.remove(waiting[1]!.conversationId, invited.id)).toBe(false);
      expect((await store.invitations.listFor(invited.id)).map((each) => each.conversationId)).toEqual([waiting[2]!.conversationId]);
    });

    it('reads a conversation state in one call: character, speakers in order, and the last position', async () => {
      const { account, character, conversation } = await openConversation();
      expect(await other.conversations.state(randomUUID())).toBeUndefined();
      const empty = await other.conversations.state(conversation.id);
      expect(empty).toMatchObject({ conversation: { id: conversation.id, accountId: account.id, characterId: character.id }, lastPosition: null });
      expect(empty?.character).toEqual(await store.characters.get(character.id));
      expect(empty?.speakers).toEqual([await store.accounts.get(account.id)]);
      const guest = (await createAccount('guest')).account;
      await store.conversations.addSpeaker(conversation.id, guest.id, 1);
      const first = await store.conversations.append(conversation.id, messageRecord(account.id, 'one'));
      const reply = await store.conversations.append(conversation.id, { ...messageRecord(character.id, 'two'), participantType: 'character' });
      const state = await other.conversations.state(conversation.id);
      expect(state?.speakers.map((speaker) => speaker.id)).toEqual([account.id, guest.id]);
      expect(state?.lastPosition).toBe(reply.position);
      expect(state?.lastPosition).toBeGreaterThan(first.position);
      expect(state?.newestRevision).toBe('1:0');
      // A regenerated reply keeps the last position and changes the newest revision; a clear empties both.
      await other.conversations.addAlternative(conversation.id, reply.id, { id: randomUUID(), content: 'three', createdMicros: 1 });
      expect(await store.conversations.state(conversation.id)).toMatchObject({ lastPosition: reply.position, newestRevision: '2:1' });
      await store.conversations.chooseAlternative(conversation.id, reply.id, 0);
      expect(await store.conversations.state(conversation.id)).toMatchObject({ lastPosition: reply.position, newestRevision: '2:0' });
      await store.conversations.setSummary(conversation.id, 'Earlier: one.', first.position);
      expect((await other.conversations.state(conversation.id))?.conversation).toMatchObject({ summary: 'Earlier: one.', summaryThroughPosition: first.position });
      await store.conversations.clear(conversation.id, Date.now() * 1000);
      expect(await other.conversations.state(conversation.id)).toMatchObject({ lastPosition: null, newestRevision: null, conversation: { summary: null } });
      expect(await other.conversations.snapshot(conversation.id)).toEqual({ lastPosition: null, newestRevision: null, messages: [] });
    });

    it('puts characters into a conversation once, in join order, the conversation\'s own first; takes them out again', async () => {
      const { account, character, conversation } = await openConversation();
      expect(await other.conversations.characters(conversation.id)).toEqual([character.id]);
      const guest = await store.characters.create(characterRecord(account.id, 'Guest star'));
      const third = await store.characters.create(characterRecord(account.id, 'Third'));
      const added = await Promise.all([
        store.conversations.addCharacter(conversation.id, guest.id, 1),
        other.conversations.addCharacter(conversation.id, guest.id, 2),
      ]);
      expect(added.filter(Boolean)).toHaveLength(1);
      expect(await other.conversations.addCharacter(conversation.id, third.id, 3)).toBe(true);
      expect(await store.conversations.characters(conversation.id)).toEqual([character.id, guest.id, third.id]);
      const state = await other.conversations.state(conversation.id);
      expect(state?.characters).toEqual([await store.characters.get(character.id), guest, third]);
      expect(state?.character.id).toBe(character.id);

      expect(await other.conversations.removeCharacter(conversation.id, guest.id)).toBe(true);
      expect(await store.conversations.removeCharacter(conversation.id, guest.id)).toBe(false);
      expect(await store.conversations.characters(conversation.id)).toEqual([character.id, third.id]);
      expect((await store.conversations.state(conversation.id))?.characters.map((each) => each.id)).toEqual([character.id, third.id]);
      // Back again: it joins last.
      await store.conversations.addCharacter(conversation.id, guest.id, 4);
      expect(await other.conversations.characters(conversation.id)).toEqual([character.id, third.id, guest.id]);
      await expect(store.conversations.addCharacter(randomUUID(), guest.id, 5)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(store.conversations.addCharacter(conversation.id, randomUUID(), 5)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('refuses a message for a conversation that does not exist', async () => {
      await expect(store.conversations.append(randomUUID(), messageRecord('nobody', 'x'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });

  describe('characters and memories', () => {
    it('finds own characters by substring and public ones by prefix, never private ones of others, at most the limit', async () => {
      const tag = randomUUID().slice(0, 6);
      const owner = await createAccount('owner');
      const stranger = await createAccount('stranger');
      const own = await store.characters.create(characterRecord(owner.account.id, `My ${tag} Friend`));
      await store.characters.create(characterRecord(stranger.account.id, `${tag} Secret`));
      const publicOnes = [];
      for (let index = 0; index < 5; index++) {
        publicOnes.push(await store.characters.create(characterRecord(stranger.account.id, `${tag.toUpperCase()} Public ${index}`, { isPublic: true })));
      }
      const found = await other.characters.search(tag, { accountId: owner.account.id, limit: 4 });
      expect(found.map((character) => character.id)).toEqual([own.id, ...publicOnes.slice(0, 3).map((character) => character.id)]);
      const all = await other.characters.search(tag, { accountId: owner.account.id, limit: 50 });
      expect(all).toHaveLength(6);
      expect(await store.characters.search('%', { accountId: owner.account.id, limit: 10 })).toEqual([]);
      const admin = await store.characters.search(tag, { accountId: null, limit: 50 });
      expect(admin).toHaveLength(6);
    });

    it('updates a character and its name in search', async () => {
      const owner = await createAccount('rename');
      const name = `Zed${randomUUID().slice(0, 6)}`;
      await store.characters.update({ ...owner.character, name, isPublic: true });
      const stranger = await createAccount('looker');
      expect((await other.characters.search(name.toLowerCase(), { accountId: stranger.account.id, limit: 5 })).map((each) => each.id)).toEqual([
        owner.character.id,
      ]);
    });

    it('refuses text holding a NUL (U+0000) whole, never storing a part of it', async () => {
      const { account, character } = await createAccount('nul');
      const conversation = await store.conversations.create(
        { id: randomUUID(), accountId: account.id, characterId: character.id, createdMicros: 1, updatedMicros: 1, summary: null, summaryThroughPosition: null },
        account.id,
      );
      const refused = await outcomes<unknown>([
        store.conversations.append(conversation.id, messageRecord(account.id, 'before\u0000after')),
        other.characters.update({ ...character, description: 'A quiet\u0000 cut' }),
        store.memories.add(character.id, { id: randomUUID(), text: 'Likes\u0000tea', createdMicros: 1 }, 10),
      ]);
      expect(refused.values).toEqual([]);
      expect(refused.codes).toEqual(['VALIDATION_FAILED', 'VALIDATION_FAILED', 'VALIDATION_FAILED']);
      expect(await other.conversations.messages(conversation.id)).toEqual([]);
      expect((await other.characters.get(character.id))?.description).toBe(character.description);
      expect(await other.memories.list(character.id)).toEqual([]);
    });

    it('holds at most the maximum of memories under concurrent adds', async () => {
      const { character } = await createAccount('memory');
      const adds = Array.from({ length: 12 }, (_, index) =>
        (index % 2 ? other : store).memories.add(character.id, { id: randomUUID(), text: `fact ${index}`, createdMicros: index }, 5),
      );
      const { values, codes } = await outcomes(adds);
      expect(values).toHaveLength(5);
      expect(codes).toEqual(Array(7).fill('CONFLICT'));
      const memories = await store.memories.list(character.id);
      expect(memories).toHaveLength(5);
      expect(await store.memories.remove(character.id, memories[0]!.id)).toBe(true);
      expect(await store.memories.remove(character.id, memories[0]!.id)).toBe(false);
    });
  });
}
