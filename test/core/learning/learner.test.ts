/**
 * The learner over a real SQLite store, a clock the test moves and an engine that answers as
 * the fake extractor does: how a batch is worked through when parts of it fail, and what is
 * left out of learning.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Characters } from '../../../src/core/characters.js';
import { Conversations } from '../../../src/core/conversations.js';
import { LearningGate } from '../../../src/core/learning/learning-gate.js';
import { LearningSettings } from '../../../src/core/learning/learning-settings.js';
import { Learner, defaultLearnerOptions } from '../../../src/core/learning/learner.js';
import type { ChatModel, ChatRequest, ChatUsage, Logger } from '../../../src/core/ports.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { openSqlStore } from '../../../src/store/sql/sql-store.js';
import { extractionAnswer } from '../../fakes/fake-extractor.js';
import { characterRecord, newAccountRecords, uniqueUsername } from '../../store/repository-fixtures.js';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export interface LearnerBench {
  store: RepositoryStore;
  clock: { millis: number; nowMillis(): number; nowMicros(): number };
  /** Every extraction request, with the character it was for. */
  requests: ChatRequest[];
  /** Answers a request instead of the fake extractor when it returns a text. */
  answer: (request: ChatRequest) => Promise<string | undefined> | string | undefined;
  /** The usage the engine reports for a request; none by default. */
  usage: (request: ChatRequest) => ChatUsage | undefined;
  learner: Learner;
}

export async function openLearnerBench(directory: string, options: Partial<typeof defaultLearnerOptions> = {}): Promise<LearnerBench> {
  const store = await openSqlStore(`sqlite://${path.join(directory, 'store.db')}`);
  const clock = { millis: Date.UTC(2026, 10, 26, 12), nowMillis: () => clock.millis, nowMicros: () => clock.millis * 1000 };
  const bench: LearnerBench = { store, clock, requests: [], answer: () => undefined, usage: () => undefined, learner: undefined as unknown as Learner };
  const model: ChatModel = {
    provider: 'fake',
    modelId: 'fake',
    async generate(request) {
      bench.requests.push(request);
      const text = (await bench.answer(request)) ?? JSON.parse(JSON.stringify(extractionAnswer({ messages: request.messages.map((message) => ({ role: message.role, content: String(message.content) })) }))).reply;
      const usage = bench.usage(request);
      return { text, finishReason: 'stop', ...(usage ? { usage } : {}) };
    },
    stream() {
      throw new Error('not used');
    },
  };
  const tokens = { exact: false, count: async (texts: readonly string[]) => texts.map((text) => Math.ceil(text.length / 4)), observe() {} };
  bench.learner = new Learner(store, model, tokens, clock, { uuid: randomUUID }, silent, 'worker', { ...defaultLearnerOptions, ...options });
  return bench;
}

/** A person and an owner with two characters, both in one conversation (a scene) the person opened. */
export async function scene(store: RepositoryStore, clock: { nowMicros(): number }) {
  const owner = newAccountRecords(uniqueUsername('owner'));
  const person = newAccountRecords(uniqueUsername('ana'));
  await store.accounts.create(owner);
  await store.accounts.create(person);
  const second = await store.characters.create(characterRecord(owner.account.id, 'Bard'));
  const conversation = await store.conversations.create(
    { id: randomUUID(), accountId: person.account.id, characterId: owner.character.id, createdMicros: clock.nowMicros(), updatedMicros: clock.nowMicros(), summary: null, summaryThroughPosition: null },
    person.account.id,
  );
  await store.conversations.addCharacter(conversation.id, second.id, clock.nowMicros());
  const say = (participantId: string, content: string, participantType: 'account' | 'character' = 'account') =>
    store.conversations.append(conversation.id, { id: randomUUID(), content, mimeType: 'text/plain', participantId, participantType, createdMicros: clock.nowMicros(), file: null });
  return { owner, person, first: owner.character, second, conversationId: conversation.id, say };
}

describe('the learner', () => {
  let directory: string;
  let bench: LearnerBench;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-learner-'));
    bench = await openLearnerBench(directory);
  });
  afterEach(async () => {
    await bench.learner.stop();
    await bench.store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it("retries only the characters of a scene whose part failed: the others' facts are not asked for again", async () => {
    const { store, clock } = bench;
    const { person, first, second, conversationId, say } = await scene(store, clock);
    const said = await say(person.account.id, 'My sister is called Mia.');
    await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis });
    const forCharacter = (request: ChatRequest) => (String(request.messages[0]?.content).includes(' and Bard,') ? second.id : first.id);
    // The second character's extraction fails once.
    let failures = 1;
    bench.answer = (request) => (forCharacter(request) === second.id && failures-- > 0 ? 'not json' : undefined);
    expect(await bench.learner.runOnce()).toBe(true);
    expect(bench.requests.map(forCharacter)).toEqual([first.id, second.id]);
    expect((await store.learnedMemories.about(person.account.id)).map((memory) => memory.characterId)).toEqual([first.id]);

    clock.millis += defaultLearnerOptions.maxBackoffMs;
    expect(await bench.learner.runOnce()).toBe(true);
    // Only the second character is asked again.
    expect(bench.requests.map(forCharacter)).toEqual([first.id, second.id, second.id]);
    expect((await store.learnedMemories.about(person.account.id)).map((memory) => memory.characterId).sort()).toEqual([first.id, second.id].sort());
    expect(await bench.learner.runOnce()).toBe(false);
  });

  it('tries a failed batch again after 30 s, then 60 s, doubling: the attempt that failed is the first', async () => {
    const { store, clock } = bench;
    const { person, conversationId, say } = await scene(store, clock);
    const said = await say(person.account.id, 'My sister is called Mia.');
    const queued = (await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis }))!;
    bench.answer = () => 'not json';
    const waits: number[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const failedAt = clock.millis;
      expect(await bench.learner.runOnce()).toBe(true);
      const batch = (await store.memoryBatches.get(queued.id))!;
      expect(batch).toMatchObject({ status: 'queued', attempts: attempt + 1 });
      waits.push(batch.runAfterMillis - failedAt);
      // Not due a moment before its time; due at it.
      clock.millis = batch.runAfterMillis - 1;
      expect(await bench.learner.runOnce()).toBe(false);
      clock.millis = batch.runAfterMillis;
    }
    expect(waits).toEqual([30_000, 60_000, 120_000]);
  });

  it('never stores a secret, whatever the engine proposes, and withholds it from the engine (issue 28, item 13)', async () => {
    const { store, clock } = bench;
    const { person, first, conversationId, say } = await scene(store, clock);
    const name = person.account.username;
    await say(person.account.id, 'My secret password is tangerine-42');
    await say(person.account.id, 'My card is 4111 1111 1111 1111 and my PIN is 4821.');
    const said = await say(person.account.id, 'My sister is called Mia.');
    await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis });
    // An engine that proposes the secrets anyway, as they were said and in its own words.
    const fact = (message: number, text: string) => ({ message, fact: `${name}${text}`, firstPerson: `I${text}`, importance: 3, replaces: null });
    bench.answer = () =>
      JSON.stringify({
        facts: [
          fact(1, "'s secret password is tangerine-42."),
          fact(1, ' logs in with Tangerine-42.'),
          fact(2, ' pays with the card 4111-1111-1111-1111.'),
          fact(2, ' unlocks things with 4821.'),
          fact(2, ' has a bank card.'),
          fact(3, "'s sister is called Mia."),
        ],
      });
    expect(await bench.learner.runOnce()).toBe(true);
    const sent = bench.requests.filter((request) => String(request.messages[0]?.content).includes(first.name)).map((request) => request.messages.map((message) => String(message.content)).join('\n'));
    expect(sent.length).toBeGreaterThan(0);
    for (const text of sent) {
      expect(text).not.toContain('tangerine-42');
      expect(text).not.toContain('4111 1111');
      expect(text).not.toContain('4821');
      expect(text).toContain('My secret password is [withheld]');
    }
    const stored = (await store.learnedMemories.about(person.account.id)).filter((memory) => memory.characterId === first.id).map((memory) => memory.text);
    expect(stored.sort()).toEqual([`${name} has a bank card.`, `${name}'s sister is called Mia.`]);
  });

  it('never learns what was said while learning was off, whatever the clock of the process that stored it said (issue 28, item 15)', async () => {
    const { store, clock } = bench;
    const { person, first, second, conversationId } = await scene(store, clock);
    // The process storing messages runs a minute ahead of the one recording the person's choice.
    const ahead = { nowMillis: () => clock.millis + 60_000, nowMicros: () => (clock.millis + 60_000) * 1000 };
    const conversations = new Conversations(store, undefined as unknown as Characters, ahead, { uuid: randomUUID });
    conversations.learningGate = new LearningGate(store, true);
    const settings = new LearningSettings(store);
    const say = (content: string) => conversations.appendMessage(conversationId, { content, mimeType: 'text/plain', participantId: person.account.id, participantType: 'account', file: null });
    await settings.setChoice(person.account.id, { off: true, offForCharacterIds: [] }, clock.nowMicros());
    await say('My dog is called Rex.');
    clock.millis += 1_000;
    await settings.setChoice(person.account.id, { off: false, offForCharacterIds: [second.id] }, clock.nowMicros());
    await say('My hat is called Fez.');
    clock.millis += 1_000;
    await settings.setChoice(person.account.id, { off: false, offForCharacterIds: [] }, clock.nowMicros());
    const said = await say('My cat is called Tom.');
    await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis });
    expect(await bench.learner.runOnce()).toBe(true);
    const learned = await store.learnedMemories.about(person.account.id);
    const by = (characterId: string) => learned.filter((memory) => memory.characterId === characterId).map((memory) => memory.text.replace(`${person.account.username}'s `, '')).sort();
    // Fez was said while learning was off for the second character only: the first learns it.
    expect(by(first.id)).toEqual(['cat is called Tom.', 'hat is called Fez.']);
    expect(by(second.id)).toEqual(['cat is called Tom.']);
    expect(bench.requests.map((request) => request.messages.map((message) => String(message.content)).join()).join()).not.toContain('Rex');
  });

  it('charges what the engine reports it used, not the whole reservation, to the character and the person (issue 28, item 16)', async () => {
    const { store, clock } = bench;
    const { person, first, second, conversationId, say } = await scene(store, clock);
    const said = await say(person.account.id, 'My sister is called Mia.');
    await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis });
    bench.usage = () => ({ promptTokens: 620, completionTokens: 56 });
    expect(await bench.learner.runOnce()).toBe(true);
    const day = new Date(clock.millis).toISOString().slice(0, 10);
    for (const character of [first, second]) {
      expect(await store.learningPerPerson.spent(day, character.id)).toBe(676);
      expect(await store.learningPerPerson.spent(day, character.id, person.account.id)).toBe(676);
    }
  });

  it("keeps a talkative person's lines out once their share of the day is spent, and goes on learning from the others (issue 28, item 16)", async () => {
    const perPerson = await openLearnerBench(directory, { dailyTokensPerPerson: 1_200, maxAnswerTokens: 200 });
    const { store, clock } = perPerson;
    const { person, owner } = await scene(store, clock);
    const bo = newAccountRecords(uniqueUsername('bo'));
    await store.accounts.create(bo);
    const talk = await store.conversations.create(
      { id: randomUUID(), accountId: person.account.id, characterId: owner.character.id, createdMicros: clock.nowMicros(), updatedMicros: clock.nowMicros(), summary: null, summaryThroughPosition: null },
      person.account.id,
    );
    await store.conversations.addSpeaker(talk.id, bo.account.id, clock.nowMicros());
    const say = (accountId: string, content: string) => store.conversations.append(talk.id, { id: randomUUID(), content, mimeType: 'text/plain', participantId: accountId, participantType: 'account', createdMicros: clock.nowMicros(), file: null });
    const learn = async (said: { position: number }) => {
      await store.memoryBatches.enqueue(talk.id, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis });
      expect(await perPerson.learner.runOnce()).toBe(true);
    };
    // The engine reports what it used: the request's words, as a tokenizer would count them.
    perPerson.usage = (request) => ({ promptTokens: request.messages.reduce((sum, message) => sum + String(message.content).split(/\s+/).length, 0), completionTokens: 40 });
    const filler = ' We walked along the harbour and talked about the boats.'.repeat(12);
    await say(person.account.id, 'My sister is called Mia.');
    await learn(await say(person.account.id, filler));
    const day = new Date(clock.millis).toISOString().slice(0, 10);
    const spentByAna = await store.learningPerPerson.spent(day, owner.character.id, person.account.id);
    expect(spentByAna).toBeGreaterThan(0);
    expect(spentByAna).toBeLessThan(1_000);
    for (const said of ['My boat is called Gull.', filler, filler]) await say(person.account.id, said);
    const asked = perPerson.requests.length;
    await learn(await say(bo.account.id, 'My dog is called Rex.'));
    // Ana's share of this batch would pass her 1,200: her lines stay out, Bo's are learned.
    const sent = perPerson.requests.slice(asked).map((request) => request.messages.map((message) => String(message.content)).join());
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain('Rex');
    expect(sent[0]).not.toContain('Gull');
    const texts = async (accountId: string) => (await store.learnedMemories.about(accountId)).map((memory) => memory.text.replace(/^[^']*'s /, ''));
    expect(await texts(bo.account.id)).toEqual(['dog is called Rex.']);
    expect(await texts(person.account.id)).toEqual(['sister is called Mia.']);
    expect(await store.learningPerPerson.spent(day, owner.character.id, person.account.id)).toBe(spentByAna);
    // Alone in a batch past her share, she waits for tomorrow, and is learned from then.
    for (const said of [filler, filler]) await say(person.account.id, said);
    const alone = (await store.memoryBatches.enqueue(talk.id, (await say(person.account.id, 'My hat is called Fez.')).position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis }))!;
    expect(await perPerson.learner.runOnce()).toBe(true);
    const tomorrow = Date.UTC(2026, 10, 27);
    expect(await store.memoryBatches.get(alone.id)).toMatchObject({ status: 'queued', runAfterMillis: tomorrow });
    clock.millis = tomorrow;
    expect(await perPerson.learner.runOnce()).toBe(true);
    expect(await texts(person.account.id)).toContain('hat is called Fez.');
    await perPerson.learner.stop();
    await perPerson.store.close();
  });

  it('stores nothing when the lease was lost while the engine answered, and leaves the batch to the worker that took it', async () => {
    const { store, clock } = bench;
    const { person, conversationId, say } = await scene(store, clock);
    const said = await say(person.account.id, 'My boat is called Gull.');
    const queued = (await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis }))!;
    // The engine takes longer than the lease, and meanwhile another worker takes the batch over.
    let takenOver = false;
    bench.answer = async () => {
      clock.millis += defaultLearnerOptions.leaseMs + 1;
      takenOver = (await store.memoryBatches.claim({ workerId: 'other', nowMillis: clock.millis, leaseMs: defaultLearnerOptions.leaseMs })) !== undefined;
      return undefined;
    };
    await bench.learner.runOnce();
    expect(takenOver).toBe(true);
    expect(await store.learnedMemories.about(person.account.id)).toEqual([]);
    expect(await store.memoryBatches.doneCharacters(queued.id)).toEqual([]);
    expect(await store.memoryBatches.get(queued.id)).toMatchObject({ status: 'running', leaseOwner: 'other' });
  });

  it('keeps its lease while the engine answers for longer than the lease: no other worker takes the batch, which is learned once', async () => {
    const { store, clock } = bench;
    const leaseMs = 90;
    const { person, conversationId, say } = await scene(store, clock);
    const said = await say(person.account.id, 'My boat is called Gull.');
    const queued = (await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis }))!;
    const short = await openLearnerBench(directory, { leaseMs });
    const attempts: Array<string | undefined> = [];
    short.answer = async () => {
      // The scene's first character's request is the slow one.
      if (attempts.length > 0) return undefined;
      // Twice the lease passes while the engine answers, in steps of two thirds of it; after each
      // step the lease has been renewed past the new time.
      for (let step = 0; step < 3; step++) {
        const before = (await store.memoryBatches.get(queued.id))!.leaseUntilMillis!;
        clock.millis += (leaseMs * 2) / 3;
        short.clock.millis = clock.millis;
        await vi.waitFor(async () => expect((await store.memoryBatches.get(queued.id))!.leaseUntilMillis!).toBeGreaterThan(Math.max(before, clock.millis)), { timeout: 60_000, interval: 5 });
        attempts.push((await store.memoryBatches.claim({ workerId: 'other', nowMillis: clock.millis, leaseMs }))?.id);
      }
      return undefined;
    };
    expect(await short.learner.runOnce()).toBe(true);
    expect(attempts).toEqual([undefined, undefined, undefined]);
    expect(await store.memoryBatches.get(queued.id)).toMatchObject({ status: 'done', attempts: 1 });
    // Each of the scene's two characters learned it once.
    const learned = await store.learnedMemories.about(person.account.id);
    expect(learned.map((memory) => memory.text)).toEqual([expect.stringContaining('Gull'), expect.stringContaining('Gull')]);
    expect(new Set(learned.map((memory) => memory.characterId)).size).toBe(2);
    await short.learner.stop();
    await short.store.close();
  });

  it("deletes old done batches when idle, keeping each conversation's newest so learning goes on where it stopped", async () => {
    const { store, clock } = bench;
    const { person, conversationId, say } = await scene(store, clock);
    const batches = [];
    for (const text of ['My sister is called Mia.', 'My boat is called Gull.']) {
      const said = await say(person.account.id, text);
      batches.push((await store.memoryBatches.enqueue(conversationId, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis }))!);
      expect(await bench.learner.runOnce()).toBe(true);
    }
    expect(await bench.learner.runOnce()).toBe(false);
    // Young yet: both stay.
    expect(await store.memoryBatches.get(batches[0]!.id)).toMatchObject({ status: 'done' });
    clock.millis += defaultLearnerOptions.keepDoneBatchesMs + 2 * 60 * 60_000;
    expect(await bench.learner.runOnce()).toBe(false);
    expect(await store.memoryBatches.get(batches[0]!.id)).toBeUndefined();
    expect(await store.memoryBatches.get(batches[1]!.id)).toMatchObject({ status: 'done' });
    const later = await say(person.account.id, 'I like rain.');
    expect(await store.memoryBatches.enqueue(conversationId, later.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis })).toMatchObject({ fromPosition: batches[1]!.throughPosition + 1 });
  });

  it("does not propose again, in other words, a memory the owner refused; a different fact still is", async () => {
    const { store, clock } = bench;
    const { owner, first } = await scene(store, clock);
    const talk = await store.conversations.create(
      { id: randomUUID(), accountId: owner.account.id, characterId: first.id, createdMicros: clock.nowMicros(), updatedMicros: clock.nowMicros(), summary: null, summaryThroughPosition: null },
      owner.account.id,
    );
    const say = async (content: string) => {
      const said = await store.conversations.append(talk.id, { id: randomUUID(), content, mimeType: 'text/plain', participantId: owner.account.id, participantType: 'account', createdMicros: clock.nowMicros(), file: null });
      await store.memoryBatches.enqueue(talk.id, said.position, { id: randomUUID(), createdMicros: clock.nowMicros(), runAfterMillis: clock.millis });
      expect(await bench.learner.runOnce()).toBe(true);
    };
    await say('I grew up by the sea.');
    const [proposal] = await store.learnedMemories.own(first.id, ['pending']);
    expect(proposal).toMatchObject({ text: 'I grew up by the sea.' });
    await store.learnedMemories.setStatus(proposal!.id, 'rejected', clock.nowMicros());
    await say('I grew up near the sea.');
    expect(await store.learnedMemories.own(first.id, ['pending'])).toEqual([]);
    await say('I grew up in the mountains.');
    expect((await store.learnedMemories.own(first.id, ['pending'])).map((memory) => memory.text)).toEqual(['I grew up in the mountains.']);
  });
});
