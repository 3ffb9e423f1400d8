import { afterAll, beforeAll, describe } from 'vitest';
import type { RepositoryStore } from '../../src/core/repositories.js';
import { accountsAndLedgerContract } from './contract/accounts-ledger.js';
import type { ContractContext } from './contract/contract-context.js';
import { conversationsAndCharactersContract } from './contract/conversations-characters.js';
import { discordVoiceRepliesContract } from './contract/discord-voice-replies.js';
import { discordVoiceRulesContract } from './contract/discord-voice-rules.js';
import { fileReleasesContract } from './contract/file-releases.js';
import { jobsAndTheRestContract } from './contract/jobs-and-the-rest.js';
import { learnedMemoriesContract } from './contract/learned-memories.js';
import { learningPerPersonContract } from './contract/learning-per-person.js';
import { manyCharactersContract } from './contract/many-characters.js';
import { memoryBatchesContract } from './contract/memory-batches.js';
import { messageAlternativesContract } from './contract/message-alternatives.js';
import { speechAudioContract } from './contract/speech-audio.js';
import { newAccountRecords, uniqueUsername } from './repository-fixtures.js';

/** One database under test. `open` may be called many times: each store is a separate pool, as another process would hold. */
export interface RepositoryBackend {
  open(): Promise<RepositoryStore>;
  destroy(): Promise<void>;
}

/**
 * The repository contract: every invariant the SQL adapters promise, run against each
 * dialect. Two stores on one database stand in for two processes (the multi-process test
 * does it with real processes).
 */
export function describeRepositories(name: string, createBackend: () => Promise<RepositoryBackend>): void {
  describe(`Repository contract: ${name}`, () => {
    let backend: RepositoryBackend | undefined;
    let store: RepositoryStore | undefined;
    let other: RepositoryStore | undefined;

    beforeAll(async () => {
      backend = await createBackend();
      store = await backend.open();
      other = await backend.open();
    });
    afterAll(async () => {
      await store?.close();
      await other?.close();
      await backend?.destroy();
    });

    const opened = (each: RepositoryStore | undefined): RepositoryStore => {
      if (!each) throw new Error('The backend did not open.');
      return each;
    };
    const context: ContractContext = {
      store: () => opened(store),
      other: () => opened(other),
      async createAccount(prefix = 'user', balance = 100) {
        const records = newAccountRecords(uniqueUsername(prefix), balance);
        await opened(store).accounts.create(records);
        return records;
      },
    };

    accountsAndLedgerContract(context);
    conversationsAndCharactersContract(context);
    jobsAndTheRestContract(context);
    discordVoiceRepliesContract(context);
    discordVoiceRulesContract(context);
    learnedMemoriesContract(context);
    memoryBatchesContract(context);
    learningPerPersonContract(context);
    manyCharactersContract(context);
    messageAlternativesContract(context);
    fileReleasesContract(context);
    speechAudioContract(context);
  });
}
