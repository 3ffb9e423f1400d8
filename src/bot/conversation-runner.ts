import type { Actor } from '../core/actor.js';
import type { ChatInput, Reply } from '../core/chat.js';
import type { Core } from '../core/core.js';
import type { Logger } from '../core/ports.js';
import { KeyedLock } from './keyed-lock.js';
import type { ChannelPacer } from './channel-pacer.js';
import { explainError } from './explain-error.js';
import { finishNote, regenerateRow } from './reply-buttons.js';
import { SentenceCollector } from './sentence-collector.js';
import { type ReplyChannel, writeStreamingReply } from './streaming-reply.js';

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
  ) {}

  /**
   * Stores `inputs` as messages of `actor` (images first, text last), then, in turn, streams
   * the character's reply to the last one into `channel`.
   */
  async answer(
    actor: Actor,
    conversationId: string,
    inputs: ChatInput[],
    channel: ReplyChannel,
    /** Called with each finished sentence of the reply as it streams (to speak it). */
    onSentence?: (sentence: string) => void,
  ): Promise<void> {
    if (inputs.length === 0) return;
    const stored = [];
    for (const input of inputs) stored.push(await this.core.chat.post(actor, conversationId, input));
    const last = stored.at(-1)!;
    await this.#turns.run(conversationId, async () => {
      await this.#write(await this.core.chat.respond(actor, conversationId, last.id, { stream: true }), conversationId, last.id, channel, onSentence);
    });
  }

  /**
   * Writes a new reply to `messageId`, the conversation's latest message (the 🔄 button), in
   * turn with other replies; the core replaces the previous reply.
   */
  async regenerate(actor: Actor, conversationId: string, messageId: string, channel: ReplyChannel): Promise<void> {
    await this.#turns.run(conversationId, async () => {
      await this.#write(await this.core.chat.regenerate(actor, conversationId, { stream: true, messageId }), conversationId, messageId, channel);
    });
  }

  async #write(reply: Reply, conversationId: string, messageId: string, channel: ReplyChannel, onSentence?: (sentence: string) => void): Promise<void> {
    const pieces = withFinishNote(reply);
    const written = await writeStreamingReply(channel, onSentence ? teeSentences(pieces, onSentence) : pieces, {
      pacer: this.pacer,
      logger: this.logger,
      explain: (error) => `⚠️ ${explainError(error)}`,
    });
    await reply.done.catch(() => undefined);
    if (written.failure) this.logger.warn({ err: written.failure, conversationId }, 'reply failed on Discord');
    // A finished or failed reply can be asked for again.
    const lastMessageId = written.messageIds.at(-1);
    if (lastMessageId !== undefined && channel.setButtons) {
      await channel.setButtons(lastMessageId, [regenerateRow({ conversationId, messageId })]).catch((error: unknown) => {
        this.logger.warn({ err: error, conversationId }, 'could not add the try-again button');
      });
    }
  }
}

/** The reply's pieces, then a note when it did not end on its own (cut at the reply limit). */
async function* withFinishNote(reply: Reply): AsyncGenerator<string> {
  yield* reply.pieces;
  const note = finishNote((await reply.done).finishReason);
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
