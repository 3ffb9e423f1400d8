import type { DiscordChannelRepository } from '../../core/repositories.js';
import type { ConversationLinks } from './conversation-links.js';

/**
 * A server place with a conversation: a conversation thread (opened by /chat), where every
 * message is answered; a channel where characters speak (/channel characters), where only
 * messages that address one of them are; or a voice channel while a call is held in it
 * (/voice talk), whose chat answers no message (the call is spoken) but takes /scene for the call.
 */
export type Place =
  | { kind: 'thread'; conversationId: string }
  | { kind: 'channel'; conversationId: string; listen: boolean; characterIds: string[] }
  | { kind: 'call'; conversationId: string };

export class Places {
  constructor(
    private readonly links: ConversationLinks,
    private readonly channels: DiscordChannelRepository,
    /** The conversation of the call held in a voice channel now, if any. */
    private readonly callIn: (channelId: string) => string | undefined = () => undefined,
  ) {}

  /** The place a guild channel or thread is, or undefined where characters do not speak. */
  async of(channelId: string): Promise<Place | undefined> {
    const call = this.callIn(channelId);
    if (call) return { kind: 'call', conversationId: call };
    const [link, channel] = await Promise.all([this.links.forChannel(channelId), this.channels.get(channelId)]);
    if (link) return { kind: 'thread', conversationId: link.conversationId };
    if (channel && channel.characterIds.length > 0) {
      return { kind: 'channel', conversationId: channel.conversationId, listen: channel.listen, characterIds: channel.characterIds };
    }
    return undefined;
  }
}
