import type { Channel } from 'discord.js';
import { AppError } from '../../core/errors.js';
import type { ReplyChannel } from './streaming-reply.js';

/**
 * A discord.js channel as the streaming writer sees it. Mentions in the character's words
 * never ping anyone.
 */
export function replyChannelOf(channel: Channel): ReplyChannel {
  if (!channel.isSendable()) throw new AppError('FORBIDDEN', 'I cannot send messages in this channel.');
  return {
    id: channel.id,
    sendTyping: () => channel.sendTyping(),
    send: async (content, rows) => (await channel.send({ content, allowedMentions: { parse: [] }, ...(rows ? { components: rows } : {}) })).id,
    edit: async (messageId, content, rows) => {
      if (!('messages' in channel)) throw new AppError('INTERNAL', 'This channel has no messages to edit.');
      await channel.messages.edit(messageId, { content, allowedMentions: { parse: [] }, ...(rows ? { components: rows } : {}) });
    },
  };
}
