/**
 * Issue 28, item 9: a process killed with SIGKILL during a card import leaves a file nothing
 * recorded, neither held nor released: the avatar stored under its key before the character
 * was written, or its temporary file before the rename. The sweep finds them by scanning the
 * files: once last written over a grace period ago, a partial write is removed, and a file
 * nothing holds is released and removed a grace period later, while every held file stays.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { accountActor, adminActor } from '../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { type Core, createCore } from '../../src/core/core.js';
import { createOpenAICompatibleChatModel } from '../../src/engines/chat/openai-compatible.js';
import { WorkerRegexRunner } from '../../src/engines/regex/worker-regex-runner.js';
import { createSharpImageCodec } from '../../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../../src/store/file-store.js';
import { type SqlStore, openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from '../store/migration-databases.js';
import { jobRecord } from '../store/repository-fixtures.js';
import { PATIENCE_MS } from '../support/patience.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const graceMs = 60 * 60_000;
const childPath = path.join(import.meta.dirname, 'card-import-child.ts');

function png(shade: number): Buffer {
  const image = new PNG({ width: 4, height: 4 });
  image.data.fill(shade);
  return PNG.sync.write(image);
}

/** The system clock, moved on by hand: a grace period passes at once (file times are the disk's, now). */
function movableClock() {
  const system = createSystemClock();
  let offsetMs = 0;
  return {
    nowMillis: () => system.nowMillis() + offsetMs,
    nowMicros: () => system.nowMicros() + offsetMs * 1000,
    advance: (ms: number) => void (offsetMs += ms),
  };
}

/** Every file under `directory`, by name. */
async function namesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => entry.name);
}

/** Forks a process importing a card, and kills it with SIGKILL once it reaches `moment`; answers what it said then. */
async function importKilledAt(storeUrl: string, filesDirectory: string, accountId: string, moment: 'mid-write' | 'before-row'): Promise<string> {
  const child: ChildProcess = fork(childPath, [storeUrl, filesDirectory, accountId, moment], {
    execArgv: ['--import', 'tsx', '--disable-warning=ExperimentalWarning'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  try {
    const detail = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the importing process did not reach ${moment}`)), PATIENCE_MS);
      child.on('message', (message: { type: string; detail?: string }) => {
        clearTimeout(timer);
        if (message.type === 'reached') resolve(String(message.detail));
        else reject(new Error(`the importing process said ${message.type} before ${moment}`));
      });
      child.once('exit', (code) => reject(new Error(`the importing process ended (${code}) before ${moment}`)));
    });
    child.kill('SIGKILL');
    const [, signal] = await exited;
    expect(signal).toBe('SIGKILL');
    return detail;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

describe.each(migrationDatabases)('files nothing recorded, left by a process killed mid-import, on $dialect', ({ database: openDatabase }) => {
  let directory: string;
  let filesDirectory: string;
  let storeUrl: string;
  let drop: () => Promise<void>;
  let store: SqlStore;
  let files: DiskFileStore;
  let clock: ReturnType<typeof movableClock>;
  let core: Core;

  beforeEach(async () => {
    const database = await openDatabase();
    ({ url: storeUrl, drop } = database);
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-unrecorded-'));
    filesDirectory = path.join(directory, 'files');
    store = await openSqlStore(storeUrl);
    files = new DiskFileStore(filesDirectory);
    clock = movableClock();
    core = createCore({
      repositories: store,
      files,
      chatModel: createOpenAICompatibleChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'unused' }),
      imageCodec: createSharpImageCodec(),
      links: { sign: (key) => `http://127.0.0.1:9/files/${key}` },
      clock,
      ids: createRandomIds(),
      logger: silent,
      regexKeys: new WorkerRegexRunner({ boundMs: 50, logger: silent }),
      options: { startingBalance: 0, adminApiKey: undefined, chat: { contextTokens: 4096, maxReplyTokens: 256 }, files: { graceMs } },
    });
  });
  afterEach(async () => {
    await core.fileSweep.stop();
    await store.close();
    await drop();
    await rm(directory, { recursive: true, force: true });
  });

  /** Files every kind of holder holds: a character's avatar, an image job's output, a spoken audio. */
  const heldFiles = async (accountId: string) => {
    const character = await core.characters.create(accountActor(accountId), accountId, { name: 'Keeper', avatar: png(10) });
    const output = await files.put(png(20), 'image/png');
    await store.jobs.create({
      ...jobRecord(accountId),
      outputFiles: [{ name: 'image-1.png', key: output.key, mimeType: output.mimeType, size: output.size, createdMillis: 1, feedback: { like: null, feedback: null } }],
    });
    const audio = await files.put(Buffer.from('ID3 spoken'), 'audio/mpeg');
    await store.speechAudio.record('f'.repeat(64), { file: audio, accountId }, clock.nowMicros());
    return [character.avatar!.key, output.key, audio.key];
  };

  const person = async () => (await core.accounts.create(adminActor, { username: `importer-${Math.random().toString(36).slice(2, 8)}` })).account.id;

  it('removes a file no row holds and a partial write after the grace period, and keeps every held file', async () => {
    const accountId = await person();
    const held = await heldFiles(accountId);
    // A file stored with no row to hold it, and a temporary never renamed, as a crash leaves them.
    const orphan = await files.put(png(30), 'image/png');
    const fanOut = path.join(filesDirectory, orphan.key.slice(0, 2), orphan.key.slice(2, 4));
    const partial = `${orphan.key.replace(/^.{8}/, '0'.repeat(8))}.0123456789ab.tmp`;
    await writeFile(path.join(fanOut, partial), 'half an image');
    // Not this store's: left alone whatever its age.
    await writeFile(path.join(fanOut, 'notes.txt'), 'someone put this here');

    // Within the grace period even a file nothing holds may be about to be referenced.
    await core.fileSweep.scanOnce();
    expect(await core.fileSweep.sweepOnce()).toBe(0);
    expect(await namesUnder(filesDirectory)).toEqual(expect.arrayContaining([orphan.key, partial, ...held]));

    clock.advance(graceMs + 60_000);
    expect(await core.fileSweep.scanOnce()).toEqual({ released: 1, partials: 1 });
    expect(await namesUnder(filesDirectory)).not.toContain(partial);
    // Released now, not removed: a grace period for whoever stores it again.
    expect(await files.read(orphan.key)).toBeDefined();
    // Scanning again records nothing new: the release stands.
    expect(await core.fileSweep.scanOnce()).toEqual({ released: 0, partials: 0 });

    clock.advance(graceMs + 60_000);
    expect(await core.fileSweep.sweepOnce()).toBe(1);
    expect(await files.read(orphan.key)).toBeUndefined();
    for (const key of held) expect(await files.read(key)).toBeDefined();
    expect(await namesUnder(filesDirectory)).toContain('notes.txt');
  });

  it('keeps a file nothing held once it is stored again, as an import of the same card does', async () => {
    const accountId = await person();
    const orphan = await files.put(png(40), 'image/png');
    clock.advance(graceMs + 60_000);
    expect((await core.fileSweep.scanOnce()).released).toBe(1);
    const imported = await core.characters.create(accountActor(accountId), accountId, { name: 'Again', avatar: png(40) });
    expect(imported.avatar!.key).toBe(orphan.key);
    clock.advance(graceMs + 60_000);
    expect(await core.fileSweep.sweepOnce()).toBe(0);
    expect(await files.read(orphan.key)).toBeDefined();
  });

  it('sweeps what a card import killed with SIGKILL left: the avatar with no character, and the avatar half written', async () => {
    const accountId = await person();
    const held = await heldFiles(accountId);
    const avatarKey = await importKilledAt(storeUrl, filesDirectory, accountId, 'before-row');
    expect(await namesUnder(filesDirectory)).toContain(avatarKey);
    await importKilledAt(storeUrl, filesDirectory, accountId, 'mid-write');
    const partials = (await namesUnder(filesDirectory)).filter((name) => name.endsWith('.tmp'));
    expect(partials).toHaveLength(1);
    // Neither import made its character.
    expect(await store.characters.search('Killed', { accountId, limit: 10 })).toEqual([]);

    clock.advance(graceMs + 60_000);
    await core.fileSweep.sweepOnce();
    expect((await namesUnder(filesDirectory)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    clock.advance(graceMs + 60_000);
    expect(await core.fileSweep.sweepOnce()).toBe(1);
    expect(await files.read(avatarKey)).toBeUndefined();
    for (const key of held) expect(await files.read(key)).toBeDefined();
  });
});
