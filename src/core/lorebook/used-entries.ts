/**
 * Which lorebook entries a stored reply was written with. Only the character's owner (or the
 * admin) may see them: a lorebook can hold what the character keeps from the people it talks to.
 */
import type { Actor } from '../actor.js';
import { chosenAlternative } from '../chat.js';
import type { Conversations } from '../conversations.js';
import { AppError, notFound } from '../errors.js';
import type { RepositoryStore } from '../repositories.js';
import type { LorebookEntry } from './lorebook.js';

export class LorebookUse {
  constructor(
    private readonly store: RepositoryStore,
    private readonly conversations: Conversations,
  ) {}

  /**
   * The entries reply `messageId` used, in the order they were let in, as the book holds them
   * now (an entry deleted since is left out). The caller must be able to read the conversation
   * and own the character that wrote the reply; a person's message used none.
   */
  async usedBy(actor: Actor, conversationId: string, messageId: string): Promise<LorebookEntry[]> {
    await this.conversations.get(actor, conversationId);
    const reply = await this.conversations.find(conversationId, messageId);
    if (!reply) throw notFound('Message', messageId);
    if (reply.participantType !== 'character') return [];
    const character = await this.store.characters.get(reply.participantId);
    if (!character) return [];
    if (actor.type === 'account' && actor.accountId !== character.accountId) {
      throw new AppError('FORBIDDEN', `Only the owner of character "${character.name}" can see which lorebook entries its replies used.`);
    }
    // Those of the alternative the message shows now: each was written with its own.
    const ids = await this.store.lorebooks.usedBy(messageId, chosenAlternative(reply).id);
    if (ids.length === 0) return [];
    const entries = new Map((await this.store.lorebooks.get(character.id)).entries.map((entry) => [entry.id, entry]));
    return ids.flatMap((id) => entries.get(id) ?? []);
  }
}
