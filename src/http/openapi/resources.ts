import { z } from 'zod';
import type { ErrorCode } from '../../core/errors.js';
import type { FaceModelStatus, JobStatus, JobType, ParticipantType, TransactionType } from '../../core/records.js';
import { definitionSchema, lorebookEntrySchema, lorebookSettingsSchema } from '../character-fields.js';
import { statusByCode } from '../errors.js';

/**
 * The shapes the serializers build, as zod schemas for the OpenAPI document only: the
 * serializers are plain functions, and these say what they send. Each schema registered
 * here becomes `#/components/schemas/<id>`; the OpenAPI test checks real answers against them.
 */
export const documented = z.registry<{ id: string; description?: string }>();

const uuid = z.uuid();
const millis = z.int().describe('Unix time in milliseconds');
const micros = z.string().describe('ISO 8601 UTC with six fractional digits, e.g. 2026-11-24T01:02:03.456789Z');
const signedUrl = z.string().describe('A signed URL under /files that expires after SIGNED_URL_TTL_SECONDS');
const success = z.literal(true);

const errorCodes = Object.keys(statusByCode) as [ErrorCode, ...ErrorCode[]];

export const errorBody = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.enum(errorCodes).describe(errorCodes.map((code) => `${code} (${statusByCode[code]})`).join(', ')),
      message: z.string().describe('What went wrong and what to do'),
      details: z.record(z.string(), z.unknown()).optional().describe('`fields` names each invalid field; `retryAfterSeconds` comes with RATE_LIMITED'),
    }),
  })
  .register(documented, { id: 'Error', description: 'Every error answer, with its status and a stable code.' });

export const account = z
  .object({
    id: uuid,
    created: millis,
    username: z.string(),
    isVerified: z.boolean(),
    isDisabled: z.boolean(),
    isSubscribed: z.boolean(),
    meta: z.object({ dateOfBirth: z.iso.date().nullable(), referredByAccountId: uuid.nullable() }),
    tags: z.array(z.string()),
    characterId: uuid.describe('The character that belongs to the account'),
    profilePictureUrl: z.string().nullable(),
  })
  .register(documented, { id: 'Account' });

export const character = z
  .object({
    id: uuid,
    name: z.string(),
    description: z.string(),
    is_public: z.boolean(),
    account_id: uuid.describe('The owning account'),
    avatar_url: signedUrl.nullable(),
    personality_summary: z.string(),
    tts_voice_id: z.string().nullable().describe('null until the character is given a voice'),
    created: micros,
    updated: micros,
    ...definitionSchema,
  })
  .register(documented, { id: 'Character', description: 'A character, sent without a success wrapper. The fields after `updated` are what character cards define.' });

export const lorebookEntry = lorebookEntrySchema
  .required()
  .extend({ id: uuid })
  .register(documented, { id: 'LorebookEntry', description: 'Goes into the prompt when one of its keys is in the last messages (or always, when constant).' });

export const lorebookSettings = lorebookSettingsSchema.required().register(documented, { id: 'LorebookSettings' });

const speaker = z
  .object({
    id: uuid.describe('An account id or a character id'),
    name: z.string(),
    type: z.enum(['account', 'character'] as const satisfies readonly ParticipantType[]),
    avatarUrl: z.string().nullable(),
    deleted: z.literal(true).optional().describe('A character its owner deleted: its lines stay, it answers no more'),
  })
  .register(documented, { id: 'Speaker' });

const conversationFields = { id: uuid, speakers: z.array(speaker), created: micros, updated: micros };

export const conversation = z.object(conversationFields).register(documented, { id: 'Conversation' });

export const invitation = z
  .object({ conversationId: uuid, accountId: uuid.describe('Who is invited'), invitedByAccountId: uuid, created: micros })
  .register(documented, { id: 'ConversationInvitation', description: 'Waiting for the invited account: it joins with `POST …/speakers {accountId: itself}`, or declines with `DELETE …/invitations/:accountId`.' });

export const message = z
  .object({
    id: uuid,
    content: z.string().describe('The text, or for an image or audio (voice) message the signed URL of its file'),
    mimetype: z.string(),
    participant_id: uuid,
    participant_type: z.enum(['account', 'character'] as const satisfies readonly ParticipantType[]),
    created: micros,
    finish_reason: z.string().optional().describe('Why a reply ended (stop, length, …), when known'),
    transcript: z.string().optional().describe('An audio (voice) message: the words heard in it, which the character answered'),
    swipes: z
      .array(z.string())
      .min(1)
      .describe("The message's alternatives, oldest first: every reply written for this place (regenerated, or a greeting's alternates). One for most messages; `content` is always `swipes[swipe_index]`"),
    swipe_index: z.number().int().min(0).describe('The alternative shown, which the conversation goes on from'),
    greeting: z.literal(true).optional().describe("A character's greeting (opening the conversation, or joining its scene): swiped, never regenerated (409 GREETING_NOT_REGENERATED)"),
  })
  .register(documented, { id: 'Message' });

export const conversationRead = z
  .object({
    ...conversationFields,
    summary: z.string().nullable().describe('What fell out of the context window, summarised'),
    messages: z.array(message).describe('Oldest first'),
  })
  .register(documented, { id: 'ConversationRead' });

export const syncAnswer = z
  .object({
    data: z.string().describe('The reply: text, or base64 mp3 when only audio/mp3 was allowed'),
    mimeType: z.enum(['text/plain', 'audio/mp3']),
    finishReason: z.string().optional(),
  })
  .register(documented, { id: 'ChatAnswer' });

export const streamChunk = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.int().describe('Unix time in seconds'),
    model: z.string(),
    system_fingerprint: z.null(),
    choices: z.array(
      z.object({ index: z.int(), delta: z.object({ content: z.string() }), finish_reason: z.string().nullable() }),
    ),
  })
  .register(documented, {
    id: 'ChatChunk',
    description: 'One `data:` event of a streamed reply; the stream ends with `data: [DONE]`, or with one Error event if the engine fails midway.',
  });

export const transaction = z
  .object({
    id: uuid,
    type: z.enum(['credit', 'debit', 'refund'] as const satisfies readonly TransactionType[]),
    amount: z.number().describe('Always positive'),
    reason: z.string(),
    created: millis,
    refundOf: uuid.nullable(),
  })
  .register(documented, { id: 'Transaction' });

export const faceModel = z
  .object({
    id: uuid,
    jobId: uuid.describe('The training job'),
    created: millis,
    status: z.enum(['IN_PROGRESS', 'SUCCESS', 'FAILED'] as const satisfies readonly FaceModelStatus[]),
    url: signedUrl.optional().describe('The trained archive, only when SUCCESS'),
    failure: z.string().nullable().optional().describe('Why training failed, only when FAILED'),
  })
  .register(documented, { id: 'FaceModel' });

export const memory = z.object({ id: uuid, text: z.string(), created: micros }).register(documented, { id: 'Memory' });

export const learnedMemory = z
  .object({
    id: uuid,
    character_id: uuid.describe('The character that learned it'),
    kind: z.enum(['person', 'own']).describe("person: about the person it was learned from; own: the character's own, from its owner's words"),
    text: z.string(),
    status: z.enum(['active', 'pending', 'rejected', 'superseded']).describe('superseded: no longer true, replaced by superseded_by'),
    origin: z.string().describe('private (a DM, a conversation of one person), server:<id>, or conversation:<id> (shared): where it may be used again'),
    conversation_id: uuid.describe('Where it was said'),
    message_ids: z.array(uuid).describe('The messages it was learned from (none for a correction in your own words)'),
    importance: z.int().min(1).max(5),
    stated: micros.describe('When it was said'),
    created: micros,
    superseded: micros.nullable().describe('When it stopped being true'),
    superseded_by: uuid.nullable(),
    replaces: z
      .object({ id: uuid, text: z.string() })
      .nullable()
      .describe("A pending own memory that contradicts an approved one: that one, superseded once this is approved"),
  })
  .register(documented, { id: 'LearnedMemory' });

export const voice = z
  .object({ id: z.string(), name: z.string(), language: z.string().optional(), description: z.string().optional() })
  .register(documented, { id: 'Voice' });

const jobStatus = z.enum(['CREATED', 'IN_PROGRESS', 'SUCCESS', 'FAILED', 'CANCELED'] as const satisfies readonly JobStatus[]);

export const job = z
  .object({
    id: uuid,
    accountId: uuid,
    clientId: uuid.nullable(),
    created: millis,
    type: z.enum(['IMAGE_INFERENCE', 'FACE_MODEL_TRAINING'] as const satisfies readonly JobType[]),
    payload: z.record(z.string(), z.unknown()).describe('The exact engine parameters, seed included; lora_1 is a signed URL of the face archive'),
    outputFiles: z.array(
      z.object({
        name: z.string(),
        path: z.string(),
        created: millis,
        size: z.int(),
        url: signedUrl,
        feedback: z.object({ like: z.boolean().nullable(), feedback: z.string().nullable() }),
      }),
    ),
    status: jobStatus,
    statuses: z.array(z.object({ id: uuid, status: jobStatus, created: millis })).describe('Newest first'),
    failure: z.object({ code: z.string(), message: z.string() }).nullable(),
    progress: z.number().min(0).max(1).nullable().describe('0 to 1 while the engine reports it'),
    queuePosition: z.int().optional().describe('Jobs ahead while it waits'),
  })
  .register(documented, { id: 'Job' });

/** An answer that wraps what it carries as `{success: true, …}`, documented as `#/components/schemas/<id>`. */
export const answer = <Shape extends z.ZodRawShape>(id: string, shape: Shape) => z.object({ success, ...shape }).register(documented, { id });
