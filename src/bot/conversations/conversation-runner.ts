import type { Actor } from '../../core/actor.js';
import type { ChatInput, RegenerationTarget, Reply } from '../../core/chat.js';
import type { Core } from '../../core/core.js';
import type { StoredMessage } from '../../core/repositories.js';
import type { Logger } from '../../core/ports.js';
import { AppError } from '../../core/errors.js';
import { KeyedLock } from '../keyed-lock.js';
import type { ChannelPacer } from '../pacing/channel-pacer.js';
import { explainError } from '../explain-error.js';
import { shownAlternative } from '../replies/in-place-reply.js';
import { finishNote, replyRows, shownReply } from '../replies/reply-buttons.js';
import { SentenceCollector } from '../voice/sentence-collector.js';
import { QueuePlace, type ReplyChannel, writeStreamingReply } from '../replies/streaming-reply.js';
import { discordMessageLimit } from '../replies/split-message.js';

export interface RunnerOptions {
  /** Remembers which character wrote which Discord messages (for replies addressed to them). */
  recordAuthors?(messageIds: readonly string[], characterId: string): Promise<void>;
  /** Remembers the Discord messages a reply took, in order, its buttons under the last (for swipes). */
  recordReply?(messageIds: readonly string[], characterId: string): Promise<void>;
}

export interface AnswerOptions {
  /** Who answers; the conversation's own character by default. */
  characterId?: string | undefined;
  /** Called with each finished sentence of the reply as it streams (to speak it). */
  onSentence?: ((sentence: string) => void) | undefined;
}

/** A reply written in full on Discord and stored. */
export interface WrittenReply {
  messageIds: string[];
  /** The reply as stored. */
  text: string;
  /** The character who wrote it. */
  characterId: string;
}

/**
 * Answers messages on Discord, one conversation at a time: each message is stored at once,
 * and replies in one conversation are written in the order the messages came, a second
 * message waiting while the first reply streams, then getting its own reply.
 */
export class ConversationRunner {
  readonly #turns = new KeyedLock();

  constructor(
    private readonly core: Core,
    private readonly pacer: ChannelPacer,
    private readonly logger: Logger,
    private readonly options: RunnerOptions = {},
  ) {}

  /**
   * Stores `inputs` as messages of `actor` (images first, text last), then, in turn, streams
   * the reply of `options.characterId` (the conversation's own character by default) to the
   * last one into `channel`. Resolves once the reply is written, with what was written.
   */
  async answer(actor: Actor, conversationId: string, inputs: ChatInput[], channel: ReplyChannel, options: AnswerOptions = {}): Promise<WrittenReply | undefined> {
    const last = (await this.store(actor, conversationId, inputs)).at(-1);
    return last === undefined ? undefined : this.answerStored(actor, conversationId, last.id, channel, options);
  }

  /**
   * Posts a character's stored greeting (opening a conversation, or joining a scene) into
   * `channel`, in turn with the conversation's replies, its alternatives under ◀ ▶. A failure
   * is logged: the greeting stays stored, and the conversation goes on.
   */
  async greet(conversationId: string, greeting: StoredMessage, channel: ReplyChannel): Promise<string | undefined> {
    return this.#turns.run(conversationId, async () => {
      // One message, its alternatives cut to it: a greeting's ◀ ▶ edit that message alone.
      const shown = shownAlternative(greeting, undefined, channel.maxLength ?? discordMessageLimit);
      try {
        return await this.#recordingAuthors(channel, greeting.participantId, conversationId).send(shown.parts[0]!, shown.components);
      } catch (error) {
        this.logger.warn({ err: error, conversationId }, 'could not post a greeting on Discord');
        return undefined;
      } finally {
        channel.release?.();
      }
    });
  }

  /** Stores `inputs` as messages of `actor`, in order (a recording is transcribed first). */
  async store(actor: Actor, conversationId: string, inputs: ChatInput[]): Promise<StoredMessage[]> {
    const stored = [];
    for (const input of inputs) stored.push(await this.core.chat.post(actor, conversationId, input));
    return stored;
  }

  /** Streams the reply to the stored message `messageId` into `channel`, in turn with other replies. */
  async answerStored(actor: Actor, conversationId: string, messageId: string, channel: ReplyChannel, options: AnswerOptions = {}): Promise<WrittenReply | undefined> {
    return this.#turns.run(conversationId, async () => {
      const place = new QueuePlace();
      const reply = await this.core.chat.respond(actor, conversationId, messageId, { stream: true, onQueued: (ahead) => place.update(ahead), ...(options.characterId ? { characterId: options.characterId } : {}) });
      return this.#write(reply, conversationId, messageId, channel, { onSentence: options.onSentence, place, newMessages: true });
    });
  }

  /**
   * Has `characterId` answer the conversation's latest message now, whoever wrote it (another
   * character, in a scene), in turn with other replies.
   */
  async next(actor: Actor, conversationId: string, characterId: string, channel: ReplyChannel, options: Pick<AnswerOptions, 'onSentence'> = {}): Promise<WrittenReply | undefined> {
    await this.core.conversations.get(actor, conversationId);
    return this.#turns.run(conversationId, async () => {
      const latest = (await this.core.conversations.messages(conversationId, { newest: true, limit: 1 })).at(-1);
      if (!latest) throw new AppError('VALIDATION_FAILED', 'Nothing has been said in this conversation yet: write something first.');
      const place = new QueuePlace();
      const reply = await this.core.chat.respond(actor, conversationId, latest.id, { stream: true, characterId, onQueued: (ahead) => place.update(ahead) });
      return this.#write(reply, conversationId, latest.id, channel, { onSentence: options.onSentence, place, newMessages: true });
    });
  }

  /**
   * Writes a new reply to `target.messageId` (🔄 or ▶ under the reply to it), in turn with other
   * replies: another alternative of that reply if it is still the newest (the core decides).
   * `channel` decides where it shows (the messages of the reply under the button, for the bot,
   * which stay the reply's).
   */
  async regenerate(
    actor: Actor,
    conversationId: string,
    target: RegenerationTarget & { messageId: string },
    channel: ReplyChannel,
    options: Pick<AnswerOptions, 'onSentence'> = {},
  ): Promise<WrittenReply | undefined> {
    return this.#turns.run(conversationId, async () => {
      const place = new QueuePlace();
      const reply = await this.core.chat.regenerate(actor, conversationId, { stream: true, onQueued: (ahead) => place.update(ahead), ...target });
      return this.#write(reply, conversationId, target.messageId, channel, { onSentence: options.onSentence, place, newMessages: false });
    });
  }

  /** `newMessages`: the reply is posted anew (not into the messages of one it replaces), and its messages are recorded. */
  async #write(
    reply: Reply,
    conversationId: string,
    messageId: string,
    channel: ReplyChannel,
    { onSentence, place, newMessages }: { onSentence: ((sentence: string) => void) | undefined; place: QueuePlace; newMessages: boolean },
  ): Promise<WrittenReply | undefined> {
    const record = this.options.recordReply;
    try {
      let stored: StoredMessage | undefined;
      const pieces = withFinishNote(reply, (message) => {
        stored = message;
      });
      const written = await writeStreamingReply(this.#recordingAuthors(channel, reply.characterId, conversationId), onSentence ? teeSentences(pieces, onSentence) : pieces, {
        pacer: this.pacer,
        logger: this.logger,
        explain: (error) => `⚠️ ${explainError(error)}`,
        place,
        // A finished or failed reply can be asked for again (pressing it waits for this turn to end);
        // a stored one shows which of its alternatives this is, with ◀ ▶ to the others.
        finalButtons: () => replyRows({ conversationId, messageId }, stored && shownReply(stored)),
        // A failed reply's too: 🔄 under it writes the next into the same messages. One written
        // again shows in those of the reply it replaces, already recorded.
        ...(newMessages && record ? { beforeFinalButtons: (messageIds: readonly string[]) => record(messageIds, reply.characterId).catch((error: unknown) => this.logger.warn({ err: error, conversationId }, 'could not record the messages of a reply')) } : {}),
      });
      stored ??= await reply.done.catch(() => undefined);
      if (written.failure) this.logger.warn({ err: written.failure, conversationId }, 'reply failed on Discord');
      return stored && !written.failure ? { messageIds: written.messageIds, text: stored.content, characterId: reply.characterId } : undefined;
    } finally {
      // The reply is over: what it held for its messages (a persona's webhook) is free.
      channel.release?.();
    }
  }

  /**
   * The channel, remembering each message it sends as the character's words as soon as it
   * exists, so a reply to it (even while it still streams) reaches that character.
   */
  #recordingAuthors(channel: ReplyChannel, characterId: string, conversationId: string): ReplyChannel {
    const record = this.options.recordAuthors;
    if (!record) return channel;
    return {
      ...channel,
      send: async (content, rows) => {
        const id = await channel.send(content, rows);
        await record([id], characterId).catch((error: unknown) => this.logger.warn({ err: error, conversationId }, 'could not record who wrote a reply'));
        return id;
      },
    };
  }
}

/**
 * The reply's pieces, then a note when it did not end on its own (cut at the reply limit);
 * `onStored` hears the stored reply before the last piece, so the final edit can show its swipes.
 */
async function* withFinishNote(reply: Reply, onStored: (message: StoredMessage) => void): AsyncGenerator<string> {
  yield* reply.pieces;
  const stored = await reply.done;
  onStored(stored);
  const note = finishNote(stored.finishReason);
  if (note !== '') yield note;
}

/** Passes pieces through unchanged, handing each finished sentence to `onSentence` on the way. */
async function* teeSentences(pieces: AsyncIterable<string>, onSentence: (sentence: string) => void): AsyncGenerator<string> {
  const sentences = new SentenceCollector();
  for await (const piece of pieces) {
    yield piece;
    for (const sentence of sentences.push(piece)) onSentence(sentence);
  }
  for (const sentence of sentences.end()) onSentence(sentence);
}
