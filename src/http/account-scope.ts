import type { Actor } from '../core/actor.js';
import { AppError, ValidationError } from '../core/errors.js';

/**
 * The account a request acts for. An account key acts for its own account: naming another
 * (`?accountId=`, a body's `accountId`) is refused with 403 rather than silently ignored, so
 * a client never mistakes its own data for someone else's. The admin key must name one.
 */
export function accountInScope(actor: Actor, named: string | undefined, field: string): string {
  if (actor.type === 'account') {
    if (named !== undefined && named !== actor.accountId) {
      throw new AppError('FORBIDDEN', `An account key acts only for its own account: leave out ${field} or name your own account.`);
    }
    return actor.accountId;
  }
  if (!named) throw ValidationError.field(field, 'is required with the admin key');
  return named;
}
