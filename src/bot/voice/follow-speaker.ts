import type { Guild } from 'discord.js';
import type { CharacterRecord } from '../../core/records.js';
import type { BotContext } from '../command.js';

/**
 * When someone follows a thread or channel (/voice follow) and is in a voice channel, a reply
 * there is also spoken in the answering character's voice, sentence by sentence as it streams:
 * a reply to a message, `/scene next` and 🔄 alike. Undefined when nobody would hear it.
 */
export async function followSpeaker(context: BotContext, guild: Guild, channelId: string, character: CharacterRecord): Promise<((sentence: string) => void) | undefined> {
  const speech = context.core.speech;
  // A voice call holds the guild's voice; a thread's replies are not spoken over it.
  if (!speech || !character.ttsVoiceId || context.talk.holds(guild.id)) return undefined;
  const followers = await context.links.followers(channelId);
  const voiceChannelId = followers.map((userId) => guild.voiceStates.cache.get(userId)?.channelId).find((id) => id);
  if (!voiceChannelId) return undefined;
  return (sentence) => {
    // A call may have started while the reply was being written: its voice is not taken over.
    if (context.talk.holds(guild.id)) {
      context.logger.info({ guildId: guild.id, channelId }, 'a followed reply sentence not spoken: a voice call holds the voice');
      return;
    }
    context.voice.play(guild, voiceChannelId, () => speech.streamAs(character, sentence)).catch((error: unknown) => {
      context.logger.warn({ err: error, channelId }, 'could not speak a reply sentence');
    });
  };
}
