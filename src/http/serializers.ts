import { isoMicros } from '../core/clock.js';
import type { SyncAnswer } from '../core/answers.js';
import type { ConversationRead, ConversationView } from '../core/conversations.js';
import type { ImagePayload } from '../core/ports.js';
import type { ConversationInvitation, StoredMessage } from '../core/repositories.js';
import type {
  AccountRecord,
  CharacterRecord,
  FaceModelRecord,
  JobRecord,
  LearnedMemoryRecord,
  MemoryRecord,
  OutputFileRecord,
  TrainingPayload,
  TransactionRecord,
} from '../core/records.js';
import { toSpecImagePayload } from '../engines/image/spec-payload.js';
import { definitionFields } from './character-fields.js';
import type { UrlSigner } from './signed-urls.js';

const closing = Buffer.from(']}');

/** The spec's shapes (field names, types, formats) built from the core's records. */
export class Serializers {
  /**
   * JSON of text messages, by record. Stored records are immutable and the store hands out
   * the same frozen object while it caches one, so a conversation read serialises each
   * message once instead of on every request; entries go when the store drops the record.
   */
  readonly #messageJson = new WeakMap<StoredMessage, string>();
  /** The joined JSON of a frozen message list as bytes, and the URL expiry it was signed with. */
  readonly #listJson = new WeakMap<readonly StoredMessage[], { expiry: number; bytes: Buffer }>();
  /** Whole conversation reads as bytes, and the URL expiry they were signed with. */
  readonly #readBody = new WeakMap<ConversationRead, { expiry: number; bytes: Uint8Array<ArrayBuffer> }>();

  constructor(private readonly signer: UrlSigner) {}

  account(account: AccountRecord) {
    return {
      id: account.id,
      created: account.createdMillis,
      username: account.username,
      isVerified: account.isVerified,
      isDisabled: account.isDisabled,
      isSubscribed: account.isSubscribed,
      meta: { dateOfBirth: account.meta.dateOfBirth, referredByAccountId: account.meta.referredByAccountId },
      tags: account.tags,
      characterId: account.characterId,
      profilePictureUrl: account.profilePictureUrl,
    };
  }

  character(character: CharacterRecord) {
    return {
      id: character.id,
      name: character.name,
      description: character.description,
      is_public: character.isPublic,
      account_id: character.accountId,
      avatar_url: character.avatar ? this.signer.sign(character.avatar.key) : null,
      personality_summary: character.personalitySummary,
      tts_voice_id: character.ttsVoiceId,
      created: isoMicros(character.createdMicros),
      updated: isoMicros(character.updatedMicros),
      ...definitionFields(character.definition),
    };
  }

  conversation(view: ConversationView) {
    const { conversation } = view;
    return {
      id: conversation.id,
      // People, then every character of the scene, the one the conversation is with first.
      speakers: [
        ...view.accounts.map((account) => ({
          id: account.id,
          name: account.username,
          type: 'account' as const,
          avatarUrl: account.profilePictureUrl,
        })),
        ...view.characters.map((character) => ({
          id: character.id,
          name: character.name,
          type: 'character' as const,
          avatarUrl: character.avatar ? this.signer.sign(character.avatar.key) : null,
          ...(character.deletedMicros === null ? {} : { deleted: true }),
        })),
      ],
      created: isoMicros(conversation.createdMicros),
      updated: isoMicros(view.updatedMicros),
    };
  }

  /** An invitation waiting: the invited account joins with `POST …/speakers {accountId: itself}`. */
  invitation(invitation: ConversationInvitation) {
    return {
      conversationId: invitation.conversationId,
      accountId: invitation.accountId,
      invitedByAccountId: invitation.invitedByAccountId,
      created: isoMicros(invitation.createdMicros),
    };
  }

  message(message: StoredMessage) {
    // A file message's content is the signed URL of its file.
    const content = message.file ? this.signer.sign(message.file.key) : message.content;
    return {
      id: message.id,
      content,
      mimetype: message.mimeType,
      participant_id: message.participantId,
      participant_type: message.participantType,
      created: isoMicros(message.createdMicros),
      // Added member: why a reply ended (`length` when it was cut), when known.
      ...(message.finishReason === undefined ? {} : { finish_reason: message.finishReason }),
      // Added member: a voice message's words; `content` is its audio, as an image message's is its image.
      ...(message.file && message.mimeType.startsWith('audio/') ? { transcript: message.content } : {}),
      // Added members (issue 22): the alternatives' texts in order and the chosen one, so
      // `content` is always `swipes[swipe_index]`; a message with one alternative has just its content.
      swipes: message.alternatives.length > 1 ? message.alternatives.map((alternative) => alternative.content) : [content],
      swipe_index: message.alternatives.length > 1 ? message.chosenIndex : 0,
      // Added member (issue 22): a character's greeting, swiped but never regenerated.
      ...(message.greeting ? { greeting: true } : {}),
    };
  }

  faceModel(model: FaceModelRecord) {
    return {
      id: model.id,
      jobId: model.jobId,
      created: model.createdMillis,
      status: model.status,
      ...(model.status === 'SUCCESS' && model.archive ? { url: this.signer.sign(model.archive.key) } : {}),
      ...(model.status === 'FAILED' ? { failure: model.failure } : {}),
    };
  }

  /**
   * The spec's Job, its payload under the spec's snake_case names (`toSpecImagePayload` for
   * images). Image payloads gain `lora_1`, a fresh signed URL of the face archive;
   * added members: `failure` (code and message of a failed job), `progress` (0–1 while the
   * engine reports it) and `queuePosition` (jobs ahead, while waiting).
   */
  job(job: JobRecord, progress: number | null, queuePosition?: number) {
    return {
      id: job.id,
      accountId: job.accountId,
      clientId: job.clientId,
      created: job.createdMillis,
      type: job.type,
      payload: this.#payload(job),
      outputFiles: job.outputFiles.map((file) => this.outputFile(file)),
      status: job.status,
      statuses: job.statuses.map((entry) => ({ id: entry.id, status: entry.status, created: entry.createdMillis })),
      failure: job.failure,
      progress,
      ...(queuePosition === undefined ? {} : { queuePosition }),
    };
  }

  outputFile(file: OutputFileRecord) {
    return {
      name: file.name,
      path: file.key,
      created: file.createdMillis,
      size: file.size,
      url: this.outputUrl(file),
      feedback: { like: file.feedback.like, feedback: file.feedback.feedback },
    };
  }

  outputUrl(file: OutputFileRecord): string {
    return this.signer.sign(file.key);
  }

  /** The job's payload under the spec's names; the core keeps its own (see `ImagePayload`, `TrainingPayload`). */
  #payload(job: JobRecord) {
    if (job.type === 'FACE_MODEL_TRAINING') {
      const payload = job.payload as TrainingPayload;
      return {
        character_id: payload.characterId,
        face_model_id: payload.faceModelId,
        photo_count: payload.photoCount,
        ...(job.photos ? { input_images: this.signer.sign(job.photos.key) } : {}),
      };
    }
    const archiveKey = job.faceModel?.archiveKey;
    return toSpecImagePayload(job.payload as ImagePayload, archiveKey ? this.signer.sign(archiveKey) : undefined);
  }

  /** `message()` as JSON text, memoised for messages without a file (whose URL changes with time). */
  messageJson(message: StoredMessage): string {
    if (message.file) return JSON.stringify(this.message(message));
    let json = this.#messageJson.get(message);
    if (json === undefined) {
      json = JSON.stringify(this.message(message));
      if (Object.isFrozen(message)) this.#messageJson.set(message, json);
    }
    return json;
  }

  /**
   * A conversation with its messages as UTF-8 JSON, and the rolling summary of what fell out of
   * the context window (null when there is none). Memoised as bytes per read (the core hands
   * out the same frozen read while nothing changed) and URL expiry; the messages' part also per
   * frozen list, so a read whose head changed encodes only the head.
   */
  conversationReadBody(read: ConversationRead): Uint8Array<ArrayBuffer> {
    const expiry = this.signer.expiry();
    const memo = this.#readBody.get(read);
    if (memo?.expiry === expiry) return memo.bytes;
    const head = JSON.stringify({ ...this.conversation(read.view), summary: read.summary });
    // Buffer.concat allocates a plain ArrayBuffer (never a shared one), which is what a response body takes.
    const bytes = Buffer.concat([Buffer.from(`${head.slice(0, -1)},"messages":[`), this.#messagesBytes(read.messages), closing]) as Uint8Array<ArrayBuffer>;
    if (Object.isFrozen(read)) this.#readBody.set(read, { expiry, bytes });
    return bytes;
  }

  #messagesBytes(messages: readonly StoredMessage[]): Buffer {
    const expiry = this.signer.expiry();
    const memo = this.#listJson.get(messages);
    if (memo?.expiry === expiry) return memo.bytes;
    const bytes = Buffer.from(messages.map((message) => this.messageJson(message)).join(','));
    if (Object.isFrozen(messages)) this.#listJson.set(messages, { expiry, bytes });
    return bytes;
  }

  /** The spec's synchronous chat answer; `finishReason` (added) says why the reply ended. */
  syncAnswer(answer: SyncAnswer) {
    const finish = answer.finishReason === undefined ? {} : { finishReason: answer.finishReason };
    if ('text' in answer) return { data: answer.text, mimeType: 'text/plain', ...finish };
    return { data: answer.audio.toString('base64'), mimeType: 'audio/mp3', ...finish };
  }

  memory(memory: MemoryRecord) {
    return { id: memory.id, text: memory.text, created: isoMicros(memory.createdMicros) };
  }

  learnedMemory(memory: LearnedMemoryRecord & { replacing?: Pick<LearnedMemoryRecord, 'id' | 'text'> | undefined }) {
    return {
      id: memory.id,
      character_id: memory.characterId,
      kind: memory.kind,
      text: memory.text,
      status: memory.status,
      origin: memory.origin,
      conversation_id: memory.conversationId,
      message_ids: memory.messageIds,
      importance: memory.importance,
      stated: isoMicros(memory.statedMicros),
      created: isoMicros(memory.createdMicros),
      superseded: memory.supersededMicros === null ? null : isoMicros(memory.supersededMicros),
      superseded_by: memory.supersededBy,
      replaces: memory.replacing ? { id: memory.replacing.id, text: memory.replacing.text } : null,
    };
  }

  transaction(transaction: TransactionRecord) {
    return {
      id: transaction.id,
      type: transaction.type,
      amount: transaction.amount,
      reason: transaction.reason,
      created: transaction.createdMillis,
      refundOf: transaction.refundOf,
    };
  }
}
