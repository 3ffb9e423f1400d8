import type { APIActionRowComponent, APIButtonComponent } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { ChannelPacer } from '../pacing/channel-pacer.js';
import { continuationAfter, cutMarker, discordMessageLimit, splitWithin } from './split-message.js';

/** What the writer needs of a Discord channel; the bot adapts discord.js channels to it. */
export interface ReplyChannel {
  id: string;
  sendTyping(): Promise<void>;
  /** Sends a message, with button rows under it if given; returns its id. */
  send(content: string, rows?: ButtonRows): Promise<string>;
  /** Replaces a message's text, and its button rows when given. */
  edit(messageId: string, content: string, rows?: ButtonRows): Promise<void>;
  /**
   * The pacer's key for this channel's messages when Discord limits them apart from the
   * channel's own bucket (a persona's webhook, shared by every thread of its parent channel);
   * undefined for the channel's own (`id`). Asked at each edit, as it is known only once the
   * first message is out.
   */
  pacingKey?(): string | undefined;
  /** The longest text one message here may take (default Discord's 2,000), when the channel adds words of its own. */
  maxLength?: number;
  /**
   * The most messages the reply may take (an alternative written into the messages of the reply
   * it replaces): past them its text is cut, ending with `cutMarker`, and no further message is
   * posted, though the rest is still read (and stored).
   */
  maxMessages?: number;
  /** The reply is over (its buttons are on): whatever it held for its messages (a persona's webhook) is free for the next. */
  release?(): void;
}

/**
 * Thrown by a channel's `edit` when the message still shows but will not be edited again (a
 * persona's webhook was deleted under it, or Discord kept failing it): the message keeps the
 * words it shows, and the writer goes on after them in a new message.
 */
export class MessageUneditableError extends Error {
  constructor(message = 'This message can no longer be edited.', options?: ErrorOptions) {
    super(message, options);
    this.name = 'MessageUneditableError';
  }
}

/** Button rows under a message. */
export type ButtonRows = APIActionRowComponent<APIButtonComponent>[];

export interface StreamingReplyOptions {
  pacer: ChannelPacer;
  /**
   * Buttons under the reply's last message, put there by the final edit itself: one request
   * at the end of a reply, not two, when every reply ends at once. A function is asked once the
   * pieces have ended, for buttons that depend on how the reply ended (the stored reply's swipes).
   */
  finalButtons?: ButtonRows | (() => ButtonRows | undefined);
  /**
   * Told the messages a reply of more than one took, in order, before its final buttons go on,
   * so what records them is done before anyone can press one (a swipe shows in all of them).
   */
  beforeFinalButtons?: (messageIds: readonly string[]) => Promise<void>;
  logger: Logger;
  /** Shown at the end of the text while it grows. */
  cursor?: string;
  /** Discord's typing indicator lasts about 10 s; it is renewed this often until the first words. */
  typingIntervalMs?: number;
  /** The indicator is shown only if the first words take longer than this (most replies start sooner). */
  typingDelayMs?: number;
  /** What to show when the reply fails; the text written so far stays above it. */
  explain: (error: unknown) => string;
  /** The reply's place in the engine's queue while it waits: shown until the first words. */
  place?: QueuePlace;
}

/**
 * How many replies the chat engine serves before this one, while it waits for a free slot;
 * the writer shows it in the reply's message until the first words replace it.
 */
export class QueuePlace {
  #ahead: number | undefined;
  #listener: (() => void) | undefined;

  get ahead(): number | undefined {
    return this.#ahead;
  }

  /** What the engine said (`CallOptions.onQueued`). */
  update(ahead: number): void {
    this.#ahead = ahead;
    this.#listener?.();
  }

  onChange(listener: () => void): void {
    this.#listener = listener;
  }
}

/** The notice a waiting reply shows. */
export function waitingNotice(ahead: number): string {
  return ahead === 0 ? '⏳ Waiting for the model: next in line.' : `⏳ Waiting for the model: ${ahead} ahead.`;
}

export interface StreamingReplyResult {
  messageIds: string[];
  text: string;
  /** The error that ended the reply early, after it was shown. */
  failure?: unknown;
}

const defaultCursor = ' ▌';

/**
 * Writes a reply that arrives in pieces as a Discord message that grows by edits: the typing
 * indicator until the first words, then a message with a cursor, edited as the text grows.
 * At most one request is in flight at a time, and text that arrives meanwhile is merged into
 * the next edit, so there is never a backlog of stale edits. Edits are paced per channel by
 * the pacer; the final text goes out as soon as the reply ends, whatever the pacing, with the
 * final buttons. Past 2,000 characters the reply continues in a new message, and so it does
 * after a message that can no longer be edited, from the words that message shows.
 */
export async function writeStreamingReply(
  channel: ReplyChannel,
  pieces: AsyncIterable<string>,
  options: StreamingReplyOptions,
): Promise<StreamingReplyResult> {
  const cursor = options.cursor ?? defaultCursor;
  /** The messages growing now, each with the length of the text its content was cut from. */
  let sent: { id: string; content: string; upTo: number }[] = [];
  /** Messages that can no longer be edited, as they show; `sent` goes on from `from` in the text. */
  const settled: { id: string; content: string }[] = [];
  let from = 0;
  let text = '';
  let inFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const sharedKey = (): string | undefined => channel.pacingKey?.();
  const pacingKey = (): string => sharedKey() ?? channel.id;

  // Messages as they should read now; the cursor goes on the last one while it still fits.
  const wanted = (final: boolean): string[] => {
    const ahead = options.place?.ahead;
    if (text.trim() === '' && !final && ahead !== undefined) return [waitingNotice(ahead)];
    const rest = continuationAfter(text.trimStart(), from);
    if (rest === '') return [];
    const limit = channel.maxLength ?? discordMessageLimit;
    // Messages that can no longer be edited took their share of the reply's messages.
    const room = channel.maxMessages === undefined ? Number.POSITIVE_INFINITY : Math.max(1, channel.maxMessages - settled.length);
    const parts = splitWithin(final ? rest.trimEnd() : rest, room, limit);
    const last = parts.length - 1;
    if (!final && !parts[last]!.endsWith(cutMarker) && parts[last]!.length + cursor.length <= limit) parts[last] += cursor;
    return parts.filter((part) => part.trim().length > 0);
  };

  const deliver = async (final: boolean): Promise<void> => {
    const parts = wanted(final);
    // Where the text these parts were cut from ends: a message that can no longer be edited is
    // gone on from there (only the last part grows, so only it is ever edited).
    const upTo = text.trimStart().length;
    const finalRows = final ? (typeof options.finalButtons === 'function' ? options.finalButtons() : options.finalButtons) : undefined;
    const told = final && options.beforeFinalButtons !== undefined && settled.length + parts.length > 1;
    for (const [index, content] of parts.entries()) {
      const last = index === parts.length - 1;
      if (told && last) {
        // A new last part goes out first without its buttons (one request more), to be told of.
        if (!sent[index]) {
          sent.push({ id: await channel.send(content), content, upTo });
          options.pacer.sent(pacingKey());
        }
        await options.beforeFinalButtons!([...settled, ...sent].map((message) => message.id));
      }
      const rows = final && last ? finalRows : undefined;
      const previous = sent[index];
      if (previous?.content === content && rows === undefined) continue;
      if (previous) {
        try {
          await channel.edit(previous.id, content, rows);
        } catch (error) {
          if (!(error instanceof MessageUneditableError)) throw error;
          // Sending the whole part again would show its words twice: the message keeps them,
          // and the reply goes on after them.
          options.logger.info({ channelId: channel.id, messageId: previous.id }, 'a reply message can no longer be edited; continuing after it in a new one');
          from = previous.upTo;
          settled.push(...sent);
          sent = [];
          await deliver(final);
          return;
        }
        previous.content = content;
        previous.upTo = upTo;
      } else {
        sent.push({ id: await channel.send(content, rows), content, upTo });
      }
      options.pacer.sent(pacingKey());
    }
  };

  // Runs one delivery when none is in flight and the pacing allows; otherwise arranges one.
  const schedule = (): void => {
    if (ended || inFlight || timer) return;
    const wait = options.pacer.claim(pacingKey(), sent.length === 0);
    if (wait > 0) {
      timer = setTimeout(() => {
        timer = undefined;
        schedule();
      }, wait);
      return;
    }
    // A key several replies share (a webhook's, for every thread of its channel) is booked at
    // once: replies in step would otherwise all pass before any of them is marked sent.
    const shared = sharedKey();
    if (shared !== undefined) options.pacer.sent(shared);
    inFlight = deliver(false)
      .catch((error: unknown) => options.logger.warn({ err: error, channelId: channel.id }, 'edit failed; the next one carries the text'))
      .finally(() => {
        inFlight = undefined;
        if (wanted(false).some((content, index) => sent[index]?.content !== content)) schedule();
      });
  };

  options.place?.onChange(() => {
    if (text.trim() === '') schedule();
  });
  const typing = startTyping(channel, options.typingDelayMs ?? 300, options.typingIntervalMs ?? 8_000, options.pacer, options.logger);
  let failure: unknown;
  try {
    for await (const piece of pieces) {
      typing.stop();
      text += piece;
      if (text.trim().length > 0) schedule();
    }
  } catch (error) {
    failure = error;
    const explanation = options.explain(error);
    text = text.trim().length > 0 ? `${text.trimEnd()}\n\n${explanation}` : explanation;
  } finally {
    typing.stop();
    ended = true;
    clearTimeout(timer);
  }
  await inFlight;
  // The final text is delivered now, not at the pace of ordinary edits; discord.js still
  // waits out a 429 or an exhausted bucket before sending it.
  await deliver(true);
  await settleCursors(channel, settled, cursor, options.logger);
  const messageIds = [...settled, ...sent].map((message) => message.id);
  return { messageIds, text, ...(failure === undefined ? {} : { failure }) };
}

/**
 * A message left behind while it grew still shows the cursor, as if more were coming there:
 * it is asked once more to drop it (Discord's trouble may have passed); a refusal changes nothing.
 */
async function settleCursors(channel: ReplyChannel, settled: readonly { id: string; content: string }[], cursor: string, logger: Logger): Promise<void> {
  for (const message of settled) {
    if (cursor === '' || !message.content.endsWith(cursor)) continue;
    await channel.edit(message.id, message.content.slice(0, -cursor.length).trimEnd()).catch((error: unknown) => logger.debug({ err: error, channelId: channel.id, messageId: message.id }, 'a message keeps its cursor'));
  }
}

function startTyping(channel: ReplyChannel, delayMs: number, intervalMs: number, pacer: ChannelPacer, logger: Logger): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const send = () => {
    if (stopped) return;
    // A nicety: it waits while the global window is crowded with requests that carry words.
    const wait = pacer.claimSpare(channel.id);
    if (wait > 0) {
      timer = setTimeout(send, wait);
      return;
    }
    channel.sendTyping().catch((error: unknown) => logger.debug({ err: error, channelId: channel.id }, 'typing indicator failed'));
    timer = setTimeout(send, intervalMs);
  };
  timer = setTimeout(send, delayMs);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
