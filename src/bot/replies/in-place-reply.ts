import type { ButtonInteraction, Message } from 'discord.js';
import type { StoredMessage } from '../../core/repositories.js';
import { finishNote, replyRows, shownReply } from './reply-buttons.js';
import { discordMessageLimit, splitWithin } from './split-message.js';
import type { ButtonRows, ReplyChannel } from './streaming-reply.js';

/**
 * The name a reply the bot posted for one of several characters starts with (`**Ada:** `, see
 * `personaReplyChannel`); empty for a persona's own message or a DM. Taken from the message as it
 * shows, so an edit in place keeps it whoever posted the message.
 */
export function labelOf(message: Pick<Message, 'webhookId' | 'content'>): string {
  if (message.webhookId) return '';
  return /^\*\*[^*\n]+:\*\* /.exec(message.content)?.[0] ?? '';
}

/** The Discord messages a reply shows in, and how to edit those before the last. */
export interface ReplyMessages {
  /** In order; the last is the one under the buttons (the interaction's). */
  ids: readonly string[];
  /**
   * Replaces the text of one before the last, as it was posted (the bot's or a persona's);
   * `MessageUneditableError` when that can no longer be done.
   */
  edit(messageId: string, content: string): Promise<void>;
}

/**
 * What a message of a reply shows when the alternative shown needs fewer messages than the
 * reply has: nothing (Discord takes no empty text), the message kept for a longer alternative.
 */
export const clearedPart = '\u200b';

/**
 * The streaming writer's channel for a reply written again under its button: the new
 * alternative goes into the messages the reply already has (`messages`), in order, and no new
 * message is posted. Those of the earlier alternative beyond the first are cleared as the new
 * one starts, and it is cut with `cutMarker` if it needs more messages than there are
 * (`maxMessages`). The buttons stay under the last message, edited through the interaction
 * (which Discord allows for the bot's messages and a persona's webhook messages alike); the
 * others are edited as they were posted. A message that can no longer be edited (a deleted
 * webhook) keeps its words and the reply goes on in the next; past the last, in a new message
 * through `base` (the writer's persona or the bot). The interaction must be acknowledged
 * (`deferUpdate`) first.
 */
export function inPlaceChannel(interaction: ButtonInteraction, base: ReplyChannel, messages: ReplyMessages): ReplyChannel {
  const ids = messages.ids.length > 0 ? messages.ids : [interaction.message.id];
  const lastIndex = ids.length - 1;
  const label = labelOf(interaction.message);
  let placed = 0;
  let overflowed = false;
  const editHere = async (content: string, rows?: ButtonRows): Promise<void> => {
    await interaction.editReply({ content: label + content, allowedMentions: { parse: [] }, ...(rows ? { components: rows } : {}) });
  };
  // The reply's buttons go under its last message, even when the alternative ends before it.
  const write = async (index: number, content: string, rows?: ButtonRows): Promise<void> => {
    if (index === lastIndex) return editHere(content, rows);
    await messages.edit(ids[index]!, content);
    if (rows) await editHere(clearedPart, rows);
  };
  return {
    ...base,
    maxLength: Math.min(base.maxLength ?? discordMessageLimit, discordMessageLimit - label.length),
    maxMessages: ids.length,
    // Interaction edits are paced as the channel's own (undefined), never booking a webhook's key
    // that other replies share, unless the reply had to go on in a message of `base`.
    pacingKey: () => (overflowed ? base.pacingKey?.() : undefined),
    async send(content, rows) {
      if (placed > lastIndex) {
        overflowed = true;
        return base.send(content, rows);
      }
      const index = placed++;
      if (index === 0) {
        // Nothing of the alternative shown before stays beside the new one.
        for (const [later, id] of ids.entries()) {
          if (later === 0) continue;
          await (later === lastIndex ? editHere(clearedPart) : messages.edit(id, clearedPart).catch(() => undefined));
        }
      }
      await write(index, content, rows);
      return ids[index]!;
    },
    edit(id, content, rows) {
      const index = ids.indexOf(id);
      return index === -1 ? base.edit(id, content, rows) : write(index, content, rows);
    },
  };
}

/**
 * What the messages of a reply show for the alternative it has chosen: its text and the note of
 * a cut reply, over `messages` messages of `room` characters (those it does not need cleared,
 * the rest cut with `cutMarker`), and the swipe buttons under the last. `answeredId` is the
 * message it answers (for 🔄); none for a greeting, which answers nothing.
 */
export function shownAlternative(message: StoredMessage, answeredId: string | undefined, room: number, messages = 1): { parts: string[]; components: ButtonRows } {
  const text = message.content + finishNote(message.finishReason);
  const shown = splitWithin(text, messages, room);
  const parts = Array.from({ length: Math.max(1, messages) }, (_, index) => shown[index] ?? clearedPart);
  const components = replyRows(answeredId === undefined ? undefined : { conversationId: message.conversationId, messageId: answeredId }, shownReply(message));
  return { parts, components };
}
