import { adminActor } from '../../../src/core/actor.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Actor, accountActor } from '../../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../../src/core/clock.js';
import { type Core, type CoreDependencies, createCore } from '../../../src/core/core.js';
import { createOpenAICompatibleChatModel } from '../../../src/engines/chat/openai-compatible.js';
import { DiskFileStore } from '../../../src/store/file-store.js';
import { type SqlStore, openSqlStore } from '../../../src/store/sql/sql-store.js';
import { ScriptedImageEngine, ScriptedTrainer } from './scripted-engines.js';
import { createSharpImageCodec } from '../../../src/media/sharp-image-codec.js';
import { WorkerRegexRunner } from '../../../src/engines/regex/worker-regex-runner.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

export interface CoreHarness {
  core: Core;
  repositories: SqlStore;
  engine: ScriptedImageEngine;
  trainer: ScriptedTrainer;
  /** A new account with `balance` credits, and the actor acting as it. */
  account(balance: number): Promise<{ actor: Actor; accountId: string; characterId: string }>;
  /** Stops the core as the service does on SIGTERM and builds a new one on the same store. */
  restart(options?: { engine?: ScriptedImageEngine }): Promise<void>;
  /**
   * Leaves the running core as a killed process would (its leases neither renewed nor let go)
   * and starts a second one on the same database with a new engine.
   */
  abandon(): Promise<void>;
  close(): Promise<void>;
}

type ImageOptions = NonNullable<CoreDependencies['options']['images']>;

/** The core alone on a real SQLite store and file store, with scripted engines. */
export async function startCoreHarness(images: ImageOptions = {}, engineConcurrency = 2): Promise<CoreHarness> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-jobs-'));
  const repositoriesUrl = `sqlite://${path.join(directory, 'likeness.sqlite')}`;
  const files = new DiskFileStore(path.join(directory, 'files'));
  const build = (repositories: SqlStore, engine: ScriptedImageEngine, trainer: ScriptedTrainer) =>
    createCore({
      repositories,
      files,
      chatModel: createOpenAICompatibleChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'unused' }),
      imageCodec: createSharpImageCodec(),
      images: { engine, trainer },
      links: { sign: (key) => `http://127.0.0.1:9/files/${key}?signature=test` },
      clock: createSystemClock(),
      ids: createRandomIds(),
      logger: silent,
      regexKeys: new WorkerRegexRunner({ boundMs: 50, logger: silent }),
      options: {
        startingBalance: 0,
        adminApiKey: undefined,
        chat: { contextTokens: 4096, maxReplyTokens: 256 },
        images: { retryDelayMs: 10, ...images },
      },
    });
  const abandoned: Core[] = [];
  const harness: CoreHarness = {
    repositories: await openSqlStore(repositoriesUrl),
    engine: new ScriptedImageEngine(engineConcurrency),
    trainer: new ScriptedTrainer(),
    core: undefined as unknown as Core,
    account: async (balance) => {
      const { account } = await harness.core.accounts.create({ type: 'admin' }, { username: `user-${Math.random().toString(36).slice(2, 10)}` });
      if (balance > 0) await harness.core.accounts.credit(adminActor, account.id, balance, 'test');
      return { actor: accountActor(account.id), accountId: account.id, characterId: account.characterId };
    },
    restart: async (options = {}) => {
      await harness.core.images.stop();
      await harness.repositories.close();
      harness.repositories = await openSqlStore(repositoriesUrl);
      harness.engine = options.engine ?? new ScriptedImageEngine(engineConcurrency);
      harness.trainer = new ScriptedTrainer();
      harness.core = build(harness.repositories, harness.engine, harness.trainer);
      await harness.core.images.start();
    },
    abandon: async () => {
      abandoned.push(harness.core);
      // Without its database the old core renews nothing and lets nothing go, as if killed;
      // its engine runs stay where they are.
      await harness.repositories.close();
      harness.repositories = await openSqlStore(repositoriesUrl);
      harness.engine = new ScriptedImageEngine(engineConcurrency);
      harness.core = build(harness.repositories, harness.engine, harness.trainer);
      await harness.core.images.start();
    },
    close: async () => {
      await Promise.all(abandoned.map((core) => core.images.stop()));
      await harness.core.images.stop();
      await harness.repositories.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
  harness.core = build(harness.repositories, harness.engine, harness.trainer);
  await harness.core.images.start();
  return harness;
}
