import { adminActor } from '../../core/actor.js';
import type { StoredMessage } from '../../core/repositories.js';
import type { BotContext } from '../command.js';

/**
 * A user's current DM conversation: the one with the character they chose last (their own by
 * default), started when there is none yet. The same rule the message handler answers DMs by,
 * so a setting made here (`/voice replies`) applies to the conversation the next DM goes to.
 */
export async function currentDmConversation(
  context: Pick<BotContext, 'core' | 'links'>,
  discordUserId: string,
  account: { id: string; characterId: string },
  /** Hears the greeting a new conversation opens with, to post it before anything else. */
  onGreeting?: (conversationId: string, greeting: StoredMessage) => Promise<unknown>,
): Promise<string> {
  const characterId = (await context.links.dmCharacter(discordUserId)) ?? account.characterId;
  const known = await context.links.dmConversation(discordUserId, characterId);
  if (known) return known;
  const conversation = await context.core.conversations.create(adminActor, account.id, characterId);
  await context.links.setDmConversation(discordUserId, characterId, conversation.id);
  if (conversation.greeting) await onGreeting?.(conversation.id, conversation.greeting);
  return conversation.id;
}
