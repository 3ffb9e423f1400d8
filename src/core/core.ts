import { Accounts } from './accounts.js';
import { Answers } from './answers.js';
import { Characters, type CharactersOptions, defaultCharactersOptions } from './characters.js';
import { Chat, type ChatOptions, defaultChatOptions } from './chat.js';
import { Conversations } from './conversations.js';
import { ConversationSpeakers } from './conversation-speakers.js';
import { VoiceCalls } from './voice-calls.js';
import { Images, type ImagesOptions } from './images/images.js';
import { JobRunner, type JobRunnerOptions, type JobWorker, defaultJobRunnerOptions } from './images/job-runner.js';
import { Jobs } from './images/jobs.js';
import { imageWorker, trainingWorker } from './images/workers.js';
import { FileSweep, type FileSweepOptions, RenewingFileStore, defaultFileSweepOptions } from './file-sweep.js';
import { Files } from './files.js';
import { Ledger } from './ledger.js';
import { LearnedMemories } from './learning/learned-memories.js';
import { LearningGate } from './learning/learning-gate.js';
import { Learner, type LearnerOptions, defaultLearnerOptions } from './learning/learner.js';
import { LearnedRecall } from './learning/recall.js';
import { Lorebooks } from './lorebooks.js';
import { LorebookUse } from './lorebook/used-entries.js';
import { Memories } from './memories.js';
import type { AudioEncoder, ChatModel, Clock, Embedder, FaceTrainer, FileLinks, FileStore, IdGenerator, ImageCodec, ImageEngine, Logger, RegexKeyRunner, SpeechEngine, SpeechToText, TokenCounter, UseLimit } from './ports.js';
import type { RepositoryStore } from './repositories.js';
import { Speech, type SpeechOptions, defaultSpeechOptions } from './speech.js';
import { LearningTokenEstimator } from './tokens.js';

/** Everything the core needs from outside, passed in by `src/main.ts` (or a test). */
export interface CoreDependencies {
  /** Accounts, characters, conversations, the ledger and the rest, in the database. */
  repositories: RepositoryStore;
  files: FileStore;
  chatModel: ChatModel;
  /** Counts tokens as the chat model does; by default a conservative estimate that learns from answers. */
  tokenCounter?: TokenCounter | undefined;
  /** Reads image headers (format, size, pixel limit) and downscales the images people send. */
  imageCodec: ImageCodec;
  embedder?: Embedder | undefined;
  /** Speech to text for voice messages; without it they are refused with `TRANSCRIPTION_UNAVAILABLE`. */
  speechToText?: SpeechToText | undefined;
  /**
   * Text to speech; without it characters cannot be given voices. `limit` counts the texts
   * each account asks to hear (SPEECH_RATE_LIMIT_PER_MINUTE); none without it.
   */
  speech?: { engine: SpeechEngine; encoder: AudioEncoder; limit?: UseLimit | undefined } | undefined;
  /** Image generation and face training; either may be absent (then a clear 503 says what to set). */
  images?: { engine?: ImageEngine | undefined; trainer?: FaceTrainer | undefined } | undefined;
  /** Signed URLs of stored files, for engines that fetch them (face archives, training photos). */
  links: FileLinks;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** Runs lorebook regular-expression keys, bounded in time whatever the pattern (one per process). */
  regexKeys: RegexKeyRunner;
  options: {
    images?: Partial<ImagesOptions & JobRunnerOptions & { imageTimeLimitMs: number; trainingTimeLimitMs: number }>;
    startingBalance: number;
    adminApiKey: string | undefined;
    chat: Pick<ChatOptions, 'contextTokens' | 'maxReplyTokens'> & Partial<ChatOptions>;
    /** Learning from conversations (issue 21). */
    learning?: (Partial<LearnerOptions> & { enabled?: boolean }) | undefined;
    /** Many characters per account (issue 22). */
    characters?: Partial<CharactersOptions> | undefined;
    /** How long files let go of are kept, and how often worker processes sweep them. */
    files?: Partial<FileSweepOptions> | undefined;
    /** How long a text may be, and how long and how much spoken audio is kept (issue 28). */
    speech?: Partial<Omit<SpeechOptions, 'limit'>> | undefined;
    /** Names this process in the leases it takes on shared queues. */
    workerName?: string | undefined;
  };
}

/** The use cases of the service, as the front ends (HTTP API, Discord bot) see them. */
export interface Core {
  accounts: Accounts;
  characters: Characters;
  lorebooks: Lorebooks;
  /** Which lorebook entries a reply was written with, for the character's owner. */
  lorebookUse: LorebookUse;
  memories: Memories;
  conversations: Conversations;
  /** Who speaks in a conversation: invitations, joining, leaving. */
  speakers: ConversationSpeakers;
  chat: Chat;
  answers: Answers;
  speech: Speech | undefined;
  images: Images;
  files: Files;
  chatModel: ChatModel;
  /** Learns from conversations in the background; worker processes `start()` it. */
  learner: Learner;
  /** What people see and change of what characters learned. */
  learnedMemories: LearnedMemories;
  /** Conversations by voice in a call: turns written down, interrupted replies kept as heard. */
  voiceCalls: VoiceCalls;
  /** Removes files let go of once nothing has held them for a while; worker processes `start()` it. */
  fileSweep: FileSweep;
}

export const defaultImageOptions = {
  imageCreditCost: 1,
  trainingCreditCost: 20,
  imageTimeLimitMs: 10 * 60_000,
  trainingTimeLimitMs: 60 * 60_000,
} as const;

export function createCore(dependencies: CoreDependencies): Core {
  const { repositories, clock, ids, logger, options } = dependencies;
  const speechOptions: SpeechOptions = { ...defaultSpeechOptions, ...options.speech, limit: dependencies.speech?.limit };
  const fileSweep = new FileSweep(repositories, dependencies.files, clock, logger, {
    ...defaultFileSweepOptions,
    speechCache: { retentionMs: speechOptions.cacheRetentionMs, maxBytes: speechOptions.cacheMaxBytes },
    ...options.files,
  });
  // Every use case stores through it: a file stored again is safe from the sweep for a while.
  const files = new RenewingFileStore(dependencies.files, repositories, clock);
  const ledger = new Ledger(repositories, clock, ids);
  const characters = new Characters(repositories, files, clock, ids, dependencies.imageCodec, { ...defaultCharactersOptions, ...options.characters });
  const lorebooks = new Lorebooks(repositories, characters, ids, dependencies.regexKeys);
  const accounts = new Accounts(repositories, clock, ids, characters, ledger, options);
  const memories = new Memories(repositories, characters, clock, ids, logger, dependencies.embedder);
  const conversations = new Conversations(repositories, characters, clock, ids);
  const tokenCounter = dependencies.tokenCounter ?? new LearningTokenEstimator();
  const chatOptions = { ...defaultChatOptions, ...options.chat };
  const recall = new LearnedRecall(repositories, clock, dependencies.embedder, logger);
  const chat = new Chat(
    repositories,
    conversations,
    memories,
    files,
    dependencies.chatModel,
    tokenCounter,
    dependencies.imageCodec,
    clock,
    ids,
    logger,
    chatOptions,
    dependencies.regexKeys,
    dependencies.speechToText,
    recall,
  );
  // Every stored message is noticed; a batch of them is learned from in the background.
  const learner = new Learner(repositories, dependencies.chatModel, tokenCounter, clock, ids, logger, options.workerName ?? 'core', { ...defaultLearnerOptions, ...options.learning }, dependencies.embedder);
  // On when the configuration says (main passes LEARNING); a core built without it learns nothing.
  if (options.learning?.enabled ?? false) conversations.onAppended = (message) => learner.noticed(message.conversationId, message.position);
  // What is said while learning is off is marked so as it is stored: turned on later, it is never learned.
  conversations.learningGate = new LearningGate(repositories, options.learning?.enabled ?? false);
  const learnedMemories = new LearnedMemories(repositories, characters, conversations, clock, ids, (memoryIds) => recall.forget(memoryIds));
  const speech = dependencies.speech ? new Speech(repositories, files, characters, dependencies.speech.engine, dependencies.speech.encoder, logger, clock, speechOptions) : undefined;
  if (speech) characters.onDeleted = (characterId) => speech.forgetVoice(characterId);
  const answers = new Answers(repositories, files, conversations, chat, speech);
  const imageOptions = { ...defaultImageOptions, ...defaultJobRunnerOptions, ...options.images };
  const workers: { IMAGE_INFERENCE?: JobWorker; FACE_MODEL_TRAINING?: JobWorker } = {};
  const { engine, trainer } = dependencies.images ?? {};
  if (engine) workers.IMAGE_INFERENCE = imageWorker(engine, repositories, dependencies.links, imageOptions.imageTimeLimitMs);
  if (trainer) workers.FACE_MODEL_TRAINING = trainingWorker(trainer, repositories, dependencies.links, imageOptions.trainingTimeLimitMs);
  const jobs = new Jobs(repositories, clock, ids);
  const runner = new JobRunner(jobs, repositories, files, ledger, clock, ids, logger, workers, imageOptions);
  const images = new Images(repositories, files, characters, jobs, runner, clock, ids, imageOptions, dependencies.imageCodec);
  return { accounts, characters, lorebooks, lorebookUse: new LorebookUse(repositories, conversations), memories, conversations, speakers: new ConversationSpeakers(repositories, conversations, clock), chat, answers, speech, images, files: new Files(files), chatModel: dependencies.chatModel, learner, learnedMemories, voiceCalls: new VoiceCalls(chat, conversations, dependencies.speechToText, logger), fileSweep };
}
