import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordAccounts } from '../../src/bot/discord-accounts.js';
import { adminActor } from '../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { type Core, createCore } from '../../src/core/core.js';
import { createOpenAICompatibleChatModel } from '../../src/engines/chat/openai-compatible.js';
import { DiskFileStore } from '../../src/store/file-store.js';
import { type SqlStore, openSqlStore } from '../../src/store/sql/sql-store.js';
import { createSharpImageCodec } from '../../src/media/sharp-image-codec.js';
import { WorkerRegexRunner } from '../../src/engines/regex/worker-regex-runner.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

describe('DiscordAccounts', () => {
  let directory: string;
  let repositories: SqlStore;
  let core: Core;
  let accounts: DiscordAccounts;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-discord-accounts-'));
    repositories = await openSqlStore(`sqlite://${path.join(directory, 'likeness.sqlite')}`);
    core = createCore({
      repositories,
      files: new DiskFileStore(path.join(directory, 'files')),
      // Accounts never talk to the engine; this adapter is never called.
      chatModel: createOpenAICompatibleChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'unused' }),
      imageCodec: createSharpImageCodec(),
      clock: createSystemClock(),
      ids: createRandomIds(),
      links: { sign: (key) => `http://127.0.0.1:9/files/${key}` },
      logger: silent,
      regexKeys: new WorkerRegexRunner({ boundMs: 50, logger: silent }),
      options: { startingBalance: 10, adminApiKey: undefined, chat: { contextTokens: 4096, maxReplyTokens: 256 } },
    });
    accounts = new DiscordAccounts(repositories.discordLinks, core.accounts);
  });
  afterAll(async () => {
    await repositories.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('makes one account per Discord user, even when asked at once, with its own character', async () => {
    const user = { id: '200000000000000001', username: 'marie', avatarUrl: 'https://cdn.example.test/avatars/1.png' };
    const results = await Promise.all(Array.from({ length: 5 }, () => accounts.accountFor(user)));
    expect(new Set(results.map((account) => account.id)).size).toBe(1);
    const account = results[0]!;
    expect(account.username).toBe('marie');
    expect(account.profilePictureUrl).toBe(user.avatarUrl);
    expect((await core.characters.get(adminActor, account.characterId)).name).toBe('marie');
    expect(await core.accounts.balance(adminActor, account.id)).toBe(10);
  });

  it('numbers a username that is taken, and cleans names our usernames cannot hold', async () => {
    await core.accounts.create(adminActor, { username: 'pierre' });
    const second = await accounts.accountFor({ id: '200000000000000002', username: 'pierre', avatarUrl: null });
    expect(second.username).toBe('pierre-2');
    const third = await accounts.accountFor({ id: '200000000000000003', username: 'pierre', avatarUrl: null });
    expect(third.username).toBe('pierre-3');
    const accented = await accounts.accountFor({ id: '200000000000000004', username: 'zoé ✨', avatarUrl: null });
    expect(accented.username).toBe('zoe');
    const tiny = await accounts.accountFor({ id: '200000000000000005', username: '✨', avatarUrl: null });
    expect(tiny.username).toBe('user');
  });

  it('follows a changed Discord avatar', async () => {
    const user = { id: '200000000000000006', username: 'jules', avatarUrl: null };
    await accounts.accountFor(user);
    const updated = await accounts.accountFor({ ...user, avatarUrl: 'https://cdn.example.test/avatars/6.png' });
    expect(updated.profilePictureUrl).toBe('https://cdn.example.test/avatars/6.png');
  });
});
