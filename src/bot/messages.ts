import type { Message } from 'discord.js';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { adminActor } from '../core/actor.js';
import type { ChatInput } from '../core/chat.js';
import { AppError } from '../core/errors.js';
import { isImageMimeType } from '../core/media.js';
import { downloadAttachment } from './attachments.js';
import type { BotContext } from './command.js';
import { explainError } from './explain-error.js';
import { consume } from './interactions.js';

/** Largest attachment the bot downloads to send to the character. */
const maxImageBytes = 10 * 1024 * 1024;

/**
 * Messages people write in conversation threads and DMs: each is a chat message from the
 * writer's account, answered by the character in the same place.
 */
export function createMessageHandler(context: BotContext, limiter: RateLimiterAbstract, messagesPerMinute: number) {
  /** Users told they are too fast, so the notice is sent once per burst, not per message. */
  const warned = new Set<string>();

  return async (message: Message): Promise<void> => {
    // Our characters' own words first: a webhook message's author has `bot: true` too, but the
    // rule must not hang on that. Then other bots and other webhooks, never answered either.
    if (context.replies.isOwnPersonaMessage(message)) return;
    if (message.author.bot || message.system) return;
    const inDm = message.guildId === null;
    const link = inDm ? undefined : await context.links.forChannel(message.channelId);
    if (!inDm && !link) return;
    const log = { userId: message.author.id, channelId: message.channelId, messageId: message.id };
    try {
      try {
        await consume(limiter, message.author.id, messagesPerMinute);
        warned.delete(message.author.id);
      } catch (error) {
        if (warned.has(message.author.id)) return;
        warned.add(message.author.id);
        throw error;
      }
      const { actor, account } = await context.accountOf(message.author);
      let conversationId: string;
      if (link) {
        conversationId = link.conversationId;
        // Anyone writing in the thread joins the conversation as a speaker.
        await context.core.conversations.addSpeaker(adminActor, conversationId, account.id);
      } else {
        conversationId = await dmConversation(context, message.author.id, account.id, account.characterId);
      }
      const inputs = [...(await imagesOf(message)), ...(message.content.trim() ? [{ text: message.content }] : [])];
      if (inputs.length === 0) return;
      const speakSentence = link ? await followSpeaker(context, message, conversationId) : undefined;
      await context.runner.answer(actor, conversationId, inputs, await context.replies.channelFor(message.channel, conversationId), speakSentence);
    } catch (error) {
      context.logger[error instanceof AppError ? 'info' : 'error']({ ...log, err: error }, 'message not answered');
      await message.reply({ content: `⚠️ ${explainError(error)}`, allowedMentions: { parse: [] } }).catch(() => undefined);
    }
  };
}

/**
 * When someone follows this thread (/voice follow) and is in a voice channel, the reply is
 * also spoken there, sentence by sentence as it streams.
 */
async function followSpeaker(context: BotContext, message: Message, conversationId: string): Promise<((sentence: string) => void) | undefined> {
  const speech = context.core.speech;
  if (!speech || !message.inGuild()) return undefined;
  const followers = await context.links.followers(message.channelId);
  const voiceChannelId = followers.map((userId) => message.guild.voiceStates.cache.get(userId)?.channelId).find((id) => id);
  if (!voiceChannelId) return undefined;
  const conversation = await context.core.conversations.get(adminActor, conversationId);
  const character = await context.core.characters.get(adminActor, conversation.characterId);
  if (!character.ttsVoiceId) return undefined;
  return (sentence) => {
    context.voice.play(message.guild, voiceChannelId, () => speech.streamAs(character, sentence)).catch((error: unknown) => {
      context.logger.warn({ err: error, channelId: message.channelId }, 'could not speak a reply sentence');
    });
  };
}

/** The DM conversation with the character the user chose last (their own by default). */
async function dmConversation(context: BotContext, discordUserId: string, accountId: string, ownCharacterId: string): Promise<string> {
  const characterId = (await context.links.dmCharacter(discordUserId)) ?? ownCharacterId;
  const known = await context.links.dmConversation(discordUserId, characterId);
  if (known) return known;
  const conversation = await context.core.conversations.create(adminActor, accountId, characterId);
  await context.links.setDmConversation(discordUserId, characterId, conversation.id);
  return conversation.id;
}

/** Image attachments as chat inputs; other files are ignored (and said so in the log). */
async function imagesOf(message: Message): Promise<ChatInput[]> {
  const inputs: ChatInput[] = [];
  for (const attachment of message.attachments.values()) {
    const type = attachment.contentType?.split(';')[0]?.trim() ?? '';
    if (!isImageMimeType(type)) continue;
    const bytes = await downloadAttachment(attachment, maxImageBytes);
    inputs.push({ image: bytes, mimeType: type });
  }
  return inputs;
}
