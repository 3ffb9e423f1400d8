/**
 * Where a conversation happens, read from what the store knows of it: a Discord thread or DM
 * (its link), a character channel (the channel holding it), or neither (the API). The rules of
 * what that means for memories are `placeOf` (memory-scope.ts); learning and recall both ask here.
 */
import { type Place, placeOf } from '../memory-scope.js';
import type { RepositoryStore } from '../repositories.js';

export async function conversationPlace(store: RepositoryStore, conversationId: string, speakerAccountIds: readonly string[]): Promise<Place> {
  const [link, channelGuildId] = await Promise.all([store.discordLinks.forConversation(conversationId), store.discordChannels.guildOfConversation(conversationId)]);
  // A character channel is a server's, however few people talk there.
  const discord = link ? { guildId: link.guildId } : channelGuildId !== undefined ? { guildId: channelGuildId } : undefined;
  return placeOf({ conversationId, speakerAccountIds, discord });
}
