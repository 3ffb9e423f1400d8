import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { adminActor, accountActor } from '../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { type Core, createCore } from '../../src/core/core.js';
import type { RepositoryStore } from '../../src/core/repositories.js';
import { createOpenAICompatibleChatModel } from '../../src/engines/chat/openai-compatible.js';
import { WorkerRegexRunner } from '../../src/engines/regex/worker-regex-runner.js';
import { createSharpImageCodec } from '../../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../../src/store/file-store.js';
import { type SqlStore, openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from '../store/migration-databases.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const graceMs = 60 * 60_000;

/** A PNG of its own for each shade: its own file, as files are content-addressed. */
function png(shade: number): Buffer {
  const image = new PNG({ width: 4, height: 4 });
  image.data.fill(shade);
  return PNG.sync.write(image);
}

/** The system clock, moved on by hand: a grace period passes at once. */
function movableClock() {
  const system = createSystemClock();
  let offsetMs = 0;
  return {
    nowMillis: () => system.nowMillis() + offsetMs,
    nowMicros: () => system.nowMicros() + offsetMs * 1000,
    advance: (ms: number) => void (offsetMs += ms),
  };
}

/**
 * The store, but the next transaction begun after `pause()` waits until the returned `go` is
 * called: a use case held between storing a file and referencing it.
 */
function pausable(store: SqlStore): { repositories: RepositoryStore; pause(): { reached: Promise<void>; go(): void } } {
  let paused: { entered(): void; going: Promise<void> } | undefined;
  const repositories = new Proxy(store, {
    get(target, property) {
      if (property === 'transaction' && paused) {
        const { entered, going } = paused;
        paused = undefined;
        return async <T>(work: Parameters<RepositoryStore['transaction']>[0]) => {
          entered();
          await going;
          return target.transaction(work) as Promise<T>;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    repositories,
    pause() {
      let go = () => {};
      const going = new Promise<void>((resolve) => (go = resolve));
      const reached = new Promise<void>((resolve) => (paused = { entered: resolve, going }));
      return { reached, go };
    },
  };
}

describe.each(migrationDatabases)('files deleted characters let go of, on $dialect', ({ database: openDatabase }) => {
  let directory: string;
  let drop: () => Promise<void>;
  let store: SqlStore;
  let files: DiskFileStore;
  let clock: ReturnType<typeof movableClock>;
  let gate: ReturnType<typeof pausable>;
  let core: Core;

  beforeEach(async () => {
    const database = await openDatabase();
    drop = database.drop;
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-sweep-'));
    store = await openSqlStore(database.url);
    files = new DiskFileStore(path.join(directory, 'files'));
    clock = movableClock();
    gate = pausable(store);
    core = createCore({
      repositories: gate.repositories,
      files,
      chatModel: createOpenAICompatibleChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'unused' }),
      imageCodec: createSharpImageCodec(),
      links: { sign: (key) => `http://127.0.0.1:9/files/${key}` },
      clock,
      ids: createRandomIds(),
      logger: silent,
      regexKeys: new WorkerRegexRunner({ boundMs: 50, logger: silent }),
      options: { startingBalance: 0, adminApiKey: undefined, chat: { contextTokens: 4096, maxReplyTokens: 256 }, files: { graceMs, batch: 2 } },
    });
  });
  afterEach(async () => {
    await core.fileSweep.stop();
    await store.close();
    await drop();
    await rm(directory, { recursive: true, force: true });
  });

  const person = async (username: string) => {
    const { account } = await core.accounts.create(adminActor, { username: `${username}-${Math.random().toString(36).slice(2, 8)}` });
    return { accountId: account.id, actor: accountActor(account.id) };
  };
  const avatarKey = async (characterId: string) => (await store.characters.get(characterId))!.avatar!.key;

  it('keeps a deleted character’s avatar for the grace period, then removes it unless another character holds it', async () => {
    const { accountId, actor } = await person('deleter');
    const [alone, twin, keeper] = await Promise.all([
      core.characters.create(actor, accountId, { name: 'Alone', avatar: png(10) }),
      core.characters.create(actor, accountId, { name: 'Twin', avatar: png(20) }),
      core.characters.create(actor, accountId, { name: 'Keeper', avatar: png(20) }),
    ]);
    const [aloneFile, sharedFile] = [await avatarKey(alone.id), await avatarKey(twin.id)];
    expect(await avatarKey(keeper.id)).toBe(sharedFile);
    await core.characters.delete(actor, alone.id);
    await core.characters.delete(actor, twin.id);
    expect(await files.read(aloneFile)).toBeDefined();

    clock.advance(graceMs - 60_000);
    expect(await core.fileSweep.sweepOnce()).toBe(0);
    expect(await files.read(aloneFile)).toBeDefined();

    clock.advance(2 * 60_000);
    expect(await core.fileSweep.sweepOnce()).toBe(1);
    expect(await files.read(aloneFile)).toBeUndefined();
    expect(await files.read(sharedFile)).toBeDefined();
    expect((await core.characters.avatarImage(actor, keeper.id)).bytes).toEqual(new Uint8Array(png(20)));
  });

  it('keeps the file of a card imported with the same avatar as the grace runs out, between storing the file and referencing it', async () => {
    const { accountId, actor } = await person('importer');
    const first = await core.characters.create(actor, accountId, { name: 'Card', avatar: png(30) });
    const file = await avatarKey(first.id);
    await core.characters.delete(actor, first.id);
    clock.advance(graceMs + 60_000);

    // The import has stored the avatar (the file is there) and not yet written its character.
    const { reached, go } = gate.pause();
    const imported = core.characters.create(actor, accountId, { name: 'Card again', avatar: png(30) });
    await reached;
    // Another worker sweeps just then: the file was stored again, so its grace starts anew.
    expect(await core.fileSweep.sweepOnce()).toBe(0);
    go();
    const again = await imported;
    expect(await avatarKey(again.id)).toBe(file);
    expect(await files.read(file)).toBeDefined();

    // Once the grace passes again the file is still held, by the imported character.
    clock.advance(graceMs + 60_000);
    expect(await core.fileSweep.sweepOnce()).toBe(0);
    expect((await core.characters.avatarImage(actor, again.id)).bytes).toEqual(new Uint8Array(png(30)));
  });

  it('sweeps in batches until no due release is left, and removes a file once', async () => {
    const { accountId, actor } = await person('many');
    const made = await Promise.all([40, 41, 42, 43, 44].map((shade) => core.characters.create(actor, accountId, { name: `Shade ${shade}`, avatar: png(shade) })));
    const keys = await Promise.all(made.map((character) => avatarKey(character.id)));
    for (const character of made) await core.characters.delete(actor, character.id);
    clock.advance(graceMs + 60_000);
    // Batches of two: three transactions take the five releases.
    expect(await core.fileSweep.sweepOnce()).toBe(5);
    for (const key of keys) expect(await files.read(key)).toBeUndefined();
    expect(await core.fileSweep.sweepOnce()).toBe(0);
  });
});
