import type { Message } from 'discord.js';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { type Actor, adminActor } from '../../core/actor.js';
import { AppError } from '../../core/errors.js';
import type { CharacterRecord } from '../../core/records.js';
import { addressedCharacter, withoutBotMention } from './addressing.js';
import { existingCharacters } from '../characters.js';
import type { BotContext } from '../command.js';
import { currentDmConversation } from './dm-conversation.js';
import { explainError } from '../explain-error.js';
import { followSpeaker } from '../voice/follow-speaker.js';
import { consume } from '../interactions.js';
import { KeyedLock } from '../keyed-lock.js';
import { inputsOf, isVoiceMessage } from './message-inputs.js';
import type { Place } from './places.js';
import { replyChannelOf } from '../replies/reply-channel.js';
import { VoiceReplies } from '../voice/voice-reply.js';

/** Who answers a message, and in which conversation; undefined when nobody should. */
interface Turn {
  conversationId: string;
  /** Who answers (or would, for a message kept as context). */
  character: CharacterRecord;
  /** Messages in a channel that address nobody are only kept (listening) or left alone. */
  answer: boolean;
  /** The text as the character reads it: a mention of the bot taken out. */
  text: string;
  /** Whether several characters speak here (the bot's own posts then name who speaks). */
  several: boolean;
}

/**
 * Messages people write where characters speak: conversation threads and DMs, where every
 * message is answered, and channels with characters (/channel characters), where a message is
 * answered by the character it addresses (name, mention, reply) and otherwise kept as context
 * when the channel listens. Each is a chat message from the writer's account; images and audio
 * (voice messages, transcribed by the core) come along, and the reply streams in the same place,
 * as the character itself where webhooks allow.
 */
export function createMessageHandler(context: BotContext, limiter: RateLimiterAbstract, messagesPerMinute: number) {
  /** Users told they are too fast, so the notice is sent once per burst, not per message. */
  const warned = new Set<string>();
  const voiceReplies = new VoiceReplies(context.core.speech, context.logger);
  /** Conversations told why a voice reply could not be sent, so it is said once, not under every reply. */
  const voiceExplained = new Set<string>();

  /** Messages of each channel are taken (checked, downloaded, transcribed, stored) one at a time, in the order they came. */
  const intake = new KeyedLock();

  /**
   * Everything up to storing the message: undefined when it is not one to answer (or was only
   * kept as context), its failure when it could not be taken.
   */
  async function take(message: Message): Promise<Taken | { failure: unknown } | undefined> {
    const inDm = message.guildId === null;
    const place = inDm ? undefined : await context.places.of(message.channelId);
    if (!inDm && !place) return undefined;
    // A voice channel's chat is where the people of a call write to each other (links, "brb"):
    // the call is spoken, so nothing typed there is answered, kept or makes its writer a
    // speaker of the call. A link left there by calls of earlier versions is not a thread either.
    if (place?.kind === 'call' || (place?.kind === 'thread' && message.channel.isVoiceBased())) return undefined;
    try {
      const turn = place ? await turnIn(context, message, place) : undefined;
      // A channel message that addresses nobody, where nothing is kept: not ours at all.
      if (place?.kind === 'channel' && !turn?.answer && !place.listen) return undefined;
      if (turn && !turn.answer) {
        await keepAsContext(context, limiter, messagesPerMinute, message, turn);
        return undefined;
      }
      try {
        await consume(limiter, message.author.id, messagesPerMinute);
        warned.delete(message.author.id);
      } catch (error) {
        if (warned.has(message.author.id)) return undefined;
        warned.add(message.author.id);
        throw error;
      }
      const { actor, account } = await context.accountOf(message.author);
      const conversationId =
        turn?.conversationId ??
        (await currentDmConversation(context, message.author.id, account, (id, greeting) => context.runner.greet(id, greeting, replyChannelOf(message.channel))));
      // Anyone writing in a thread or a character channel joins its conversation as a speaker.
      if (place) await context.core.conversations.addSpeaker(adminActor, conversationId, account.id);
      const inputs = await inputsOf(message, context.core.chat, turn?.text ?? message.content);
      // A recording takes a while to write down: show that someone is on it meanwhile.
      if (inputs.some((input) => 'audio' in input) && message.channel.isSendable()) {
        message.channel.sendTyping().catch((error: unknown) => context.logger.debug({ err: error, channelId: message.channelId }, 'typing indicator failed'));
      }
      const last = (await context.runner.store(actor, conversationId, inputs)).at(-1);
      return last === undefined ? undefined : { actor, conversationId, messageId: last.id, turn };
    } catch (error) {
      return { failure: error };
    }
  }

  return async (message: Message): Promise<void> => {
    // Our characters' own words first: a webhook message's author has `bot: true` too, but the
    // rule must not hang on that. Then other bots and other webhooks, never answered either.
    if (context.replies.isOwnPersonaMessage(message)) return;
    if (message.author.bot || message.system) return;
    // Asked for before anything is awaited, so the channel's messages are taken in the order
    // they came: a typed message right after a voice message waits for its transcription, and
    // the two are stored, and answered, in order. The replies stream outside it.
    const taken = await intake.run(message.channelId, () => take(message));
    if (taken === undefined) return;
    const log = { userId: message.author.id, channelId: message.channelId, messageId: message.id };
    try {
      if ('failure' in taken) throw taken.failure;
      const { actor, conversationId, messageId, turn } = taken;
      const voiceReply = isVoiceMessage(message) && (await context.links.voiceReplies(conversationId));
      const speakSentence = turn && message.inGuild() ? await followSpeaker(context, message.guild, message.channelId, turn.character) : undefined;
      // In a DM the conversation's own character answers, as the bot: nothing to look up first.
      const channel = turn ? context.replies.channelFor(message.channel, turn.character, { several: turn.several }) : replyChannelOf(message.channel);
      const written = await context.runner.answerStored(actor, conversationId, messageId, channel, { characterId: turn?.character.id, onSentence: speakSentence });
      if (voiceReply && written && message.channel.isSendable()) {
        const character = turn?.character ?? (await context.core.characters.get(adminActor, written.characterId));
        const outcome = await voiceReplies.send({ channel: message.channel, character, text: written.text, replyTo: message.id });
        if (outcome.kind !== 'sent') {
          context.logger.info({ ...log, conversationId, outcome: outcome.kind }, 'no voice reply');
          if (!voiceExplained.has(conversationId)) {
            voiceExplained.add(conversationId);
            await message.reply({ content: `🔇 ${outcome.reason}`, allowedMentions: { parse: [] } }).catch(() => undefined);
          }
        }
      }
    } catch (error) {
      context.logger[error instanceof AppError ? 'info' : 'error']({ ...log, err: error }, 'message not answered');
      await message.reply({ content: `⚠️ ${explainError(error)}`, allowedMentions: { parse: [] } }).catch(() => undefined);
    }
  };
}

/** A message taken: stored in its conversation, to be answered. */
interface Taken {
  actor: Actor;
  conversationId: string;
  messageId: string;
  turn: Turn | undefined;
}

/**
 * Keeps a message that addresses nobody in a listening channel as context. Nobody asked the bot
 * anything, so nothing is said back whatever happens: past the writer's limit it is dropped, and
 * a failure is only logged. It has a budget of its own (the same size as the writer's), so
 * talking with people never uses up what they may ask the characters. Its words and pictures are
 * kept; audio is not transcribed, a cost nobody asked for.
 */
async function keepAsContext(context: BotContext, limiter: RateLimiterAbstract, messagesPerMinute: number, message: Message, turn: Turn): Promise<void> {
  try {
    await consume(limiter, `context:${message.author.id}`, messagesPerMinute);
    const { actor, account } = await context.accountOf(message.author);
    const inputs = await inputsOf(message, context.core.chat, turn.text, { audio: false });
    if (inputs.length === 0) return;
    await context.core.conversations.addSpeaker(adminActor, turn.conversationId, account.id);
    // Kept as context, never learned from (memory-scope.ts, rule 7): nobody told a character anything.
    for (const input of inputs) await context.core.chat.post(actor, turn.conversationId, input, { asContext: true });
  } catch (error) {
    context.logger.info({ err: error, userId: message.author.id, channelId: message.channelId, messageId: message.id }, 'message not kept as context');
  }
}

/**
 * Who answers a message in a thread or channel: the character it addresses among those
 * present; in a thread, otherwise the one the conversation is with. In a channel a message
 * addressing nobody gets no answer, and a mention of the bot without a name goes to the
 * channel's first character.
 */
async function turnIn(context: BotContext, message: Message, place: Exclude<Place, { kind: 'call' }>): Promise<Turn | undefined> {
  // A thread's characters are its conversation's (its own first); a channel's, its cast.
  const ids = place.kind === 'channel' ? place.characterIds : (await context.core.conversations.get(adminActor, place.conversationId)).characterIds;
  const characters = await existingCharacters(context.core, ids);
  const first = characters[0];
  if (!first) return undefined;
  const referenced = message.reference?.messageId;
  const repliedToCharacterId = referenced ? await context.channels.characterOfMessage(referenced) : undefined;
  const botUserId = message.client.user.id;
  const addressing = addressedCharacter({ content: message.content, botUserId, repliedToCharacterId }, characters);
  const character = characters.find((each) => each.id === addressing?.characterId) ?? first;
  const turn = { conversationId: place.conversationId, character, answer: true, text: withoutBotMention(message.content, botUserId), several: characters.length > 1 };
  if (place.kind === 'thread') return turn;
  if (!addressing) return { ...turn, answer: false };
  // A channel's characters join its conversation the first time they speak there (a no-op after).
  await context.core.conversations.addCharacter(adminActor, place.conversationId, character.id, { greet: false });
  return turn;
}
