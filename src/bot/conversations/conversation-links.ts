import type { DiscordChannelLink, DiscordLinkRepository } from '../../core/repositories.js';

/** Where a conversation lives on Discord; `guildId` null for a DM. */
export type ChannelLink = DiscordChannelLink;

/**
 * The stored mapping between Discord threads (and DMs) and conversations, so old threads keep
 * working after a restart (and in every process), and the character a user chose for their DMs.
 */
export class ConversationLinks {
  constructor(private readonly links: DiscordLinkRepository) {}

  forChannel(channelId: string): Promise<ChannelLink | undefined> {
    return this.links.forChannel(channelId);
  }

  forConversation(conversationId: string): Promise<ChannelLink | undefined> {
    return this.links.forConversation(conversationId);
  }

  link(link: ChannelLink): Promise<void> {
    return this.links.link(link);
  }

  /** Users who hear the character's replies in this thread spoken in their voice channel. */
  followers(channelId: string): Promise<string[]> {
    return this.links.followers(channelId);
  }

  /** Turns following on or off for a user in a thread; returns whether it is now on. */
  async setFollowing(channelId: string, discordUserId: string, on: boolean): Promise<boolean> {
    await this.links.setFollowing(channelId, discordUserId, on);
    return on;
  }

  /** Whether the character answers voice messages in this conversation by voice message. */
  voiceReplies(conversationId: string): Promise<boolean> {
    return this.links.voiceReplies(conversationId);
  }

  /** Turns voice-message replies on or off for a conversation; returns whether they are now on. */
  async setVoiceReplies(conversationId: string, on: boolean): Promise<boolean> {
    await this.links.setVoiceReplies(conversationId, on);
    return on;
  }

  dmCharacter(discordUserId: string): Promise<string | undefined> {
    return this.links.dmCharacter(discordUserId);
  }

  chooseDmCharacter(discordUserId: string, characterId: string): Promise<void> {
    return this.links.chooseDmCharacter(discordUserId, characterId);
  }

  /** A user's DM conversation with one character: switching characters and back resumes it. */
  dmConversation(discordUserId: string, characterId: string): Promise<string | undefined> {
    return this.links.dmConversation(discordUserId, characterId);
  }

  setDmConversation(discordUserId: string, characterId: string, conversationId: string): Promise<void> {
    return this.links.setDmConversation(discordUserId, characterId, conversationId);
  }
}
