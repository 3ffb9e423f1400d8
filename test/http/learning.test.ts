/**
 * Characters that learn (issue 21), through the API with the fake engine answering the
 * extraction requests in the real wire format: what is learned, where it is used, and what a
 * person can see, correct and delete.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { extractionAnswer, type FakeExtractorOptions, isExtraction } from '../fakes/fake-extractor.js';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type Harness, startHarness } from './harness.js';

describe('characters learn from conversations', () => {
  let api: Harness;
  let extractor: FakeExtractorOptions = {};
  let owner: { id: string; characterId: string; key: string };
  let ana: { id: string; characterId: string; key: string };
  let bo: { id: string; characterId: string; key: string };

  const chatPrompts = () => api.llm.requests.filter((request) => request.path.endsWith('/chat/completions') && !isExtraction(request.body));
  const lastSystemPrompt = () => String(chatPrompts().at(-1)?.body.messages?.[0]?.content ?? '');
  const conversation = async (key: string, characterId = owner.characterId) => (await api.call('POST', '/api/v0/conversations', { key, body: { characterId } })).body.id as string;
  const say = async (conversationId: string, key: string, data: string) => {
    const answer = await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key, body: { data } });
    expect(answer.status).toBe(200);
  };
  const aboutMe = async (key: string) => (await api.call('GET', '/api/v0/memories/about-me', { key })).body.memories as Array<{ id: string; text: string; status: string; origin: string; kind: string }>;
  const learned = (key: string, text: string) => expect.poll(async () => (await aboutMe(key)).map((memory) => memory.text), { timeout: 60_000 }).toContain(text);

  beforeAll(async () => {
    api = await startHarness({
      script: (body: FakeRequestBody) => (isExtraction(body) ? extractionAnswer(body, extractor) : { reply: 'Aye.' }),
      environment: { LEARNING: 'on', LEARNING_BATCH_MESSAGES: '2', LEARNING_QUIET_SECONDS: '1' },
    });
    owner = await api.account('captain');
    ana = await api.account('ana');
    bo = await api.account('bo');
    // The captain's character is public, so others can talk with it.
    await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, { key: owner.key, body: { is_public: true } });
  });
  beforeEach(() => {
    extractor = {};
  });
  afterAll(async () => {
    await api.close();
  });

  it('learns what a person says about themselves, in the third person, and recalls it in a later conversation', async () => {
    const first = await conversation(ana.key);
    await say(first, ana.key, 'My sister is called Mia.');
    await learned(ana.key, "ana's sister is called Mia.");
    const [memory] = await aboutMe(ana.key);
    expect(memory).toMatchObject({ kind: 'person', status: 'active', origin: 'private' });
    const later = await conversation(ana.key);
    await say(later, ana.key, 'Do you remember my family?');
    expect(lastSystemPrompt()).toContain("What you know about ana from earlier conversations:\n- ana's sister is called Mia.");
  });

  it("never takes a character's line as a fact, nor one person's words as another's", async () => {
    const talk = await conversation(bo.key);
    // The fake extractor also claims the character's reply (message 2) as a fact: it is refused.
    extractor = { citeAlso: 2 };
    await say(talk, bo.key, 'I live by the lighthouse.');
    await learned(bo.key, 'bo live by the lighthouse.');
    expect((await aboutMe(bo.key)).map((memory) => memory.text)).not.toContain('Someone said something.');
    expect((await aboutMe(ana.key)).map((memory) => memory.text)).not.toContain('bo live by the lighthouse.');
  });

  it('uses what was said in private only in private: never where others read', async () => {
    // What ana said in private (the first test) is there to leak, if the rules let it.
    expect((await aboutMe(ana.key)).map((memory) => memory.text)).toContain("ana's sister is called Mia.");
    const shared = await conversation(ana.key);
    await api.call('POST', `/api/v0/conversations/${shared}/speakers`, { key: ana.key, body: { accountId: bo.id } });
    await api.call('POST', `/api/v0/conversations/${shared}/speakers`, { key: bo.key, body: { accountId: bo.id } });
    await say(shared, ana.key, 'Hello everyone.');
    expect(lastSystemPrompt()).not.toContain('Mia');
    // What ana says here may be used here.
    await say(shared, ana.key, 'My boat is called Gull.');
    await learned(ana.key, "ana's boat is called Gull.");
    await say(shared, ana.key, 'Shall we sail?');
    expect(lastSystemPrompt()).toContain("ana's boat is called Gull.");
    expect(lastSystemPrompt()).not.toContain('Mia');
    // The reply records what it was written with; each reader sees only what is theirs to see.
    const messages = (await api.call('GET', `/api/v0/conversations/${shared}`, { key: ana.key })).body.messages as Array<{ id: string; participant_type: string }>;
    const reply = messages.at(-1)!;
    expect(reply.participant_type).toBe('character');
    const usedFor = async (key: string) => (await api.call('GET', `/api/v0/conversations/${shared}/messages/${reply.id}/memories`, { key })).body.memories as Array<{ kind: string; text: string }>;
    expect(await usedFor(ana.key)).toEqual([{ id: expect.any(String), kind: 'person', text: "ana's boat is called Gull." }]);
    expect(await usedFor(bo.key)).toEqual([]);
    expect((await api.call('GET', `/api/v0/conversations/${shared}/messages/${reply.id}/memories`, { key: owner.key })).status).toBe(404);
    // Answering bo in the same place: none of ana's memories.
    await say(shared, bo.key, 'Where are we going?');
    expect(lastSystemPrompt()).not.toContain('Gull');
  });

  it('lets a correction supersede the old fact: kept as replaced, no longer used', async () => {
    const talk = await conversation(ana.key);
    await say(talk, ana.key, 'My sister is called Lea.');
    await learned(ana.key, "ana's sister is called Lea.");
    const memories = await aboutMe(ana.key);
    expect(memories.find((memory) => memory.text === "ana's sister is called Mia.")).toMatchObject({ status: 'superseded' });
    await say(talk, ana.key, 'Tell me about my sister.');
    expect(lastSystemPrompt()).toContain('Lea');
    expect(lastSystemPrompt()).not.toContain('Mia');
  });

  it('lets a person correct and delete what characters learned about them, for good', async () => {
    const [lea] = (await aboutMe(ana.key)).filter((memory) => memory.text.includes('Lea'));
    const corrected = await api.call('PATCH', `/api/v0/memories/about-me/${lea!.id}`, { key: ana.key, body: { text: 'ana has two sisters, Lea and Mia.' } });
    expect(corrected.body.memory).toMatchObject({ text: 'ana has two sisters, Lea and Mia.', status: 'active' });
    // Nobody else can see or delete it, the character's owner included.
    expect((await api.call('DELETE', `/api/v0/memories/about-me/${corrected.body.memory.id}`, { key: owner.key })).status).toBe(404);
    const deleted = await api.call('DELETE', '/api/v0/memories/about-me', { key: ana.key });
    expect(deleted.body.deleted).toBeGreaterThan(0);
    expect(await aboutMe(ana.key)).toEqual([]);
    const talk = await conversation(ana.key);
    await say(talk, ana.key, 'What do you know about me?');
    expect(lastSystemPrompt()).not.toContain('What you know about ana');
  });

  it('learns nothing from a person who turned learning off, and sends the engine none of their lines', async () => {
    expect((await api.call('PUT', '/api/v0/memories/learning', { key: bo.key, body: { enabled: false } })).body.learning).toEqual({ enabled: false, disabledCharacterIds: [] });
    const talk = await conversation(ana.key);
    await api.call('POST', `/api/v0/conversations/${talk}/speakers`, { key: ana.key, body: { accountId: bo.id } });
    await api.call('POST', `/api/v0/conversations/${talk}/speakers`, { key: bo.key, body: { accountId: bo.id } });
    await say(talk, bo.key, 'My dog is called Rex.');
    await say(talk, ana.key, 'My cat is called Tom.');
    // Ana's fact is learned, so the batches of this conversation were worked through.
    await learned(ana.key, "ana's cat is called Tom.");
    expect((await aboutMe(bo.key)).map((memory) => memory.text).join()).not.toContain('Rex');
    const sentToLearn = api.llm.requests.filter((request) => isExtraction(request.body)).map((request) => JSON.stringify(request.body.messages));
    expect(sentToLearn.some((text) => text.includes('Tom'))).toBe(true);
    expect(sentToLearn.some((text) => text.includes('Rex'))).toBe(false);
    await api.call('PUT', '/api/v0/memories/learning', { key: bo.key, body: { enabled: true } });
  });

  it("proposes the owner's own facts as the character's memories, unused until the owner approves", async () => {
    const talk = await conversation(owner.key);
    await say(talk, owner.key, 'I grew up in Porto.');
    await expect.poll(async () => (await api.call('GET', `/api/v0/characters/${owner.characterId}/memories/proposed`, { key: owner.key })).body.memories.length, { timeout: 60_000 }).toBe(1);
    const [proposal] = (await api.call('GET', `/api/v0/characters/${owner.characterId}/memories/proposed`, { key: owner.key })).body.memories;
    expect(proposal).toMatchObject({ kind: 'own', status: 'pending', text: 'I grew up in Porto.' });
    // Others cannot review it.
    expect((await api.call('GET', `/api/v0/characters/${owner.characterId}/memories/proposed`, { key: ana.key })).status).toBe(403);
    const withAna = await conversation(ana.key);
    await say(withAna, ana.key, 'Where are you from?');
    expect(lastSystemPrompt()).not.toContain('Porto');
    const approved = await api.call('POST', `/api/v0/characters/${owner.characterId}/memories/proposed/${proposal.id}/approve`, { key: owner.key, body: {} });
    expect(approved.body.memory).toMatchObject({ status: 'active' });
    await say(withAna, ana.key, 'Where did you grow up?');
    expect(lastSystemPrompt()).toContain('I grew up in Porto.');
    // The owner may withdraw it again: no longer used.
    expect((await api.call('POST', `/api/v0/characters/${owner.characterId}/memories/proposed/${proposal.id}/reject`, { key: owner.key, body: {} })).status).toBe(200);
    await say(withAna, ana.key, 'And where was that?');
    expect(lastSystemPrompt()).not.toContain('Porto');
  });

  it("proposes a contradiction of the character's approved memory as its replacement: approved, the old one is superseded", async () => {
    const proposed = async (all = false) =>
      (await api.call('GET', `/api/v0/characters/${owner.characterId}/memories/proposed${all ? '?all=true' : ''}`, { key: owner.key })).body.memories as Array<{
        id: string;
        text: string;
        status: string;
        superseded: string | null;
        superseded_by: string | null;
        replaces: { id: string; text: string } | null;
      }>;
    const talk = await conversation(owner.key);
    await say(talk, owner.key, 'I play the cello.');
    await expect.poll(async () => (await proposed()).map((memory) => memory.text), { timeout: 60_000 }).toEqual(['I play the cello.']);
    const [cello] = await proposed();
    expect(cello!.replaces).toBeNull();
    await api.call('POST', `/api/v0/characters/${owner.characterId}/memories/proposed/${cello!.id}/approve`, { key: owner.key, body: {} });

    await say(talk, owner.key, 'I play the violin.');
    await expect.poll(async () => (await proposed()).map((memory) => memory.text), { timeout: 60_000 }).toEqual(['I play the violin.']);
    const [violin] = await proposed();
    // The owner sees what it would replace; until approved, the old memory is still the one used.
    expect(violin!.replaces).toEqual({ id: cello!.id, text: 'I play the cello.' });
    const withAna = await conversation(ana.key);
    await say(withAna, ana.key, 'What do you play?');
    expect(lastSystemPrompt()).toContain('I play the cello.');
    expect(lastSystemPrompt()).not.toContain('violin');

    await api.call('POST', `/api/v0/characters/${owner.characterId}/memories/proposed/${violin!.id}/approve`, { key: owner.key, body: {} });
    const history = await proposed(true);
    expect(history.find((memory) => memory.id === cello!.id)).toMatchObject({ status: 'superseded', superseded: expect.any(String), superseded_by: violin!.id });
    expect(history.find((memory) => memory.id === violin!.id)).toMatchObject({ status: 'active' });
    await say(withAna, ana.key, 'And now?');
    expect(lastSystemPrompt()).toContain('I play the violin.');
    expect(lastSystemPrompt()).not.toContain('cello');
  });

  it("learns nothing from what the admin writes in a person's conversation: it is not that person's word", async () => {
    const talk = await conversation(bo.key);
    const extractions = () => api.llm.requests.filter((request) => isExtraction(request.body)).map((request) => JSON.stringify(request.body.messages));
    const before = extractions().length;
    // The admin key writes as the conversation's person; then bo writes himself.
    expect((await api.call('POST', `/api/v0/conversations/${talk}/chat`, { body: { data: 'My password is hunter2.' } })).status).toBe(200);
    await say(talk, bo.key, 'My shoes are blue.');
    await learned(bo.key, "bo's shoes are blue.");
    expect((await aboutMe(bo.key)).map((memory) => memory.text).join()).not.toContain('hunter2');
    expect(extractions().slice(before).some((text) => text.includes('hunter2'))).toBe(false);
  });

  it('refuses a malformed engine answer: nothing stored, the batch tried again later', async () => {
    extractor = { raw: 'Sure! Here are the facts: none really.' };
    const talk = await conversation(bo.key);
    const before = api.llm.requests.filter((request) => isExtraction(request.body)).length;
    await say(talk, bo.key, 'My hat is red.');
    await expect.poll(() => api.llm.requests.filter((request) => isExtraction(request.body)).length, { timeout: 60_000 }).toBeGreaterThan(before);
    expect((await aboutMe(bo.key)).map((memory) => memory.text).join()).not.toContain('hat');
  });
});

describe('learning within bounds', () => {
  let api: Harness;
  const logLines: Array<Record<string, unknown>> = [];
  afterAll(async () => {
    await api?.close();
  });

  it("spends no more than a character's daily budget: past it, batches wait for the next day without asking the engine", async () => {
    api = await startHarness({
      script: (body: FakeRequestBody) => (isExtraction(body) ? extractionAnswer(body) : { reply: 'Aye.' }),
      // 1,000 tokens a day, the least that may be set.
      environment: { LEARNING: 'on', LEARNING_BATCH_MESSAGES: '2', LEARNING_QUIET_SECONDS: '1', LEARNING_DAILY_TOKENS: '1000' },
      logDestination: { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    const user = await api.account('thrifty');
    const talk = (await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: user.characterId } })).body.id;
    // Its own character: the owner's facts would be proposed, were there budget for it.
    await api.call('PUT', `/api/v0/characters/${user.characterId}/learning`, { key: user.key, body: { fromOwner: false } });
    // A long message: its extraction request alone would pass the day's 1,000 tokens.
    await api.call('POST', `/api/v0/conversations/${talk}/chat`, { key: user.key, body: { data: `My brother is called Leo. ${'We walk along the harbour every evening and talk about the boats. '.repeat(30)}` } });
    await expect.poll(() => logLines.some((line) => line.msg === "the character's daily learning budget is spent; the batch waits for tomorrow"), { timeout: 60_000 }).toBe(true);
    expect(api.llm.requests.filter((request) => isExtraction(request.body))).toEqual([]);
    expect((await api.call('GET', '/api/v0/memories/about-me', { key: user.key })).body.memories).toEqual([]);
  });
});

describe('learning off for one character', () => {
  let api: Harness;
  afterAll(async () => {
    await api?.close();
  });

  it('learns nothing for the character a person turned it off for, and goes on learning for others', async () => {
    api = await startHarness({
      script: (body: FakeRequestBody) => (isExtraction(body) ? extractionAnswer(body) : { reply: 'Aye.' }),
      environment: { LEARNING: 'on', LEARNING_BATCH_MESSAGES: '2', LEARNING_QUIET_SECONDS: '1' },
    });
    const [first, second, person] = [await api.account('first'), await api.account('second'), await api.account('person')];
    for (const owner of [first, second]) await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, { key: owner.key, body: { is_public: true } });
    await api.call('PUT', '/api/v0/memories/learning', { key: person.key, body: { enabled: true, disabledCharacterIds: [first.characterId] } });
    for (const [owner, said] of [
      [first, 'My uncle is called Bram.'],
      [second, 'My aunt is called Ines.'],
    ] as const) {
      const talk = (await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: owner.characterId } })).body.id;
      await api.call('POST', `/api/v0/conversations/${talk}/chat`, { key: person.key, body: { data: said } });
    }
    await expect.poll(async () => (await api.call('GET', '/api/v0/memories/about-me', { key: person.key })).body.memories.map((memory: { text: string }) => memory.text), { timeout: 60_000 }).toEqual([
      "person's aunt is called Ines.",
    ]);
    // Bram was never sent to the engine to learn from.
    expect(api.llm.requests.filter((request) => isExtraction(request.body)).some((request) => JSON.stringify(request.body.messages).includes('Bram'))).toBe(false);
  });
});
