/**
 * Three `npm start` processes on one PostgreSQL database, each running the learner: every
 * batch of messages is learned once, by one of them (one extraction request each), and every
 * fact is stored once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractionAnswer, isExtraction } from '../fakes/fake-extractor.js';
import { type FakeOpenAI, type FakeRequestBody, startFakeOpenAI } from '../fakes/fake-openai.js';
import { createTestDatabase } from '../store/postgres-database.js';
import { type ServiceProcess, call, startServing, stopService } from './service-processes.js';

const adminKey = 'admin-key-of-the-learning-process-test';

describe('learning across processes on one PostgreSQL database', () => {
  let store: { url: string; drop(): Promise<void> };
  let llm: FakeOpenAI;
  let services: ServiceProcess[] = [];

  beforeAll(async () => {
    store = await createTestDatabase();
    llm = await startFakeOpenAI({ script: (body: FakeRequestBody) => (isExtraction(body) ? extractionAnswer(body) : { reply: 'Noted.' }) });
    const environment = {
      STORE_URL: store.url,
      LLM_BASE_URL: llm.baseURL,
      ADMIN_API_KEY: adminKey,
      API_RATE_LIMIT_PER_MINUTE: '100000',
      LEARNING: 'on',
      LEARNING_BATCH_MESSAGES: '2',
      LEARNING_QUIET_SECONDS: '1',
    };
    services = await Promise.all(['one', 'two', 'three'].map((name) => startServing(name, environment)));
  });

  afterAll(async () => {
    await Promise.all(services.map(stopService));
    await llm?.close();
    await store?.drop();
  });

  it('learns each batch once, whichever process queued it and however many workers claim', async () => {
    const conversations = 12;
    const people = await Promise.all(
      Array.from({ length: conversations }, async (_, index) => {
        const created = await call(services[index % 3]!, 'POST', '/accounts', adminKey, { username: `sailor${index}` });
        return { key: created.body.apiKey as string, characterId: created.body.account.characterId as string, index };
      }),
    );
    // Each person tells their own character (taking them as a person: no proposals) one fact, through any process.
    await Promise.all(
      people.map(async (person) => {
        const service = services[person.index % 3]!;
        await call(service, 'PUT', `/characters/${person.characterId}/learning`, person.key, { fromOwner: false });
        const opened = await call(service, 'POST', '/conversations', person.key, { characterId: person.characterId });
        expect((await call(service, 'POST', `/conversations/${opened.body.id}/chat`, person.key, { data: `My lucky number is ${person.index}.` })).status).toBe(200);
      }),
    );
    for (const person of people) {
      await expect
        .poll(async () => (await call(services[(person.index + 1) % 3]!, 'GET', '/memories/about-me', person.key)).body.memories.length, { timeout: 20_000, interval: 200 })
        .toBe(1);
    }
    // One extraction request per batch (one batch per conversation here), not one per process.
    const extractions = llm.requests.filter((request) => isExtraction(request.body));
    expect(extractions).toHaveLength(conversations);
    const numbers = extractions.map((request) => /My lucky number is (\d+)/.exec(JSON.stringify(request.body.messages))?.[1]).sort();
    expect(new Set(numbers).size).toBe(conversations);
  });
});
