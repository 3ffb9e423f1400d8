import type { Store } from '../core/ports.js';

/** Where a conversation lives on Discord. */
export interface ChannelLink {
  conversationId: string;
  channelId: string;
  /** Null for a DM. */
  guildId: string | null;
}

const channelKey = (channelId: string) => `discord-channel:${channelId}`;
const conversationKey = (conversationId: string) => `discord-conversation:${conversationId}`;
const dmCharacterKey = (discordUserId: string) => `discord-dm-character:${discordUserId}`;
const dmConversationKey = (discordUserId: string, characterId: string) => `discord-dm-conversation:${discordUserId}:${characterId}`;

/**
 * The stored mapping between Discord threads (and DMs) and conversations, so old threads keep
 * working after a restart, and the character a user chose for their DMs.
 */
export class ConversationLinks {
  constructor(private readonly store: Store) {}

  forChannel(channelId: string): Promise<ChannelLink | undefined> {
    return this.store.get<ChannelLink>(channelKey(channelId));
  }

  forConversation(conversationId: string): Promise<ChannelLink | undefined> {
    return this.store.get<ChannelLink>(conversationKey(conversationId));
  }

  async link(link: ChannelLink): Promise<void> {
    await this.store.set(channelKey(link.channelId), link);
    await this.store.set(conversationKey(link.conversationId), link);
  }

  dmCharacter(discordUserId: string): Promise<string | undefined> {
    return this.store.get<string>(dmCharacterKey(discordUserId));
  }

  async chooseDmCharacter(discordUserId: string, characterId: string): Promise<void> {
    await this.store.set(dmCharacterKey(discordUserId), characterId);
  }

  /** A user's DM conversation with one character: switching characters and back resumes it. */
  dmConversation(discordUserId: string, characterId: string): Promise<string | undefined> {
    return this.store.get<string>(dmConversationKey(discordUserId, characterId));
  }

  async setDmConversation(discordUserId: string, characterId: string, conversationId: string): Promise<void> {
    await this.store.set(dmConversationKey(discordUserId, characterId), conversationId);
  }
}
