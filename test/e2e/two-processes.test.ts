import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.js';
import { createTestDatabase } from '../store/postgres-database.js';
import { type ServiceProcess, call, startServing, stopService } from './service-processes.js';

const adminKey = 'admin-key-of-the-two-process-test';

/** Where the two processes keep their data: one SQLite file, or one PostgreSQL database. */
const stores: Array<[string, () => Promise<{ url: string; drop(): Promise<void> }>]> = [
  [
    'one SQLite file',
    async () => {
      const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-two-sqlite-'));
      return { url: `sqlite://${path.join(directory, 'shared.sqlite')}`, drop: () => rm(directory, { recursive: true, force: true }) };
    },
  ],
  ['one PostgreSQL database', createTestDatabase],
];

/**
 * Two `npm start` processes on one store. Each keeps whole conversation reads and key lookups
 * while the store's change token stays the same (SQLite's data version, PostgreSQL's snapshot);
 * these tests prove that a write through one process is seen by the other on its very next
 * request.
 */
describe.each(stores)('two service processes on %s, over HTTP', (_name, createStore) => {
  let store: { url: string; drop(): Promise<void> };
  let llm: FakeOpenAI;
  let services: ServiceProcess[] = [];
  let a: ServiceProcess;
  let b: ServiceProcess;

  beforeAll(async () => {
    store = await createStore();
    llm = await startFakeOpenAI({ script: { reply: 'Noted.' } });
    const environment = {
      STORE_URL: store.url,
      LLM_BASE_URL: llm.baseURL,
      ADMIN_API_KEY: adminKey,
      // One secret and base URL for both, so both sign the same URLs and their answers compare byte for byte.
      URL_SIGNING_SECRET: 'the-same-secret-for-both-processes',
      PUBLIC_BASE_URL: 'http://likeness.test',
      API_RATE_LIMIT_PER_MINUTE: '100000',
    };
    services = await Promise.all(['a', 'b'].map((name) => startServing(name, environment)));
    [a, b] = services as [ServiceProcess, ServiceProcess];
  });

  afterAll(async () => {
    await Promise.all(services.map(stopService));
    await llm?.close();
    await store?.drop();
  });

  async function account(username: string): Promise<{ id: string; key: string; characterId: string }> {
    const created = await call(a, 'POST', '/accounts', adminKey, { username });
    expect(created.status).toBe(201);
    return { id: created.body.account.id, key: created.body.apiKey, characterId: created.body.account.characterId };
  }

  it('shows a conversation written through one process in the next read of the other', async () => {
    const user = await account('Reader');
    const opened = await call(b, 'POST', '/conversations', user.key, { characterId: user.characterId });
    expect(opened.status).toBe(201);
    const route = `/conversations/${opened.body.id}`;
    const empty = await call(b, 'GET', route, user.key);
    expect(empty.body.messages).toEqual([]);
    expect(await call(b, 'GET', route, user.key)).toEqual(empty);

    expect((await call(a, 'POST', `${route}/chat`, user.key, { data: 'Hello from process a.' })).status).toBe(200);
    const afterChat = await call(b, 'GET', route, user.key);
    expect(afterChat.body.messages.map((message: { content: string }) => message.content)).toEqual(['Hello from process a.', 'Noted.']);
    expect(await call(a, 'GET', route, user.key)).toEqual(afterChat);

    // The head changes too: a rename through b reaches a's next read.
    expect((await call(b, 'PATCH', `/characters/${user.characterId}`, user.key, { name: 'Renamed' })).status).toBe(200);
    const renamed = await call(a, 'GET', route, user.key);
    expect(renamed.body.speakers.find((speaker: { type: string }) => speaker.type === 'character').name).toBe('Renamed');
    expect(renamed.body.messages).toEqual(afterChat.body.messages);

    // A clear through a empties b's next read.
    expect((await call(a, 'POST', `${route}/clear`, user.key)).status).toBe(200);
    expect((await call(b, 'GET', route, user.key)).body.messages).toEqual([]);
  });

  it("shows a scene's characters joining and leaving through one process in the other's next read", async () => {
    const host = await account('Host');
    const guest = await account('Guest');
    expect((await call(a, 'PATCH', `/characters/${guest.characterId}`, guest.key, { is_public: true })).status).toBe(200);
    const opened = await call(a, 'POST', '/conversations', host.key, { characterId: host.characterId });
    const route = `/conversations/${opened.body.id}`;
    const characters = async (service: ServiceProcess) =>
      (await call(service, 'GET', route, host.key)).body.speakers.filter((speaker: { type: string }) => speaker.type === 'character').map((speaker: { id: string }) => speaker.id);
    expect(await characters(b)).toEqual([host.characterId]);
    expect(await characters(b)).toEqual([host.characterId]);
    expect((await call(a, 'POST', `${route}/speakers`, host.key, { characterId: guest.characterId })).status).toBe(200);
    expect(await characters(b)).toEqual([host.characterId, guest.characterId]);
    const answered = await call(b, 'POST', `${route}/chat`, host.key, { data: 'Guest, hello.', characterId: guest.characterId });
    expect(answered.status).toBe(200);
    expect((await call(a, 'GET', route, host.key)).body.messages.at(-1).participant_id).toBe(guest.characterId);
    expect((await call(b, 'DELETE', `${route}/speakers/${guest.characterId}`, host.key)).status).toBe(200);
    expect(await characters(a)).toEqual([host.characterId]);
  });

  it('refuses a rotated key in the other process at once, and takes the new one', async () => {
    const user = await account('Rotator');
    expect((await call(b, 'GET', `/accounts/${user.id}`, user.key)).status).toBe(200);
    expect((await call(b, 'GET', `/accounts/${user.id}`, user.key)).status).toBe(200);
    const rotated = await call(a, 'POST', `/accounts/${user.id}/keys`, user.key);
    expect(rotated.status).toBe(201);
    const refused = await call(b, 'GET', `/accounts/${user.id}`, user.key);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
    expect((await call(b, 'GET', `/accounts/${user.id}`, rotated.body.apiKey)).status).toBe(200);
  });

  it('turns a disabled account away in the other process at once', async () => {
    const user = await account('Disabled');
    expect((await call(b, 'GET', `/accounts/${user.id}`, user.key)).status).toBe(200);
    expect((await call(a, 'PATCH', `/accounts/${user.id}`, adminKey, { isDisabled: true })).status).toBe(200);
    const refused = await call(b, 'GET', `/accounts/${user.id}`, user.key);
    expect(refused.body.error?.code).toBe('ACCOUNT_DISABLED');
  });
});
