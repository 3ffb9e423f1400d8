import type { Actor } from './actor.js';
import type { Chat, ChatInput, Reply } from './chat.js';
import { ValidationError, notFound } from './errors.js';
import type { FileStore } from './ports.js';
import type { Conversations } from './conversations.js';
import type { CharacterRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';
import type { Speech } from './speech.js';

export type ReplyFormat = 'text' | 'audio';

/** A whole reply: its text, or its text spoken as mp3; `finishReason` says why it ended, when known. */
export type SyncAnswer = ({ text: string } | { audio: Buffer }) & { finishReason?: string };

/** Who answers: one of the conversation's characters; absent, the one it is with. */
export interface AnswererChoice {
  characterId?: string | undefined;
  /** Aborts when the caller leaves: generation stops, its slot is free, the reply is not stored. */
  signal?: AbortSignal | undefined;
}

const textTypes = ['text/plain', 'text/*', '*/*'];
const audioTypes = ['audio/mp3', 'audio/mpeg', 'audio/*'];

/**
 * The spec's chat answers: the reply as text, or, when the caller allows only audio, the
 * reply spoken in the character's voice as mp3 bytes (the HTTP API sends them as base64).
 * The stored message keeps the text either way.
 */
export class Answers {
  constructor(
    private readonly store: RepositoryStore,
    private readonly files: FileStore,
    private readonly conversations: Conversations,
    private readonly chat: Chat,
    private readonly speech: Speech | undefined,
  ) {}

  /** Which form the reply takes for `allow`; text when both are allowed. */
  format(allow: readonly string[] | undefined, streaming: boolean): ReplyFormat {
    if (allow === undefined || allow.some((type) => textTypes.includes(type))) return 'text';
    if (allow.some((type) => audioTypes.includes(type))) {
      if (streaming) throw ValidationError.field('allow', 'streamed replies are text; ask the synchronous chat for audio/mp3');
      if (!this.speech) throw ValidationError.field('allow', 'no speech engine is configured, so replies are text/plain only');
      return 'audio';
    }
    throw ValidationError.field('allow', 'must include text/plain or audio/mp3');
  }

  /**
   * Sends the message and waits for the whole reply, in the form `allow` asks for; `characterId`
   * chooses who answers (see `Chat.send`).
   */
  async answer(actor: Actor, conversationId: string, input: ChatInput, choice: AnswererChoice = {}): Promise<SyncAnswer> {
    const format = this.format(input.allow, false);
    if (format === 'audio') await this.#speakingCharacter(actor, conversationId, choice.characterId);
    return this.#deliver(await this.chat.send(actor, conversationId, input, { stream: false, characterId: choice.characterId, signal: choice.signal }), format);
  }

  /** Answers the last message again (see `Chat.regenerate`), in the form `allow` asks for. */
  async regenerate(actor: Actor, conversationId: string, allow: readonly string[] | undefined, signal?: AbortSignal): Promise<SyncAnswer> {
    const format = this.format(allow, false);
    // The new reply is written by whoever wrote the one it replaces (in a scene, not always the conversation's own character).
    if (format === 'audio') this.speech!.requireVoice(await this.chat.regenerationWriter(actor, conversationId));
    return this.#deliver(await this.chat.regenerate(actor, conversationId, { stream: false, signal }), format);
  }

  /** Starts a streamed (text) new answer to the last message. */
  async regenerateStream(actor: Actor, conversationId: string, allow: readonly string[] | undefined, signal?: AbortSignal): Promise<Reply> {
    this.format(allow, true);
    return this.chat.regenerate(actor, conversationId, { stream: true, signal });
  }

  async #deliver(reply: Reply, format: ReplyFormat): Promise<SyncAnswer> {
    const stored = await reply.done;
    const finish = stored.finishReason === undefined ? {} : { finishReason: stored.finishReason };
    if (format === 'text' || !this.speech) return { text: stored.content, ...finish };
    const character = await this.#character(stored.participantId);
    const file = await this.speech.speakAs(character, stored.content);
    const bytes = await this.files.read(file.key);
    if (!bytes) throw notFound('Audio', file.key);
    return { audio: bytes, ...finish };
  }

  /** Starts a streamed (text) reply, after checking what the caller allows. */
  async stream(actor: Actor, conversationId: string, input: ChatInput, choice: AnswererChoice = {}): Promise<Reply> {
    this.format(input.allow, true);
    return this.chat.send(actor, conversationId, input, { stream: true, characterId: choice.characterId, signal: choice.signal });
  }

  // An audio answer needs a voice: say so before the message is sent, not after the reply.
  async #speakingCharacter(actor: Actor, conversationId: string, characterId: string | undefined): Promise<void> {
    const conversation = await this.conversations.get(actor, conversationId);
    this.speech!.requireVoice(await this.conversations.answerer(conversation, characterId));
  }

  async #character(characterId: string): Promise<CharacterRecord> {
    const character = await this.store.characters.get(characterId);
    if (!character) throw notFound('Character', characterId);
    return character;
  }
}
