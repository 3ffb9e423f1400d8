/**
 * Reads and validates a message body (JSON, or multipart `payload_json` plus `files[N]`) the way
 * Discord does, so a bot that sends what production would reject is rejected here too: content
 * over 2,000 characters, embed limits, more than 10 attachments, files over 10 MiB, empty messages,
 * components Discord would refuse (see `components.ts`).
 */
import type { APIEmbed } from 'discord-api-types/v10';
import type { UploadedFile } from './attachments.js';
import { componentProblems } from './components.js';
import { emptyMessage, entityTooLarge, invalidFormBody, tooLong, type FieldProblem } from './errors.js';

/** Discord's limits for bots in a guild without boosts. */
export const MESSAGE_LIMITS = {
  contentLength: 2000,
  attachments: 10,
  fileBytes: 10 * 1024 * 1024,
  /** What a person with Nitro may upload; their messages can carry files no bot could send. */
  nitroFileBytes: 500 * 1024 * 1024,
  embeds: 10,
  embedTotalCharacters: 6000,
  embedTitle: 256,
  embedDescription: 4096,
  embedFields: 25,
  embedFieldName: 256,
  embedFieldValue: 1024,
  embedFooterText: 2048,
  embedAuthorName: 256,
} as const;

/** An attachment entry of the request: a new upload, or an existing attachment kept on edit. */
export type AttachmentInput =
  | { kind: 'upload'; file: UploadedFile; filename: string; description?: string; voice?: VoiceMetadata }
  | { kind: 'keep'; id: string };

/** A voice message's attachment metadata (`duration_secs`, base64 `waveform`), as the client sends it. */
export interface VoiceMetadata {
  durationSecs?: number;
  waveform?: string;
}

/** The fields of a message body the fake acts on; absent means "not given". */
export interface MessageInput {
  content?: string;
  embeds?: APIEmbed[];
  components?: unknown[];
  flags?: number;
  tts?: boolean;
  nonce?: string | number;
  attachments?: AttachmentInput[];
  referencedMessageId?: string;
  hasStickersOrPoll: boolean;
}

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const length = (value: unknown): number => (typeof value === 'string' ? value.length : 0);

function embedProblems(embeds: unknown[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (embeds.length > MESSAGE_LIMITS.embeds) problems.push(tooLong(['embeds'], MESSAGE_LIMITS.embeds));
  let total = 0;
  embeds.forEach((embed, index) => {
    if (!isObject(embed)) return;
    const check = (path: Array<string | number>, value: unknown, maximum: number): void => {
      total += length(value);
      if (length(value) > maximum) problems.push(tooLong(['embeds', index, ...path], maximum));
    };
    check(['title'], embed['title'], MESSAGE_LIMITS.embedTitle);
    check(['description'], embed['description'], MESSAGE_LIMITS.embedDescription);
    if (isObject(embed['footer'])) check(['footer', 'text'], embed['footer']['text'], MESSAGE_LIMITS.embedFooterText);
    if (isObject(embed['author'])) check(['author', 'name'], embed['author']['name'], MESSAGE_LIMITS.embedAuthorName);
    const fields = Array.isArray(embed['fields']) ? embed['fields'] : [];
    if (fields.length > MESSAGE_LIMITS.embedFields) problems.push(tooLong(['embeds', index, 'fields'], MESSAGE_LIMITS.embedFields));
    fields.forEach((field: unknown, fieldIndex) => {
      if (!isObject(field)) return;
      check(['fields', fieldIndex, 'name'], field['name'], MESSAGE_LIMITS.embedFieldName);
      check(['fields', fieldIndex, 'value'], field['value'], MESSAGE_LIMITS.embedFieldValue);
    });
  });
  if (total > MESSAGE_LIMITS.embedTotalCharacters) {
    problems.push({ path: ['embeds'], code: 'MAX_EMBED_SIZE_EXCEEDED', message: 'Embed size exceeds maximum size of 6000' });
  }
  return problems;
}

/** Pairs `payload_json.attachments` entries with `files[N]` parts; unreferenced files still attach. */
function attachmentInputs(json: JsonObject, files: UploadedFile[]): AttachmentInput[] | undefined {
  const byIndex = new Map<string, UploadedFile>();
  for (const file of files) {
    const index = /^files\[(\d+)\]$/.exec(file.field)?.[1] ?? /^file(\d*)$/.exec(file.field)?.[1] ?? file.field;
    byIndex.set(index === '' ? '0' : index, file);
  }
  const entries = json['attachments'];
  if (!Array.isArray(entries) && files.length === 0) return undefined;
  const inputs: AttachmentInput[] = [];
  const used = new Set<UploadedFile>();
  for (const entry of Array.isArray(entries) ? entries : []) {
    if (!isObject(entry)) continue;
    const id = String(entry['id']);
    const file = byIndex.get(id);
    const description = typeof entry['description'] === 'string' ? entry['description'] : undefined;
    if (file !== undefined) {
      used.add(file);
      const filename = typeof entry['filename'] === 'string' ? entry['filename'] : file.filename;
      const voice: VoiceMetadata = {};
      if (typeof entry['duration_secs'] === 'number') voice.durationSecs = entry['duration_secs'];
      if (typeof entry['waveform'] === 'string') voice.waveform = entry['waveform'];
      const hasVoice = voice.durationSecs !== undefined || voice.waveform !== undefined;
      inputs.push({ kind: 'upload', file, filename, ...(description === undefined ? {} : { description }), ...(hasVoice ? { voice } : {}) });
    } else {
      inputs.push({ kind: 'keep', id });
    }
  }
  for (const file of files) {
    if (!used.has(file)) inputs.push({ kind: 'upload', file, filename: file.filename });
  }
  return inputs;
}

/**
 * Validates a message body. `mode` is `create` for new messages (which must not be empty) and
 * `edit` for edits (where the emptiness check needs the message and happens later).
 * `maxFileBytes` is the sender's upload limit (a bot's by default).
 */
export function readMessageInput(body: unknown, files: UploadedFile[], mode: 'create' | 'edit', maxFileBytes: number = MESSAGE_LIMITS.fileBytes): MessageInput {
  const json = isObject(body) ? body : {};
  for (const file of files) {
    if (file.bytes.length > maxFileBytes) throw entityTooLarge();
  }
  const problems: FieldProblem[] = [];
  const input: MessageInput = { hasStickersOrPoll: Array.isArray(json['sticker_ids']) || isObject(json['poll']) };

  const content = json['content'];
  if (content !== undefined && content !== null) {
    if (typeof content !== 'string') problems.push({ path: ['content'], code: 'BASE_TYPE_STRING', message: 'Must be a string.' });
    else if (content.length > MESSAGE_LIMITS.contentLength) problems.push(tooLong(['content'], MESSAGE_LIMITS.contentLength));
    else input.content = content;
  } else if (content === null && mode === 'edit') {
    input.content = '';
  }
  if (Array.isArray(json['embeds'])) {
    problems.push(...embedProblems(json['embeds']));
    input.embeds = json['embeds'].filter(isObject) as APIEmbed[];
  }
  if (Array.isArray(json['components'])) {
    problems.push(...componentProblems(json['components']));
    input.components = json['components'];
  }
  if (typeof json['flags'] === 'number') input.flags = json['flags'];
  if (typeof json['tts'] === 'boolean') input.tts = json['tts'];
  if (typeof json['nonce'] === 'string' || typeof json['nonce'] === 'number') input.nonce = json['nonce'];
  const reference = json['message_reference'];
  if (isObject(reference) && typeof reference['message_id'] === 'string') input.referencedMessageId = reference['message_id'];

  const attachments = attachmentInputs(json, files);
  if (attachments !== undefined) {
    if (attachments.length > MESSAGE_LIMITS.attachments) problems.push(tooLong(['attachments'], MESSAGE_LIMITS.attachments));
    input.attachments = attachments;
  }
  if (problems.length > 0) throw invalidFormBody(problems);

  if (mode === 'create' && isEmpty(input)) throw emptyMessage();
  return input;
}

/** Whether a message made of these parts would show nothing. */
export function isEmpty(parts: { content?: string; embeds?: unknown[]; attachments?: unknown[]; components?: unknown[]; hasStickersOrPoll?: boolean }): boolean {
  return (
    (parts.content ?? '') === '' &&
    (parts.embeds?.length ?? 0) === 0 &&
    (parts.attachments?.length ?? 0) === 0 &&
    (parts.components?.length ?? 0) === 0 &&
    parts.hasStickersOrPoll !== true
  );
}
