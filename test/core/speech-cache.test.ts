/**
 * Issue 28, item 4: spoken audio is a cache with a retention and a size, which the file sweep
 * honours. An audio not asked for in `cacheRetentionMs` goes; past `cacheMaxBytes` the ones
 * asked for longest ago go first; either way the file itself is removed a grace period later,
 * as every file let go of is (`FileSweep`), unless something else holds it.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { accountActor, adminActor } from '../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { type Core, createCore } from '../../src/core/core.js';
import type { AudioEncoder, PcmAudio, SpeechEngine } from '../../src/core/ports.js';
import { createOpenAICompatibleChatModel } from '../../src/engines/chat/openai-compatible.js';
import { WorkerRegexRunner } from '../../src/engines/regex/worker-regex-runner.js';
import { createSharpImageCodec } from '../../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../../src/store/file-store.js';
import { type SqlStore, openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from '../store/migration-databases.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const graceMs = 60 * 60_000;
const dayMs = 24 * 60 * 60_000;
const retentionMs = 30 * dayMs;
/** Every fake mp3 is this long: three of them do not fit in the cache, two do. */
const audioBytes = 4_000;

/** The system clock, moved on by hand. */
function movableClock() {
  const system = createSystemClock();
  let offsetMs = 0;
  return {
    nowMillis: () => system.nowMillis() + offsetMs,
    nowMicros: () => system.nowMicros() + offsetMs * 1000,
    advance: (ms: number) => void (offsetMs += ms),
  };
}

/** An engine that "speaks" each text as samples of its own, and counts what it was asked. */
function countingEngine(): SpeechEngine & { spoken: string[] } {
  const spoken: string[] = [];
  const pcm = (text: string): PcmAudio => ({ sampleRate: 16_000, samples: Int16Array.from(Buffer.from(text)) });
  return {
    provider: 'counting',
    maxTextLength: 5_000,
    spoken,
    listVoices: async () => [{ id: 'plain', name: 'Plain' }],
    synthesize: async ({ text }) => {
      spoken.push(text);
      return pcm(text);
    },
    async *stream({ text }) {
      yield pcm(text);
    },
  };
}

/** Fixed-size "mp3s", one per distinct audio: the cache's arithmetic is then exact. */
const encoder: AudioEncoder = {
  mp3: async (pcm) => {
    const bytes = new Uint8Array(audioBytes);
    bytes.set(createHash('sha256').update(pcm.samples).digest());
    return bytes;
  },
};

describe.each(migrationDatabases)('spoken audio kept as a bounded cache, on $dialect', ({ database: openDatabase }) => {
  let directory: string;
  let drop: () => Promise<void>;
  let store: SqlStore;
  let files: DiskFileStore;
  let clock: ReturnType<typeof movableClock>;
  let engine: ReturnType<typeof countingEngine>;
  let core: Core;

  beforeEach(async () => {
    const database = await openDatabase();
    drop = database.drop;
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-speech-cache-'));
    store = await openSqlStore(database.url);
    files = new DiskFileStore(path.join(directory, 'files'));
    clock = movableClock();
    engine = countingEngine();
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
      speech: { engine, encoder },
      options: {
        startingBalance: 0,
        adminApiKey: undefined,
        chat: { contextTokens: 4096, maxReplyTokens: 256 },
        files: { graceMs },
        speech: { cacheRetentionMs: retentionMs, cacheMaxBytes: 2 * audioBytes + audioBytes / 2 },
      },
    });
  });
  afterEach(async () => {
    await core.fileSweep.stop();
    await store.close();
    await drop();
    await rm(directory, { recursive: true, force: true });
  });

  /** A person whose own character has a voice. */
  const speaker = async () => {
    const { account } = await core.accounts.create(adminActor, { username: `speaker-${Math.random().toString(36).slice(2, 8)}` });
    const actor = accountActor(account.id);
    await core.speech!.train(actor, account.characterId, { voiceId: 'plain' });
    return (text: string) => core.speech!.speak(actor, account.characterId, text);
  };

  it('removes an audio no one asked for in the retention, a grace period later, and speaks it anew when asked again', async () => {
    const speak = await speaker();
    const first = await speak('The tide is in.');
    expect(await files.read(first.key)).toBeDefined();

    clock.advance(retentionMs - dayMs);
    await core.fileSweep.sweepOnce();
    // Asked for again within the retention: the stored audio, and its retention starts anew.
    expect((await speak('The tide is in.')).key).toBe(first.key);
    expect(engine.spoken).toEqual(['The tide is in.']);

    clock.advance(2 * dayMs);
    await core.fileSweep.sweepOnce();
    expect(await files.read(first.key)).toBeDefined();

    clock.advance(retentionMs);
    await core.fileSweep.sweepOnce();
    // Let go of, as a deleted character's avatar is: the file stays for the grace period.
    expect(await files.read(first.key)).toBeDefined();
    clock.advance(graceMs + 60_000);
    await core.fileSweep.sweepOnce();
    expect(await files.read(first.key)).toBeUndefined();

    const again = await speak('The tide is in.');
    expect(engine.spoken).toEqual(['The tide is in.', 'The tide is in.']);
    expect(again.key).toBe(first.key);
    expect(await files.read(again.key)).toBeDefined();
    // Held again by the cache: the next sweeps keep it.
    clock.advance(graceMs + 60_000);
    await core.fileSweep.sweepOnce();
    await core.fileSweep.sweepOnce();
    expect(await files.read(again.key)).toBeDefined();
  });

  it('keeps the cache within its bytes, the audio asked for longest ago going first', async () => {
    const speak = await speaker();
    const bell = await speak('First, the bell.');
    clock.advance(1_000);
    const tide = await speak('Then the tide.');
    clock.advance(1_000);
    // The bell asked for again: now the tide is the one asked for longest ago.
    await speak('First, the bell.');
    clock.advance(1_000);
    const gulls = await speak('And the gulls.');
    expect(engine.spoken).toHaveLength(3);

    await core.fileSweep.sweepOnce();
    clock.advance(graceMs + 60_000);
    await core.fileSweep.sweepOnce();
    expect(await files.read(tide.key)).toBeUndefined();
    expect(await files.read(bell.key)).toBeDefined();
    expect(await files.read(gulls.key)).toBeDefined();
    // What stayed is still served from the cache, not spoken again.
    await speak('First, the bell.');
    await speak('And the gulls.');
    expect(engine.spoken).toHaveLength(3);
  });
});
