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
const followersKey = (channelId: string) => `discord-voice-followers:${channelId}`;
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

  /** Users who hear the character's replies in this thread spoken in their voice channel. */
  async followers(channelId: string): Promise<string[]> {
    return (await this.store.get<string[]>(followersKey(channelId))) ?? [];
  }

  /** Turns following on or off for a user in a thread; returns whether it is now on. */
  setFollowing(channelId: string, discordUserId: string, on: boolean): Promise<boolean> {
    return this.store.withLock(followersKey(channelId), async () => {
      const current = await this.followers(channelId);
      const next = on ? [...new Set([...current, discordUserId])] : current.filter((id) => id !== discordUserId);
      await this.store.set(followersKey(channelId), next);
      return on;
    });
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
