/**
 * Who is asking. The admin may do everything; an account acts as itself. Front ends
 * authenticate and hand the core an actor; the core decides what the actor may do.
 */
export type Actor = { type: 'admin' } | { type: 'account'; accountId: string };

export const adminActor: Actor = Object.freeze({ type: 'admin' });

export function accountActor(accountId: string): Actor {
  return { type: 'account', accountId };
}

/** True when the actor is the admin or the account `accountId` itself. */
export function actsFor(actor: Actor, accountId: string): boolean {
  return actor.type === 'admin' || actor.accountId === accountId;
}
