import type { ButtonInteraction, Message } from 'discord.js';
import type { StoredMessage } from '../../core/repositories.js';
import { finishNote, replyRows, shownReply } from './reply-buttons.js';
import { discordMessageLimit } from './split-message.js';
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

/**
 * The streaming writer's channel for a reply written again under its button: the reply goes
 * into the message under the button, edited through the interaction, which Discord allows for
 * the bot's messages and a persona's webhook messages alike, so no new message is posted. Only
 * past what one message holds does the rest go on in new messages, through `base` (the writer's
 * persona or the bot). The interaction must be acknowledged (`deferUpdate`) first.
 */
export function inPlaceChannel(interaction: ButtonInteraction, base: ReplyChannel): ReplyChannel {
  const messageId = interaction.message.id;
  const label = labelOf(interaction.message);
  let placed = false;
  let overflowed = false;
  const editHere = async (content: string, rows?: ButtonRows): Promise<void> => {
    await interaction.editReply({ content: label + content, allowedMentions: { parse: [] }, ...(rows ? { components: rows } : {}) });
  };
  return {
    ...base,
    maxLength: Math.min(base.maxLength ?? discordMessageLimit, discordMessageLimit - label.length),
    // Interaction edits are paced as the channel's own (undefined), never booking a webhook's key
    // that other replies share, until the reply overflows into messages of `base`.
    pacingKey: () => (overflowed ? base.pacingKey?.() : undefined),
    async send(content, rows) {
      if (placed) {
        overflowed = true;
        return base.send(content, rows);
      }
      placed = true;
      await editHere(content, rows);
      return messageId;
    },
    edit: (id, content, rows) => (id === messageId ? editHere(content, rows) : base.edit(id, content, rows)),
  };
}

/**
 * What a reply shows for the alternative it has chosen: its text and the note of a cut reply,
 * within one message, with the swipe buttons. `answeredId` is the message it answers (for 🔄);
 * none for a greeting, which answers nothing.
 */
export function shownAlternative(message: StoredMessage, answeredId: string | undefined, label: string): { content: string; components: ButtonRows } {
  const text = message.content + finishNote(message.finishReason);
  const room = discordMessageLimit - label.length;
  // A long alternative shows its beginning here: the swipe edits one message, never posts more.
  const content = label + (text.length <= room ? text : `${text.slice(0, room - 1)}…`);
  const components = replyRows(answeredId === undefined ? undefined : { conversationId: message.conversationId, messageId: answeredId }, shownReply(message));
  return { content, components };
}
