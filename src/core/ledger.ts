import type { Clock, IdGenerator } from './ports.js';
import type { TransactionRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';

/**
 * Balances as a ledger. The database keeps the balance in step with the ledger in the same
 * transaction as every entry, checks a debit against it atomically (no overspending from any
 * number of processes) and refunds a debit at most once.
 */
export class Ledger {
  constructor(
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
  ) {}

  balance(accountId: string): Promise<number> {
    return this.store.ledger.balance(accountId);
  }

  transactions(accountId: string): Promise<TransactionRecord[]> {
    return this.store.ledger.transactions(accountId);
  }

  credit(accountId: string, amount: number, reason: string): Promise<TransactionRecord> {
    return this.store.ledger.credit(this.#entry(accountId, amount, reason));
  }

  /**
   * Takes `amount` from the balance, or throws `BALANCE_INSUFFICIENT` and takes nothing.
   * `reference` names what was paid for (a job id), so a crash right after can be reconciled.
   */
  debit(accountId: string, amount: number, reason: string, reference: string | null = null): Promise<TransactionRecord> {
    return this.store.ledger.debit({ ...this.#entry(accountId, amount, reason), type: 'debit', ...(reference ? { reference } : {}) });
  }

  /** The debit that paid for `reference`, if one was made. */
  debitFor(accountId: string, reference: string): Promise<TransactionRecord | undefined> {
    return this.store.ledger.debitFor(accountId, reference);
  }

  /** Gives a debit back, once: refunding the same debit again returns the first refund. */
  refund(debitId: string, reason: string): Promise<TransactionRecord> {
    // The account and amount are the debit's; the repository reads them with the debit.
    return this.store.ledger.refund({ ...this.#entry('', 1, reason), type: 'refund', refundOf: debitId });
  }

  #entry(accountId: string, amount: number, reason: string): TransactionRecord {
    return { id: this.ids.uuid(), accountId, type: 'credit', amount, reason, createdMillis: this.clock.nowMillis(), refundOf: null };
  }
}
