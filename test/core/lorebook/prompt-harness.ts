import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Actor, accountActor, adminActor } from '../../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../../src/core/clock.js';
import { type Core, createCore } from '../../../src/core/core.js';
import type { Lorebook } from '../../../src/core/lorebook/lorebook.js';
import type { CharacterDefinition, CharacterRecord } from '../../../src/core/records.js';
import { emptyCharacterDefinition } from '../../../src/core/records.js';
import { createOpenAICompatibleChatModel } from '../../../src/engines/chat/openai-compatible.js';
import { createSharpImageCodec } from '../../../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../../../src/store/file-store.js';
import { type SqlStore, openSqlStore } from '../../../src/store/sql/sql-store.js';
import { type FakeOpenAI, type FakeRequestBody, startFakeOpenAI } from '../../fakes/fake-openai.js';
import { WorkerRegexRunner } from '../../../src/engines/regex/worker-regex-runner.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

export interface PromptHarness {
  core: Core;
  store: SqlStore;
  llm: FakeOpenAI;
  actor: Actor;
  accountId: string;
  characterId: string;
  conversationId: string;
  /** Gives the character a card's definition and lorebook. */
  card(definition: Partial<CharacterDefinition>, book?: Lorebook, fields?: Partial<Pick<CharacterRecord, 'description' | 'personalitySummary'>>): Promise<void>;
  /** Sends `text` and waits for the stored reply; answers the messages the engine received. */
  say(text: string): Promise<{ messages: NonNullable<FakeRequestBody['messages']>; replyId: string }>;
  close(): Promise<void>;
}

/** The core on a real SQLite store, its chat model the fake OpenAI-compatible engine on loopback. */
export async function startPromptHarness(chat: { contextTokens: number; maxReplyTokens: number; random?: () => number }): Promise<PromptHarness> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-lorebook-'));
  const llm = await startFakeOpenAI({ script: { reply: 'Noted.' } });
  const store = await openSqlStore(`sqlite://${path.join(directory, 'likeness.sqlite')}`);
  const core = createCore({
    repositories: store,
    files: new DiskFileStore(path.join(directory, 'files')),
    chatModel: createOpenAICompatibleChatModel({ baseURL: llm.baseURL, model: 'fake-model' }),
    imageCodec: createSharpImageCodec(),
    links: { sign: (key) => `http://127.0.0.1:9/files/${key}` },
    clock: createSystemClock(),
    ids: createRandomIds(),
    logger: silent,
    regexKeys: new WorkerRegexRunner({ boundMs: 50, logger: silent }),
    options: { startingBalance: 0, adminApiKey: undefined, chat },
  });
  const { account } = await core.accounts.create(adminActor, { username: 'Sam' });
  const actor = accountActor(account.id);
  const conversation = await core.conversations.create(actor, account.id, account.characterId);
  return {
    core,
    store,
    llm,
    actor,
    accountId: account.id,
    characterId: account.characterId,
    conversationId: conversation.id,
    async card(definition, book, fields = {}) {
      const character = (await store.characters.get(account.characterId))!;
      await store.characters.update({ ...character, ...fields, definition: { ...emptyCharacterDefinition, ...definition } });
      if (book) await store.lorebooks.replace(account.characterId, book);
    },
    async say(text) {
      const reply = await core.chat.send(actor, conversation.id, { text }, { stream: false });
      const stored = await reply.done;
      const request = llm.requests.filter((each) => each.path.endsWith('/chat/completions') && !String(each.body.messages?.[0]?.content).includes('running summary')).at(-1)!;
      return { messages: request.body.messages ?? [], replyId: stored.id };
    },
    async close() {
      await core.chat.idle(2000);
      await store.close();
      await llm.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
