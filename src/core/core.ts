import { Accounts } from './accounts.js';
import { Answers } from './answers.js';
import { Characters } from './characters.js';
import { Chat, type ChatOptions, defaultChatOptions } from './chat.js';
import { Conversations } from './conversations.js';
import { Ledger } from './ledger.js';
import { Memories } from './memories.js';
import type { AudioEncoder, ChatModel, Clock, Embedder, FileStore, IdGenerator, Logger, SpeechEngine, Store } from './ports.js';
import { Speech } from './speech.js';

/** Everything the core needs from outside, passed in by `src/main.ts` (or a test). */
export interface CoreDependencies {
  store: Store;
  files: FileStore;
  chatModel: ChatModel;
  embedder?: Embedder | undefined;
  /** Text to speech; without it characters cannot be given voices. */
  speech?: { engine: SpeechEngine; encoder: AudioEncoder } | undefined;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  options: {
    startingBalance: number;
    adminApiKey: string | undefined;
    chat: Pick<ChatOptions, 'contextTokens' | 'maxReplyTokens'> & Partial<ChatOptions>;
  };
}

/** The use cases of the service, as the front ends (HTTP API, Discord bot) see them. */
export interface Core {
  accounts: Accounts;
  characters: Characters;
  memories: Memories;
  conversations: Conversations;
  chat: Chat;
  answers: Answers;
  speech: Speech | undefined;
  ledger: Ledger;
  files: FileStore;
  chatModel: ChatModel;
}

export function createCore(dependencies: CoreDependencies): Core {
  const { store, files, clock, ids, logger, options } = dependencies;
  const ledger = new Ledger(store, clock, ids);
  const characters = new Characters(store, files, clock, ids);
  const accounts = new Accounts(store, clock, ids, ledger, characters, options);
  const memories = new Memories(store, characters, clock, ids, logger, dependencies.embedder);
  const conversations = new Conversations(store, characters, clock, ids);
  const chat = new Chat(store, conversations, memories, files, dependencies.chatModel, clock, ids, logger, {
    ...defaultChatOptions,
    ...options.chat,
  });
  const speech = dependencies.speech ? new Speech(store, files, characters, dependencies.speech.engine, dependencies.speech.encoder) : undefined;
  const answers = new Answers(store, files, conversations, chat, speech);
  return { accounts, characters, memories, conversations, chat, answers, speech, ledger, files, chatModel: dependencies.chatModel };
}
