import type { Selectable } from 'kysely';
import { AppError, notFound } from '../../core/errors.js';
import type { ConversationInvitation, ConversationInvitationRepository } from '../../core/repositories.js';
import type { Database } from './schema.js';
import { type SqlContext, atomic, forUpdate, isForeignKeyViolation } from './sql-context.js';

/** Invitations to speak in a conversation, waiting for the invited account's answer. */
export class SqlConversationInvitationRepository implements ConversationInvitationRepository {
  constructor(private readonly context: SqlContext) {}

  invite(invitation: ConversationInvitation, maxPending: number): Promise<ConversationInvitation> {
    return atomic(this.context.db, async (db) => {
      // The invited account's row lock makes count-then-insert safe against a concurrent invitation.
      const account = await forUpdate(this.context, db.selectFrom('accounts').select('id').where('id', '=', invitation.accountId)).executeTakeFirst();
      if (!account) throw notFound('Account', invitation.accountId);
      const existing = await db
        .selectFrom('conversation_invitations')
        .selectAll()
        .where('conversation_id', '=', invitation.conversationId)
        .where('account_id', '=', invitation.accountId)
        .executeTakeFirst();
      if (existing) return invitationRecord(existing);
      const { count } = await db
        .selectFrom('conversation_invitations')
        .select((expression) => expression.fn.countAll<number>().as('count'))
        .where('account_id', '=', invitation.accountId)
        .executeTakeFirstOrThrow();
      if (Number(count) >= maxPending) {
        throw new AppError('INVITATION_LIMIT_REACHED', `That account already has ${maxPending} conversation invitations waiting; it must accept or decline some before it can be invited again.`, {
          details: { accountId: invitation.accountId, maxPending },
        });
      }
      try {
        await db
          .insertInto('conversation_invitations')
          .values({
            conversation_id: invitation.conversationId,
            account_id: invitation.accountId,
            invited_by_account_id: invitation.invitedByAccountId,
            created_micros: invitation.createdMicros,
          })
          .execute();
      } catch (error) {
        if (isForeignKeyViolation(error)) throw notFound('Conversation', invitation.conversationId);
        throw error;
      }
      return invitation;
    });
  }

  async listFor(accountId: string): Promise<ConversationInvitation[]> {
    const rows = await this.context.db.selectFrom('conversation_invitations').selectAll().where('account_id', '=', accountId).orderBy('created_micros').orderBy('conversation_id').execute();
    return rows.map(invitationRecord);
  }

  accept(conversationId: string, accountId: string, joinedMicros: number): Promise<boolean> {
    return atomic(this.context.db, async (db) => {
      const removed = await db.deleteFrom('conversation_invitations').where('conversation_id', '=', conversationId).where('account_id', '=', accountId).executeTakeFirst();
      if (removed.numDeletedRows === 0n) return false;
      await db
        .insertInto('conversation_speakers')
        .values({ conversation_id: conversationId, account_id: accountId, joined_micros: joinedMicros })
        .onConflict((conflict) => conflict.columns(['conversation_id', 'account_id']).doNothing())
        .execute();
      return true;
    });
  }

  async remove(conversationId: string, accountId: string): Promise<boolean> {
    const result = await this.context.db.deleteFrom('conversation_invitations').where('conversation_id', '=', conversationId).where('account_id', '=', accountId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}

function invitationRecord(row: Selectable<Database['conversation_invitations']>): ConversationInvitation {
  return { conversationId: row.conversation_id, accountId: row.account_id, invitedByAccountId: row.invited_by_account_id, createdMicros: Number(row.created_micros) };
}
