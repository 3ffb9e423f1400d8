import type { Actor } from './actor.js';
import type { Conversations } from './conversations.js';
import { AppError, ValidationError, notFound } from './errors.js';
import type { Clock } from './ports.js';
import type { ConversationRecord } from './records.js';
import type { ConversationInvitation, RepositoryStore } from './repositories.js';

/** How many invitations one account may have waiting: nobody's list fills by others' hands. */
export const maxPendingInvitations = 50;

/** What asking to add an account came to: it joined (itself, or by the admin), or it was invited. */
export type SpeakerAdded = { joined: ConversationRecord } | { invited: ConversationInvitation };

/**
 * Who speaks in a conversation, with their consent (issue 28): a person becomes a speaker only
 * by their own act (writing where the conversation is, through the bot; or accepting an
 * invitation), never because someone knew their account id. A speaker invites; the invited
 * person accepts or declines. Anyone may leave; the person who opened the conversation may take
 * others out, and stays.
 */
export class ConversationSpeakers {
  constructor(
    private readonly store: RepositoryStore,
    private readonly conversations: Conversations,
    private readonly clock: Clock,
  ) {}

  /**
   * Asks for `accountId` to speak in the conversation: the admin adds anyone (the bot adds a
   * person who wrote there); an account naming itself joins by accepting its invitation
   * (`NOT_FOUND` without one); a speaker naming someone else invites them (at most
   * `maxPendingInvitations` waiting per person, `INVITATION_LIMIT_REACHED` then). One already
   * speaking is left as is.
   */
  async add(actor: Actor, conversationId: string, accountId: string): Promise<SpeakerAdded> {
    if (actor.type === 'admin') return { joined: await this.conversations.addSpeaker(actor, conversationId, accountId) };
    if (actor.accountId === accountId) return { joined: await this.#accept(actor, conversationId) };
    const conversation = await this.conversations.get(actor, conversationId);
    if (conversation.speakerAccountIds.includes(accountId)) return { joined: conversation };
    if (!(await this.store.accounts.get(accountId))) throw ValidationError.field('accountId', `account ${accountId} does not exist`);
    const invitation = { conversationId, accountId, invitedByAccountId: actor.accountId, createdMicros: this.clock.nowMicros() };
    return { invited: await this.store.invitations.invite(invitation, maxPendingInvitations) };
  }

  async #accept(actor: Actor & { type: 'account' }, conversationId: string): Promise<ConversationRecord> {
    const speaking = await this.conversations.get(actor, conversationId).catch((error: unknown) => {
      if (error instanceof AppError && error.code === 'NOT_FOUND') return undefined;
      throw error;
    });
    if (speaking) return speaking;
    if (!(await this.store.invitations.accept(conversationId, actor.accountId, this.clock.nowMicros()))) throw notFound('Conversation', conversationId);
    return this.conversations.get(actor, conversationId);
  }

  /** The invitations waiting for `accountId` (the actor itself, or any for the admin), oldest first. */
  async invitations(actor: Actor, accountId: string): Promise<ConversationInvitation[]> {
    if (actor.type === 'account' && actor.accountId !== accountId) throw notFound('Account', accountId);
    return this.store.invitations.listFor(accountId);
  }

  /**
   * Takes back an invitation: the invited person declines it, or a speaker withdraws it.
   * `NOT_FOUND` when there is none the actor may see.
   */
  async uninvite(actor: Actor, conversationId: string, accountId: string): Promise<void> {
    if (actor.type === 'account' && actor.accountId !== accountId) await this.conversations.get(actor, conversationId);
    if (!(await this.store.invitations.remove(conversationId, accountId))) throw notFound('Invitation', `${conversationId}/${accountId}`);
  }

  /**
   * Takes a person out of the conversation; their messages stay. They may leave themselves, the
   * person who opened it may take anyone out (`FORBIDDEN` for others), and the opener stays
   * (`CONVERSATION_OWNER_REQUIRED`). Answers the conversation as it is after.
   */
  async remove(actor: Actor, conversationId: string, accountId: string): Promise<ConversationRecord> {
    const conversation = await this.conversations.get(actor, conversationId);
    if (!conversation.speakerAccountIds.includes(accountId)) return conversation;
    if (accountId === conversation.accountId) {
      throw new AppError('CONVERSATION_OWNER_REQUIRED', 'This account opened the conversation and stays in it. Clear it to delete its messages, or take the others out.', {
        details: { accountId },
      });
    }
    if (actor.type === 'account' && actor.accountId !== accountId && actor.accountId !== conversation.accountId) {
      throw new AppError('FORBIDDEN', 'Only the person who opened this conversation may take others out of it; anyone may leave it.', { details: { accountId } });
    }
    await this.store.conversations.removeSpeaker(conversationId, accountId);
    return { ...conversation, speakerAccountIds: conversation.speakerAccountIds.filter((id) => id !== accountId) };
  }

  /** A speaker taken out (see `remove`) or, for any other id, a character taken out of the scene (`Conversations.removeCharacter`). */
  async removeParticipant(actor: Actor, conversationId: string, participantId: string): Promise<ConversationRecord> {
    const conversation = await this.conversations.get(actor, conversationId);
    if (conversation.speakerAccountIds.includes(participantId)) return this.remove(actor, conversationId, participantId);
    return this.conversations.removeCharacter(actor, conversationId, participantId);
  }
}
