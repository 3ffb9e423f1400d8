/**
 * A service process importing a character card, to be killed with SIGKILL by the test that
 * forks it: it says over IPC when it has reached the moment asked for, then waits there, so the
 * kill lands exactly in that window. Not a test file: the parent asserts.
 *
 * `mid-write`: the avatar's bytes are in its temporary file, not yet flushed nor renamed.
 * `before-row`: the avatar is stored under its key, and no character references it yet.
 */
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { importCard } from '../../src/cards/character-cards.js';
import { accountActor } from '../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { createCore } from '../../src/core/core.js';
import type { StoredFile } from '../../src/core/ports.js';
import { createOpenAICompatibleChatModel } from '../../src/engines/chat/openai-compatible.js';
import { WorkerRegexRunner } from '../../src/engines/regex/worker-regex-runner.js';
import { createSharpImageCodec } from '../../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../../src/store/file-store.js';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { smallPng, withTexts } from '../cards/card-fixtures.js';

const [storeUrl, filesDirectory, accountId, moment] = process.argv.slice(2);
if (!storeUrl || !filesDirectory || !accountId || (moment !== 'mid-write' && moment !== 'before-row')) {
  throw new Error('usage: card-import-child <store url> <files directory> <account id> mid-write|before-row');
}
const reached = (detail: unknown) => process.send?.({ type: 'reached', detail });
const forever = () => new Promise<never>(() => {});

/** The disk store, but stopping once the avatar is stored, before anything references it. */
class StoppingFileStore extends DiskFileStore {
  override async put(bytes: Uint8Array, mimeType: string): Promise<StoredFile> {
    const stored = await super.put(bytes, mimeType);
    if (moment === 'before-row') {
      reached(stored.key);
      return forever();
    }
    return stored;
  }
}

if (moment === 'mid-write') {
  // Every write of the store flushes its temporary before the rename: stop at the flush.
  const probe = await open(path.join(os.tmpdir(), `likeness-probe-${process.pid}`), 'w');
  const handles = Object.getPrototypeOf(probe) as { sync(): Promise<void> };
  await probe.close();
  handles.sync = function () {
    reached('flushing');
    return forever();
  };
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const store = await openSqlStore(storeUrl);
const core = createCore({
  repositories: store,
  files: new StoppingFileStore(filesDirectory),
  chatModel: createOpenAICompatibleChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'unused' }),
  imageCodec: createSharpImageCodec(),
  links: { sign: (key) => `http://127.0.0.1:9/files/${key}` },
  clock: createSystemClock(),
  ids: createRandomIds(),
  logger: silent,
  regexKeys: new WorkerRegexRunner({ boundMs: 50, logger: silent }),
  options: { startingBalance: 0, adminApiKey: undefined, chat: { contextTokens: 4096, maxReplyTokens: 256 } },
});
const card = JSON.stringify({ spec: 'chara_card_v2', spec_version: '2.0', data: { name: `Killed ${moment}`, description: 'Never finished.' } });
// An avatar of its own (a shade no other test uses), so its file is this import's alone.
const png = withTexts(smallPng(6, 6, moment === 'mid-write' ? 201 : 202), { chara: Buffer.from(card).toString('base64') });
await importCard(core, accountActor(accountId), accountId, { bytes: png, mimeType: 'image/png' });
process.send?.({ type: 'imported' });
