import type { ImagePayload } from './ports.js';

/**
 * What the core keeps in the store. Field names are ours; the HTTP layer maps them onto
 * the spec's shapes. Timestamps: accounts and ledger in Unix milliseconds (as the spec's
 * Account), everything else in Unix microseconds (the spec's six fractional digits).
 */

export interface AccountRecord {
  id: string;
  createdMillis: number;
  username: string;
  isVerified: boolean;
  isDisabled: boolean;
  isSubscribed: boolean;
  meta: { dateOfBirth: string | null; referredByAccountId: string | null };
  tags: string[];
  characterId: string;
  profilePictureUrl: string | null;
}

export interface FileReference {
  key: string;
  mimeType: string;
  /** Pixel size of an image, as stored (after downscaling); absent on older records. */
  width?: number;
  height?: number;
}

export interface CharacterRecord {
  id: string;
  accountId: string;
  name: string;
  description: string;
  personalitySummary: string;
  isPublic: boolean;
  avatar: FileReference | null;
  ttsVoiceId: string | null;
  createdMicros: number;
  updatedMicros: number;
  /** What a character card defines beyond the fields above. */
  definition: CharacterDefinition;
  /** Set once its owner deleted it: only its name is kept, so conversations that had it still read. */
  deletedMicros: number | null;
  /** Moves with every change to its lorebook (in any process): the book read at a revision is the book while it stays. */
  lorebookRevision: number;
}

/**
 * What a character card defines beyond the seed's fields, in our names (the card module at the
 * edge maps V1/V2/V3 cards onto it). The card's `description` is `description`, its `personality`
 * is `personalitySummary`. Empty strings mean "not set": the app's own text is used.
 */
export interface CharacterDefinition {
  /** Used in the prompt and macros instead of the name when set (V3 `nickname`). */
  nickname: string;
  scenario: string;
  /** The greeting a new conversation opens with (`first_mes`). */
  firstMessage: string;
  /** Alternatives of the first message, offered as swipes. */
  alternateGreetings: string[];
  /** Greetings used instead in a scene (V3 `group_only_greetings`). */
  groupOnlyGreetings: string[];
  /** `<START>` blocks of `{{user}}:` / `{{char}}:` lines (`mes_example`). */
  exampleDialogue: string;
  /** Replaces the app's system prompt; `{{original}}` stands for the app's own text. */
  systemPrompt: string;
  /** Goes after the history; `{{original}}` stands for the app's own text. */
  postHistoryInstructions: string;
  /** For people reading the card; never in a prompt. */
  creatorNotes: string;
  tags: string[];
  creator: string;
  characterVersion: string;
  /** The card's `extensions` as the JSON text read, so other apps' keys go back out unchanged. */
  extensionsJson: string;
}

export const emptyCharacterDefinition: CharacterDefinition = {
  nickname: '',
  scenario: '',
  firstMessage: '',
  alternateGreetings: [],
  groupOnlyGreetings: [],
  exampleDialogue: '',
  systemPrompt: '',
  postHistoryInstructions: '',
  creatorNotes: '',
  tags: [],
  creator: '',
  characterVersion: '',
  extensionsJson: '{}',
};

export interface MemoryRecord {
  id: string;
  text: string;
  createdMicros: number;
}

export interface ConversationRecord {
  id: string;
  /** The account that opened the conversation. */
  accountId: string;
  /** The character the conversation is with: the one that answers unless another is chosen. */
  characterId: string;
  /** Accounts that may read and write, in the order they joined; the opener first. */
  speakerAccountIds: string[];
  /** Every character in the conversation (a scene holds several), in join order; `characterId` first. */
  characterIds: string[];
  createdMicros: number;
  updatedMicros: number;
}

/**
 * What fell out of a conversation's context window, summarised by the chat model, so the
 * character still knows what happened earlier.
 */
export interface ConversationSummaryRecord {
  text: string;
  /** Index in the message list up to which (exclusive) the summary covers the messages. */
  throughIndex: number;
  /** The last message covered. */
  throughMessageId: string;
  updatedMicros: number;
}

/** What the service learned about a chat model from its answers, shared by every process. */
export interface ChatModelTraitsRecord {
  modelId: string;
  /** The model refused image parts: later prompts carry a placeholder instead. */
  cannotSeeImages: boolean;
  /** A context smaller than configured, learned when the engine refused or cut a prompt. */
  contextTokens: number | null;
  updatedMicros: number;
}

export type ParticipantType = 'account' | 'character';

export interface MessageRecord {
  id: string;
  /** Text of the message; for an image message, empty or a caption. */
  content: string;
  mimeType: string;
  participantId: string;
  participantType: ParticipantType;
  createdMicros: number;
  /** The stored file of an image (or, later, audio) message. */
  file: FileReference | null;
  /**
   * Why a character's reply ended, as the engine said (`stop`, `length`, …), or `length` when
   * we stopped reading at our own limit. Absent on people's messages and older replies.
   */
  finishReason?: string;
}

export type TransactionType = 'credit' | 'debit' | 'refund';

export interface TransactionRecord {
  id: string;
  accountId: string;
  type: TransactionType;
  /** Always positive; `debit` lowers the balance, `credit` and `refund` raise it. */
  amount: number;
  reason: string;
  createdMillis: number;
  /** For a refund: the debit it gives back. */
  refundOf: string | null;
  /** What the transaction paid for, e.g. a job id; absent on older records. */
  reference?: string | null;
}

export interface ApiKeyRecord {
  accountId: string;
  createdMillis: number;
}

export type FaceModelStatus = 'IN_PROGRESS' | 'SUCCESS' | 'FAILED';

/** A trained LoRA face model of a character, made by a `FACE_MODEL_TRAINING` job. */
export interface FaceModelRecord {
  id: string;
  characterId: string;
  jobId: string;
  createdMillis: number;
  status: FaceModelStatus;
  /** The trained archive, once status is SUCCESS. */
  archive: FileReference | null;
  /** The token that brings the face into a prompt (e.g. `<s0><s1>`), once status is SUCCESS. */
  triggerToken: string | null;
  /** Why training failed, when status is FAILED. */
  failure: string | null;
}

export type JobType = 'IMAGE_INFERENCE' | 'FACE_MODEL_TRAINING';
export type JobStatus = 'CREATED' | 'IN_PROGRESS' | 'SUCCESS' | 'FAILED' | 'CANCELED';

export interface JobStatusEntry {
  id: string;
  status: JobStatus;
  createdMillis: number;
}

export interface OutputFeedback {
  like: boolean | null;
  feedback: string | null;
}

export interface OutputFileRecord {
  /** File name, unique within the job, e.g. `image-1.png`. */
  name: string;
  key: string;
  mimeType: string;
  size: number;
  createdMillis: number;
  feedback: OutputFeedback;
}

/**
 * What a training job was given: the character, the model it makes and how many photos went
 * into the zip (`JobRecord.photos`). The HTTP serializer shows it under the spec's names.
 */
export interface TrainingPayload {
  characterId: string;
  faceModelId: string;
  photoCount: number;
}

/**
 * A unit of engine work: an image generation or a face-model training. A job is written
 * before anything is charged and carries every fact needed to finish it after a restart.
 */
export interface JobRecord {
  id: string;
  accountId: string;
  clientId: string | null;
  createdMillis: number;
  type: JobType;
  /** Image jobs: the engine parameters, seed included. Trainings: what was trained. */
  payload: ImagePayload | TrainingPayload;
  /**
   * Image jobs: the face model applied, with its archive (the Job JSON's `payload.lora_1`).
   * Trainings: the model being trained (no archive yet).
   */
  faceModel: { id: string; characterId: string; archiveKey: string | null } | null;
  /** Trainings: the zip of face photos the trainer fetches. */
  photos: FileReference | null;
  status: JobStatus;
  /** History, newest first. */
  statuses: JobStatusEntry[];
  outputFiles: OutputFileRecord[];
  /** The debit that paid for the job; null only in the instant before it is charged. */
  transactionId: string | null;
  /** The engine's id for the run, once submitted, so a restart follows it instead of starting again. */
  externalId: string | null;
  /** When the job started running; its time limit counts from here. */
  startedMillis: number | null;
  failure: { code: string; message: string } | null;
  /**
   * True once everything a final status implies is done (refund, face-model state). Recovery
   * finishes what a crash interrupted for jobs that are final but not settled.
   */
  settled: boolean;
}

/**
 * Where a learned memory was said, which decides where it may be used again (see
 * `memory-scope.ts`): `private` (a DM, or an API conversation with one person), `server:<id>` (a
 * Discord server's channel or thread, others can read), `conversation:<id>` (an API conversation
 * several people share).
 */
export type MemoryOrigin = 'private' | `server:${string}` | `conversation:${string}`;

/** `person`: about someone who talked with the character; `own`: the character's own, proposed from its owner's words. */
export type LearnedMemoryKind = 'person' | 'own';

/**
 * `active`: used; `pending`: an own memory awaiting its owner's review; `rejected`: refused by
 * the owner, kept only so it is never proposed again; `superseded`: stopped being true
 * (`supersededMicros`), kept for the record and shown as changed, never used.
 */
export type LearnedMemoryStatus = 'active' | 'pending' | 'rejected' | 'superseded';

/** A fact a character learned from a conversation. */
export interface LearnedMemoryRecord {
  id: string;
  characterId: string;
  /** The account it is about (`person`), or the owner whose words proposed it (`own`). */
  subjectAccountId: string;
  kind: LearnedMemoryKind;
  /** One short fact: third person about a person, first person for the character's own. */
  text: string;
  status: LearnedMemoryStatus;
  origin: MemoryOrigin;
  /** Where it was said. */
  conversationId: string;
  messageIds: string[];
  /** How much it matters to the person, 1 (trivia) to 5 (life-changing), as the extractor judged. */
  importance: number;
  /** When it was said (the message's time). */
  statedMicros: number;
  createdMicros: number;
  updatedMicros: number;
  /** When it stopped being true, and the memory that replaced it. */
  supersededMicros: number | null;
  supersededBy: string | null;
  /** A pending own memory that contradicts an approved one: that one, superseded once this is approved. */
  replaces?: string;
}

/** `queued` → `running` (leased) → `done`, or back to `queued` to be retried later. */
export type MemoryBatchStatus = 'queued' | 'running' | 'done';

/**
 * Messages of a conversation waiting to be learned from: positions `fromPosition` to
 * `throughPosition`, both included. Run exactly once across processes, by lease.
 */
export interface MemoryBatchRecord {
  id: string;
  conversationId: string;
  fromPosition: number;
  throughPosition: number;
  status: MemoryBatchStatus;
  attempts: number;
  /** Not claimed before this time (a retry's backoff, or the quiet time a conversation is given). */
  runAfterMillis: number;
  leaseOwner: string | null;
  leaseUntilMillis: number | null;
  createdMicros: number;
  /** Why the last attempt failed (our words, bounded), for the log and the operator. */
  lastError: string | null;
}
