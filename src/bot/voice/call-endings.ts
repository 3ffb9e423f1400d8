import type { Logger } from '../../core/ports.js';
import type { TalkSession } from './talk-session.js';

/**
 * Calls that end by someone's command (or fail to start) are told by the command's answer; the
 * others end while nobody asked, so the voice channel's chat hears why.
 */
const toldElsewhere = new Set(['Left with /voice leave.', 'Another call started.', 'The bot is stopping.', 'Could not join the voice channel.']);

/** How a reason reads to the people of the call. */
const said: Record<string, string> = {
  'Everyone left the voice channel.': 'nobody was left in the call',
  'Left after being idle.': 'nothing was said for a while',
  'Listening was forbidden here.': 'a server manager forbade listening here',
  'The voice connection ended.': 'the voice connection was lost',
  'The voice connection dropped.': 'the voice connection was lost',
};

/** Says in the voice channel's chat that a call ended, when no command's answer said so. */
export function announceCallEnd(logger: Logger, session: TalkSession, reason: string): void {
  if (toldElsewhere.has(reason)) return;
  const channel = session.guild.channels.cache.get(session.voiceChannelId);
  if (!channel?.isSendable()) return;
  const why = said[reason] ?? reason;
  const content = `📴 **${session.character.name}** left the call: ${why}. \`/voice talk\` starts a new one.`;
  channel.send({ content, allowedMentions: { parse: [] } }).catch((error: unknown) => logger.info({ err: error, channelId: session.voiceChannelId }, 'could not say in the voice channel chat that the call ended'));
}
