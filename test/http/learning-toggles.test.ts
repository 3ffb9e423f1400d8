/**
 * Turning learning back on never learns the past (issue 28, item 15): what was said while
 * `LEARNING=off`, or while the person had learning off (everywhere or for the character), is
 * marked so as it is stored, and no later batch learns it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { extractionAnswer, isExtraction } from '../fakes/fake-extractor.js';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type Harness, startHarness } from './harness.js';

describe('turning learning back on', () => {
  let api: Harness | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  const start = (learning: 'on' | 'off') =>
    startHarness({
      script: (body: FakeRequestBody) => (isExtraction(body) ? extractionAnswer(body) : { reply: 'Aye.' }),
      environment: { LEARNING: learning, LEARNING_BATCH_MESSAGES: '2', LEARNING_QUIET_SECONDS: '1' },
    });
  const helpers = (harness: Harness) => ({
    conversation: async (key: string, characterId: string) => (await harness.call('POST', '/api/v0/conversations', { key, body: { characterId } })).body.id as string,
    say: async (conversationId: string, key: string, data: string) => expect((await harness.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key, body: { data } })).status).toBe(200),
    learned: async (key: string) => ((await harness.call('GET', '/api/v0/memories/about-me', { key })).body.memories as Array<{ text: string }>).map((memory) => memory.text),
    sentToLearn: () => harness.llm.requests.filter((request) => isExtraction(request.body)).map((request) => JSON.stringify(request.body.messages)),
  });

  it('never learns what was said while LEARNING=off, once the service runs with it on', async () => {
    api = await start('off');
    const { conversation, say, learned, sentToLearn } = helpers(api);
    const person = await api.account('ana');
    const talk = await conversation(person.key, person.characterId);
    await api.call('PUT', `/api/v0/characters/${person.characterId}/learning`, { key: person.key, body: { fromOwner: false } });
    await say(talk, person.key, 'My dog is called Rex.');
    await api.restart({ LEARNING: 'on' });
    await say(talk, person.key, 'My cat is called Tom.');
    await expect.poll(() => learned(person.key), { timeout: 60_000 }).toContain("ana's cat is called Tom.");
    expect((await learned(person.key)).join()).not.toContain('Rex');
    expect(sentToLearn().some((text) => text.includes('Rex'))).toBe(false);
  });

  it('never learns what a person said while they had learning off, everywhere or for the character, once they turn it on', async () => {
    api = await start('on');
    const { conversation, say, learned, sentToLearn } = helpers(api);
    const owner = await api.account('captain');
    await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, { key: owner.key, body: { is_public: true } });
    const person = await api.account('bo');
    const talk = await conversation(person.key, owner.characterId);
    const extractionsBefore = sentToLearn().length;
    await api.call('PUT', '/api/v0/memories/learning', { key: person.key, body: { enabled: false } });
    await say(talk, person.key, 'My dog is called Rex.');
    await api.call('PUT', '/api/v0/memories/learning', { key: person.key, body: { enabled: true, disabledCharacterIds: [owner.characterId] } });
    await say(talk, person.key, 'My hat is called Fez.');
    // Nothing may be learned yet: no engine call for these batches.
    await api.call('PUT', '/api/v0/memories/learning', { key: person.key, body: { enabled: true } });
    await say(talk, person.key, 'My cat is called Tom.');
    await expect.poll(() => learned(person.key), { timeout: 60_000 }).toContain("bo's cat is called Tom.");
    const texts = (await learned(person.key)).join();
    expect(texts).not.toContain('Rex');
    expect(texts).not.toContain('Fez');
    const sent = sentToLearn().slice(extractionsBefore);
    expect(sent.some((text) => text.includes('Rex') || text.includes('Fez'))).toBe(false);
  });
});
