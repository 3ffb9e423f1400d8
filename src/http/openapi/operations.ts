import { z } from 'zod';
import * as accounts from '../routes/accounts.js';
import * as characters from '../routes/characters.js';
import * as conversations from '../routes/conversations.js';
import * as images from '../routes/images.js';
import * as lorebooks from '../routes/lorebooks.js';
import * as memories from '../routes/memories.js';
import { pageQuery } from '../validation.js';
import * as resources from './resources.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** The groups of the document, in its order. */
export const tags = {
  Conversations: 'A person (or several) and a character talking; replies whole or streamed.',
  Accounts: 'Accounts, their keys, balance and ledger. The admin key sees all; an account key sees itself.',
  Characters: 'Characters: their text, avatar, voice, face models and memories.',
  Images: 'Image generation jobs, paid in credits, and their outputs.',
  Service: 'What needs no API key: this document, stored files by signed URL, health checks and metrics.',
} as const;

export interface Answer {
  status: number;
  description: string;
  /** A schema registered in `resources.documented`, sent as JSON, unless `mediaType` says otherwise. */
  body?: z.ZodType;
  mediaType?: string;
}

/**
 * One endpoint as the OpenAPI document shows it. `query` and `body` are the very schemas the
 * route passes to `readQuery` and `readJson`; the OpenAPI test fails when a route is mounted
 * without an entry here, or an entry names no route.
 */
export interface Operation {
  method: Method;
  /** As Hono writes it, e.g. `/api/v0/accounts/:accountId`; parameters are UUIDs unless `params` says. */
  path: string;
  tag: keyof typeof tags;
  summary: string;
  description?: string;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Bodies the route reads itself (files, forms), by media type; these schemas only document. */
  uploads?: Record<string, z.ZodType>;
  params?: Record<string, z.ZodType>;
  answers: Answer[];
  /** What the caller shows instead of an API key: nothing, or the metrics token. */
  access?: 'open' | 'metricsToken';
  /** Counted against API_RATE_LIMIT_PER_MINUTE (or the setting named): may answer 429 with Retry-After. */
  rateLimited?: boolean | string;
}

const ok = (body: z.ZodType, description = 'Done') => ({ status: 200, description, body });
const created = (body: z.ZodType, description = 'Created') => ({ status: 201, description, body });
const { answer } = resources;

const accountAnswer = answer('AccountAnswer', { account: resources.account });
const conversationAnswer = answer('ConversationAnswer', { conversation: resources.conversation });
const jobAnswer = answer('JobAnswer', { job: resources.job });
const apiKeyAnswer = answer('ApiKeyAnswer', { apiKey: z.string().describe('Shown once; earlier keys stop working') });
const jobCreated = answer('ImageJobCreated', { jobId: z.uuid(), transactionId: z.uuid() });
/**
 * `POST /conversations/:conversationId/<action>`, answered whole, and the same request at
 * `<action>/stream` answered as events (text only).
 */
const replyOperations = (action: string, body: z.ZodType, summaries: { whole: string; streamed: string }, description: string): Operation[] => {
  const path = `/api/v0/conversations/:conversationId/${action}`;
  const common = { method: 'post', tag: 'Conversations', description, body, rateLimited: true } as const;
  const events = 'One `data:` event per piece of the reply, each a ChatChunk; the last chunk carries finish_reason, then `data: [DONE]`.';
  return [
    { ...common, path, summary: summaries.whole, answers: [ok(resources.syncAnswer, 'The reply')] },
    { ...common, path: `${path}/stream`, summary: summaries.streamed, answers: [{ status: 200, mediaType: 'text/event-stream', description: events }] },
  ];
};
const image = z.file().describe('A PNG, JPEG or WebP image');

const conversationOperations: Operation[] = [
  {
    method: 'get', path: '/api/v0/conversations/:conversationId/messages/:messageId/memories', tag: 'Conversations', summary: 'The memories a reply was written with',
    description: 'Only those the caller may read: what the character knew about them, and for its owner, its own and written memories. Empty for a person\'s message or a reply that used none.',
    answers: [ok(answer('UsedMemories', { memories: z.array(z.object({ id: z.uuid(), kind: z.enum(['written', 'own', 'person']), text: z.string() })) }))],
  },
  {
    method: 'get', path: '/api/v0/conversations/:conversationId/messages/:messageId/lorebook', tag: 'Conversations', summary: 'The lorebook entries a reply was written with (the character\'s owner)',
    description: 'Those of the alternative the message shows, as the book holds them now (an entry deleted since is left out). 403 FORBIDDEN for anyone but the owner of the character that wrote it.',
    answers: [ok(answer('UsedLorebookEntries', { entries: z.array(resources.lorebookEntry) }))],
  },
  {
    method: 'post', path: '/api/v0/conversations', tag: 'Conversations', summary: 'Open a conversation with a character',
    description: 'The admin key names the account in `accountId`.',
    body: conversations.createBody,
    answers: [created(answer('ConversationCreated', { id: z.uuid() }))],
  },
  {
    method: 'get', path: '/api/v0/conversations', tag: 'Conversations', summary: 'List conversations, the one joined last first',
    description: 'Paged with `limit` (1–200, default 50) and `cursor`: pass `nextCursor` back until it is absent.',
    query: conversations.listQuery,
    answers: [ok(answer('ConversationList', { conversations: z.array(resources.conversation), nextCursor: z.string().optional() }))],
  },
  {
    method: 'get', path: '/api/v0/conversations/invitations', tag: 'Conversations', summary: 'Invitations to conversations waiting for you',
    description: 'Oldest first; at most 50 wait at once (a 51st answers 409 INVITATION_LIMIT_REACHED to whoever invites). The admin key names the account in `accountId`.',
    query: conversations.invitationsQuery,
    answers: [ok(answer('InvitationList', { invitations: z.array(resources.invitation) }))],
  },
  {
    method: 'delete', path: '/api/v0/conversations/:conversationId/invitations/:accountId', tag: 'Conversations', summary: 'Decline or withdraw an invitation',
    description: 'The invited account declines, or a speaker withdraws it. 404 when there is none.',
    answers: [ok(answer('Success', {}))],
  },
  {
    method: 'get', path: '/api/v0/conversations/:conversationId', tag: 'Conversations', summary: 'Read a conversation with its messages',
    answers: [ok(resources.conversationRead)],
  },
  ...replyOperations(
    'chat',
    conversations.chatBody,
    { whole: 'Send a message and wait for the reply', streamed: 'Send a message and stream the reply' },
    '`data` is text, or with an image `mimeType` the image as base64 or a data: URL. `allow: ["audio/mp3"]` answers in the character\'s voice. `characterId` chooses which of the conversation\'s characters answers (422 CHARACTER_NOT_IN_CONVERSATION for one not in it). 403 CHARACTER_PRIVATE when the answering character was made private and its owner takes no part in the conversation (checked at every reply; nothing is stored).',
  ),
  ...replyOperations(
    'regenerate',
    conversations.regenerateBody,
    { whole: 'Answer the last message again', streamed: 'Answer the last message again, streamed' },
    'When the newest message is a reply to it, the new reply is added to that message\'s `swipes` and chosen (the earlier ones stay to swipe back to); otherwise it is a new message. 409 CONFLICT when there is no message yet; 409 GREETING_NOT_REGENERATED when the newest message is a character\'s greeting (the conversation\'s opening, or a character joining a scene): greetings are swiped (see `swipe`), not rewritten. 403 CHARACTER_PRIVATE as for `chat`.',
  ),
  {
    method: 'post', path: '/api/v0/conversations/:conversationId/messages/:messageId/swipe', tag: 'Conversations', summary: 'Choose which alternative of the newest reply the conversation goes on from',
    description:
      '`index` is a position in the message\'s `swipes`; the next reply, the summary and learning go on from that one. Only the conversation\'s newest message, a character\'s, can be swiped: 409 NOT_NEWEST_REPLY for an earlier message or a person\'s. 400 VALIDATION_FAILED for an index that is not an integer within `swipes`; 404 for a conversation or message you cannot see. Regenerate to add an alternative.',
    body: conversations.swipeBody,
    answers: [
      ok(answer('SwipeAnswer', { message: resources.message }), 'The message, showing the chosen alternative'),
      { status: 400, description: 'VALIDATION_FAILED: `index` is not an integer within the message\'s `swipes`', body: resources.errorBody },
      { status: 404, description: 'NOT_FOUND: no such conversation for you, or no such message in it', body: resources.errorBody },
      { status: 403, description: 'CHARACTER_PRIVATE: the character that wrote it was made private, and its owner takes no part in the conversation', body: resources.errorBody },
      { status: 409, description: 'NOT_NEWEST_REPLY: the message is not the conversation\'s newest, or not a character\'s', body: resources.errorBody },
    ],
  },
  {
    method: 'post', path: '/api/v0/conversations/:conversationId/speakers', tag: 'Conversations', summary: 'Add an account or a character to a conversation',
    description: '`accountId`: nobody is added by another. Another account is invited (202, at most 50 invitations wait per account: 409 INVITATION_LIMIT_REACHED), and joins by naming itself here, which accepts (404 without an invitation). The admin key adds at once. `characterId`: a character (own or public) joining the scene; chat with `characterId` to have it answer. Adding one twice changes nothing.',
    body: conversations.speakerBody,
    answers: [ok(conversationAnswer, 'Joined (or already there)'), { status: 202, description: 'Invited: it joins once it accepts', body: answer('InvitationAnswer', { invitation: resources.invitation }) }],
  },
  {
    method: 'delete', path: '/api/v0/conversations/:conversationId/speakers/:speakerId', tag: 'Conversations', summary: 'Leave a conversation, or take a person or character out of it',
    description: 'An account: anyone may leave; the account that opened the conversation may take others out (403 FORBIDDEN for anyone else) and stays (409 CONVERSATION_OWNER_REQUIRED). A character: out of the scene; 409 MAIN_CHARACTER_REQUIRED for the one the conversation is with. Their lines stay in the history.',
    answers: [ok(conversationAnswer)],
  },
  {
    method: 'post', path: '/api/v0/conversations/:conversationId/clear', tag: 'Conversations', summary: 'Delete all messages',
    answers: [ok(z.object({ success: z.literal('true') }).register(resources.documented, { id: 'Cleared', description: 'success is the string "true", as the spec has it.' }))],
  },
];

const accountOperations: Operation[] = [
  {
    method: 'get', path: '/api/v0/accounts', tag: 'Accounts', summary: 'List accounts (the admin: all, paged; an account: itself)',
    query: pageQuery,
    answers: [ok(answer('AccountList', { accounts: z.array(resources.account), nextCursor: z.string().nullable() }))],
  },
  {
    method: 'post', path: '/api/v0/accounts', tag: 'Accounts', summary: 'Create an account with its character and first key (admin)',
    body: accounts.createBody,
    answers: [created(answer('AccountCreated', { account: resources.account, apiKey: z.string() }))],
  },
  { method: 'get', path: '/api/v0/accounts/:accountId', tag: 'Accounts', summary: 'Read an account', answers: [ok(accountAnswer)] },
  {
    method: 'patch', path: '/api/v0/accounts/:accountId', tag: 'Accounts', summary: 'Change an account',
    description: 'An account changes its picture and tags; only the admin changes the flags.',
    body: accounts.changeBody,
    answers: [ok(accountAnswer)],
  },
  {
    method: 'get', path: '/api/v0/accounts/:accountId/balance', tag: 'Accounts', summary: 'Read the balance',
    answers: [ok(answer('Balance', { balance: z.number() }))],
  },
  {
    method: 'post', path: '/api/v0/accounts/:accountId/balance', tag: 'Accounts', summary: 'Credit an account (admin)',
    body: accounts.creditBody,
    answers: [ok(answer('Credited', { transactionId: z.uuid(), balance: z.number() }))],
  },
  {
    method: 'get', path: '/api/v0/accounts/:accountId/transactions', tag: 'Accounts', summary: 'List transactions, newest first',
    answers: [ok(answer('TransactionList', { transactions: z.array(resources.transaction) }))],
  },
  {
    method: 'post', path: '/api/v0/accounts/:accountId/keys', tag: 'Accounts', summary: 'Issue a new API key',
    answers: [created(apiKeyAnswer)],
  },
];

const characterAnswer = answer('CharacterAnswer', { character: resources.character });
const lorebookEntryAnswer = answer('LorebookEntryAnswer', { entry: resources.lorebookEntry });

const characterOperations: Operation[] = [
  {
    method: 'post', path: '/api/v0/characters', tag: 'Characters', summary: 'Make another character',
    description: 'Owned by the caller (the admin key names the account in `accountId`). 409 CHARACTER_LIMIT_REACHED past MAX_CHARACTERS_PER_ACCOUNT (the account\'s own character counts).',
    body: characters.createBody,
    answers: [created(characterAnswer)],
  },
  {
    method: 'get', path: '/api/v0/characters', tag: 'Characters', summary: 'List your characters, and public ones by name',
    description: 'By name: the caller\'s own; with `query`, its own whose name contains it, then public characters of others whose name starts with it. Paged with `nextCursor`.',
    query: characters.listQuery,
    answers: [ok(answer('CharacterList', { characters: z.array(resources.character), nextCursor: z.string().optional() }))],
  },
  {
    method: 'delete', path: '/api/v0/characters/:characterId', tag: 'Characters', summary: 'Delete a character (owner)',
    description: 'With its memories (written and learned), lorebook, voice, face models and files. Its conversations keep their messages and list it as deleted; reading it answers 410 CHARACTER_DELETED. 409 PERSONAL_CHARACTER_REQUIRED for the account\'s own character.',
    answers: [ok(answer('Success', {}))],
  },
  {
    method: 'post', path: '/api/v0/characters/import', tag: 'Characters', summary: 'Make a character from a character card',
    description:
      'A Character Card V1/V2/V3 as PNG (a ccv3 chunk, else chara; the image becomes the avatar), JSON, or CHARX (zip with card.json; its icon becomes the avatar), at most 10 MB. ' +
      'Every card field is kept (extensions of other apps byte for byte) and its lorebook becomes the character\'s. Refused cards create nothing: 422 NOT_A_CHARACTER_CARD, 422 CARD_VERSION_UNSUPPORTED, ' +
      '400 INVALID_JSON, 413 CARD_TOO_LARGE (file, JSON, pixels, more than 8,192 PNG chunks, or zip caps), 422 CARD_DAMAGED, 422 CARD_UNSAFE_PATH (a CHARX entry outside the zip\'s root); 409 CHARACTER_LIMIT_REACHED.',
    body: characters.importBody,
    answers: [created(characterAnswer)],
  },
  {
    method: 'get', path: '/api/v0/characters/:characterId/card', tag: 'Characters', summary: 'Export the character as a card (owner; anyone for a public one)',
    description: 'V3 with the V2 fields alongside: `png` (the avatar carrying ccv3 and chara chunks), `json`, or `charx` (zip with card.json and the avatar as its icon). Import it anywhere SillyTavern or RisuAI cards go.',
    query: characters.cardQuery,
    answers: [{ status: 200, mediaType: 'image/png', description: 'The card file as an attachment: image/png for png (the default), application/json for json, application/zip for charx' }],
  },
  {
    method: 'get', path: '/api/v0/characters/:characterId/lorebook', tag: 'Characters', summary: 'Read the lorebook',
    answers: [ok(answer('Lorebook', { settings: resources.lorebookSettings, entries: z.array(resources.lorebookEntry) }))],
  },
  {
    method: 'patch', path: '/api/v0/characters/:characterId/lorebook', tag: 'Characters', summary: 'Change the lorebook\'s settings (owner)',
    body: lorebooks.settingsBody,
    answers: [ok(answer('LorebookSettingsAnswer', { settings: resources.lorebookSettings }))],
  },
  {
    method: 'post', path: '/api/v0/characters/:characterId/lorebook/entries', tag: 'Characters', summary: 'Add a lorebook entry (owner)',
    description: 'Fields left out take their defaults; an entry that is not constant needs a key. 409 CONFLICT past 2000 entries.',
    body: lorebooks.entryBody,
    answers: [created(lorebookEntryAnswer)],
  },
  {
    method: 'patch', path: '/api/v0/characters/:characterId/lorebook/entries/:entryId', tag: 'Characters', summary: 'Change a lorebook entry (owner)',
    body: lorebooks.entryBody,
    answers: [ok(lorebookEntryAnswer)],
  },
  {
    method: 'delete', path: '/api/v0/characters/:characterId/lorebook/entries/:entryId', tag: 'Characters', summary: 'Delete a lorebook entry (owner)',
    answers: [ok(answer('Success', {}))],
  },
  { method: 'get', path: '/api/v0/characters/:characterId', tag: 'Characters', summary: 'Read a character', answers: [ok(resources.character)] },
  {
    method: 'patch', path: '/api/v0/characters/:characterId', tag: 'Characters', summary: 'Change a character (owner)',
    body: characters.changeBody,
    answers: [ok(resources.character)],
  },
  {
    method: 'put', path: '/api/v0/characters/:characterId/avatar', tag: 'Characters', summary: 'Set the avatar (owner)',
    description: 'The raw image (≤ 5 MB) or a multipart form with the part `avatar`.',
    uploads: { 'image/png': image, 'image/jpeg': image, 'image/webp': image, 'multipart/form-data': z.object({ avatar: image }) },
    answers: [ok(resources.character)],
  },
  {
    method: 'post', path: '/api/v0/characters/:characterId/speak', tag: 'Characters', summary: 'Speak a text in the character\'s voice',
    description: 'At most SPEECH_MAX_TEXT_CHARACTERS (1000) characters: longer is 400 SPEECH_TEXT_TOO_LONG, with `details.characters` and `details.maxCharacters`. The same voice and text reuse the stored audio while it is kept (SPEECH_CACHE_RETENTION_DAYS, SPEECH_CACHE_MAX_MEGABYTES).',
    body: characters.speakBody, rateLimited: 'SPEECH_RATE_LIMIT_PER_MINUTE',
    answers: [ok(answer('Speech', { url: z.string().describe('A signed URL of the mp3') }))],
  },
  {
    method: 'post', path: '/api/v0/characters/:characterId/voice', tag: 'Characters', summary: 'Give the character a voice (owner)',
    description: 'A preset from GET /voices as JSON, or audio samples to clone (ElevenLabs) as multipart parts `samples` and `name`.',
    body: characters.presetBody,
    uploads: { 'multipart/form-data': z.object({ samples: z.array(z.file()).min(1).max(25), name: z.string().optional() }) },
    answers: [ok(resources.character)],
  },
  {
    method: 'post', path: '/api/v0/characters/:characterId/images/models', tag: 'Characters', summary: 'Train a face model (owner)',
    description: '5 to 30 face photos as multipart parts `photos` (or zips of them), or one zip as the raw body; charges TRAINING_CREDIT_COST.',
    uploads: { 'multipart/form-data': z.object({ photos: z.array(z.file()).min(1) }), 'application/zip': z.file().mime('application/zip') },
    answers: [created(answer('FaceModelCreated', { model: resources.faceModel, jobId: z.uuid(), transactionId: z.uuid() }))],
  },
  {
    method: 'get', path: '/api/v0/characters/:characterId/images/models', tag: 'Characters', summary: 'List face models',
    answers: [ok(answer('FaceModelList', { models: z.array(resources.faceModel) }))],
  },
  {
    method: 'get', path: '/api/v0/characters/:characterId/memories', tag: 'Characters', summary: 'List memories (owner)',
    answers: [ok(answer('MemoryList', { memories: z.array(resources.memory) }))],
  },
  {
    method: 'post', path: '/api/v0/characters/:characterId/memories', tag: 'Characters', summary: 'Add a memory (owner)',
    body: characters.memoryBody,
    answers: [created(answer('MemoryCreated', { memory: resources.memory }))],
  },
  {
    method: 'delete', path: '/api/v0/characters/:characterId/memories/:memoryId', tag: 'Characters', summary: 'Forget a memory (owner)',
    answers: [ok(answer('Success', {}))],
  },
  {
    method: 'get', path: '/api/v0/characters/:characterId/memories/proposed', tag: 'Characters', summary: 'Memories proposed from the owner\'s conversations (owner)',
    query: memories.proposedQuery,
    answers: [ok(answer('LearnedMemoryList', { memories: z.array(resources.learnedMemory) }))],
  },
  {
    method: 'post', path: '/api/v0/characters/:characterId/memories/proposed/:memoryId/approve', tag: 'Characters', summary: 'Approve a proposed memory, as written or edited (owner)',
    body: memories.approvalBody,
    answers: [ok(answer('LearnedMemoryAnswer', { memory: resources.learnedMemory }))],
    description: '409 CONFLICT when it was already approved or rejected; 404 when it is not a proposal of this character.',
  },
  {
    method: 'post', path: '/api/v0/characters/:characterId/memories/proposed/:memoryId/reject', tag: 'Characters', summary: 'Reject a proposed memory, or withdraw an approved one: never used, never proposed again (owner)',
    answers: [ok(answer('Success', {}))],
    description: '409 CONFLICT when it was already approved or rejected; 404 when it is not a proposal of this character.',
  },
  {
    method: 'get', path: '/api/v0/characters/:characterId/learning', tag: 'Characters', summary: 'Whether the owner\'s facts are proposed as the character\'s memories (owner)',
    answers: [ok(answer('CharacterLearning', { learning: z.object({ fromOwner: z.boolean() }) }))],
  },
  {
    method: 'put', path: '/api/v0/characters/:characterId/learning', tag: 'Characters', summary: 'Turn proposals from the owner\'s conversations on or off (owner)',
    body: memories.ownerLearningBody,
    answers: [ok(answer('CharacterLearning', { learning: z.object({ fromOwner: z.boolean() }) }))],
  },
  {
    method: 'get', path: '/api/v0/memories/about-me', tag: 'Characters', summary: 'What characters learned about you',
    description: 'Yours alone: a character\'s owner cannot read what it learned about you. Replaced facts are listed with when they stopped being true. 403 FORBIDDEN with the admin key: ask with the person\'s key.',
    query: memories.aboutMeQuery,
    answers: [ok(answer('LearnedMemoryList', { memories: z.array(resources.learnedMemory) }))],
  },
  {
    method: 'patch', path: '/api/v0/memories/about-me/:memoryId', tag: 'Characters', summary: 'Correct what a character learned about you',
    description: 'Your words replace it; the old one is kept as replaced and no longer used. 409 CONFLICT when it was already replaced; 404 when it is not about you.',
    body: memories.correctionBody,
    answers: [ok(answer('LearnedMemoryAnswer', { memory: resources.learnedMemory }))],
  },
  {
    method: 'delete', path: '/api/v0/memories/about-me/:memoryId', tag: 'Characters', summary: 'Delete a memory about you, for good',
    answers: [ok(answer('Deleted', { deleted: z.int() }))],
  },
  {
    method: 'delete', path: '/api/v0/memories/about-me', tag: 'Characters', summary: 'Delete everything characters (or one) learned about you, for good',
    query: memories.aboutMeQuery,
    answers: [ok(answer('Deleted', { deleted: z.int() }))],
  },
  {
    method: 'get', path: '/api/v0/memories/learning', tag: 'Characters', summary: 'Whether characters learn from your messages',
    answers: [ok(answer('Learning', { learning: z.object({ enabled: z.boolean(), disabledCharacterIds: z.array(z.uuid()) }) }))],
  },
  {
    method: 'put', path: '/api/v0/memories/learning', tag: 'Characters', summary: 'Turn learning from your messages on or off, everywhere or per character',
    body: memories.learningBody,
    answers: [ok(answer('Learning', { learning: z.object({ enabled: z.boolean(), disabledCharacterIds: z.array(z.uuid()) }) }))],
  },
  {
    method: 'get', path: '/api/v0/voices', tag: 'Characters', summary: 'List the speech engine\'s voices',
    answers: [ok(answer('VoiceList', { engine: z.string(), maxTextLength: z.int(), voices: z.array(resources.voice) }))],
  },
];

const imageOperations: Operation[] = [
  {
    method: 'post', path: '/api/v0/images', tag: 'Images', summary: 'Generate images',
    description: 'Ranges are checked together: width and height 64–1024 in steps of 8, samples 1–4, guidanceScale 1–20, loraScale 0–1. `<character-id>` in the prompt draws that character.',
    body: images.imageBody, rateLimited: true,
    answers: [
      created(jobCreated, 'Queued'),
      ok(answer('ImagesDone', { ...jobCreated.shape, output: z.array(z.string()) }), 'With synchronous: the images'),
      {
        status: 202, description: 'With synchronous, past the wait: the job goes on; poll the Location',
        body: answer('ImagesPending', { ...jobCreated.shape, status: z.string(), output: z.null() }),
      },
    ],
  },
  {
    method: 'get', path: '/api/v0/jobs', tag: 'Images', summary: 'List jobs, newest first',
    query: images.jobsQuery,
    answers: [ok(answer('JobList', { jobs: z.array(resources.job), nextCursor: z.string().optional() }))],
  },
  { method: 'get', path: '/api/v0/jobs/:jobId', tag: 'Images', summary: 'Read a job', answers: [ok(jobAnswer)] },
  { method: 'post', path: '/api/v0/jobs/:jobId/cancel', tag: 'Images', summary: 'Cancel a job; it is refunded', answers: [ok(jobAnswer)] },
  {
    method: 'post', path: '/api/v0/jobs/:jobId/outputs/:name/feedback', tag: 'Images', summary: 'Like or comment on an output',
    description: 'Send `like` (true, false or null), `feedback` (text or null), or both.',
    params: { name: z.string().describe('The output file name, e.g. image-1.png') },
    body: images.feedbackBody,
    answers: [ok(jobAnswer)],
  },
];

const readiness = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    notReady: z.array(z.string()).describe('The parts not ready: store, discord, chat_model'),
    store: z.enum(['ok', 'unreachable']),
    discord: z.string(),
    chatModel: z
      .object({
        ready: z.boolean(),
        engine: z.string().describe('embedded (llama.cpp in the service) or openai-compatible'),
        model: z.string(),
        state: z.enum(['fetching', 'loading', 'failed']).optional(),
        reason: z.string().optional().describe('Why it is not ready, and what to do when it failed'),
        percent: z.number().int().optional().describe('How much of the model file is fetched'),
      })
      .optional(),
  })
  .register(resources.documented, { id: 'Readiness' });

const serviceOperations: Operation[] = [
  {
    method: 'get', path: '/api/v0/openapi.json', tag: 'Service', summary: 'This document', access: 'open',
    answers: [{ status: 200, description: 'OpenAPI 3.1' }],
  },
  {
    method: 'get', path: '/api/v0/docs', tag: 'Service', summary: 'This document as a page', access: 'open',
    answers: [{ status: 200, description: 'HTML without external resources', mediaType: 'text/html' }],
  },
  {
    method: 'get', path: '/files/:key', tag: 'Service', summary: 'A stored file, by a signed URL', access: 'open',
    params: { key: z.string() },
    query: z.object({ expires: z.string(), signature: z.string() }),
    answers: [{ status: 200, description: 'The file, with its own Content-Type', mediaType: 'application/octet-stream' }],
  },
  {
    method: 'get', path: '/metrics', tag: 'Service', summary: 'Prometheus metrics (HEAD too)', access: 'metricsToken',
    description: 'Served here only when METRICS_TOKEN is set without METRICS_PORT; with METRICS_PORT, on that port instead.',
    answers: [{ status: 200, description: 'Prometheus text exposition', mediaType: 'text/plain' }, { status: 401, description: 'No or wrong token', mediaType: 'text/plain' }],
  },
  {
    method: 'get', path: '/healthz', tag: 'Service', summary: 'The process serves', access: 'open',
    answers: [ok(z.object({ status: z.literal('ok'), discord: z.string() }).register(resources.documented, { id: 'Health' }), 'Always while it serves')],
  },
  {
    method: 'get', path: '/readyz', tag: 'Service', summary: 'Every configured part is up', access: 'open',
    answers: [200, 503].map((status) => ({
      status,
      description: status === 200 ? 'Ready' : 'Not ready: notReady names the parts',
      body: readiness,
    })),
  },
];

/** Every endpoint of the app, in the order of the README's table. */
export const operations: readonly Operation[] = [
  ...conversationOperations,
  ...accountOperations,
  ...characterOperations,
  ...imageOperations,
  ...serviceOperations,
];
