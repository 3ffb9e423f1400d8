/**
 * `VoiceCalls.keepHeard`: of a reply spoken in a call, only what was heard stays, on a real
 * SQLite store, in both of its cases (the reply already stored, or stopped before it was).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.js';
import type { Reply } from '../../src/core/chat.js';
import type { StoredMessage } from '../../src/core/repositories.js';
import { INTERRUPTED, UNHEARD } from '../../src/core/voice-calls.js';
import { type CoreHarness, startCoreHarness } from './images/core-harness.js';

const STORY = 'Once upon a time there was a harbour. Its lights burned all night. Every boat came home.';

describe('VoiceCalls.keepHeard', () => {
  let harness: CoreHarness;
  let actor: Actor;
  let characterId: string;
  let conversationId: string;

  beforeAll(async () => {
    harness = await startCoreHarness();
    const account = await harness.account(0);
    actor = account.actor;
    characterId = account.characterId;
    conversationId = (await harness.core.conversations.create(actor, account.accountId, characterId)).id;
  });
  afterAll(() => harness.close());

  /** A person's turn, and a reply to it that settled as `done` (stored, or failed before it was). */
  const replyTo = async (done: (userMessage: StoredMessage) => Promise<StoredMessage>): Promise<Reply> => {
    const userMessage = await harness.core.chat.post(actor, conversationId, { text: 'Tell me a story.' });
    const settled = done(userMessage);
    settled.catch(() => undefined);
    return { userMessage, characterId, done: settled } as Partial<Reply> as Reply;
  };
  const storeWhole = () =>
    harness.core.conversations.appendMessage(conversationId, { content: STORY, finishReason: 'stop', mimeType: 'text/plain', participantId: characterId, participantType: 'character', file: null });
  const newest = async () => (await harness.core.conversations.messages(conversationId, { newest: true, limit: 1 }))[0]!;

  it('chooses the heard part of a reply already stored, marked interrupted, the whole left behind it', async () => {
    const reply = await replyTo(storeWhole);
    const kept = await harness.core.voiceCalls.keepHeard(reply, 'Once upon a time there was a harbour.');

    const last = await newest();
    expect(kept?.id).toBe(last.id);
    expect(last).toMatchObject({ content: 'Once upon a time there was a harbour.', finishReason: INTERRUPTED, participantType: 'character' });
    expect(last.alternatives.map((alternative) => alternative.content)).toEqual([STORY, 'Once upon a time there was a harbour.']);
  });

  it('appends a reply stopped while still being written, as far as it was heard, marked interrupted', async () => {
    const reply = await replyTo(() => Promise.reject(new DOMException('talked over', 'AbortError')));
    const kept = await harness.core.voiceCalls.keepHeard(reply, 'Once upon a time ');

    const last = await newest();
    expect(kept?.id).toBe(last.id);
    expect(last.position).toBeGreaterThan(reply.userMessage.position);
    expect(last).toMatchObject({ content: 'Once upon a time', finishReason: INTERRUPTED, participantType: 'character', participantId: characterId });
    expect(last.alternatives).toHaveLength(1);
  });

  it('stores nothing of a reply stopped before it was stored when nothing was heard', async () => {
    const reply = await replyTo(() => Promise.reject(new Error('the engine failed')));
    expect(await harness.core.voiceCalls.keepHeard(reply, '  ', UNHEARD)).toBeUndefined();
    expect((await newest()).id).toBe(reply.userMessage.id);
  });

  it('marks a reply whose speech failed unheard, keeping none of its text chosen when none was heard', async () => {
    const reply = await replyTo(storeWhole);
    await harness.core.voiceCalls.keepHeard(reply, '', UNHEARD);

    expect(await newest()).toMatchObject({ content: '…', finishReason: UNHEARD });
  });
});
