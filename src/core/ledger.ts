import { AppError, ValidationError, notFound } from './errors.js';
import { keys } from './keys.js';
import type { Clock, IdGenerator, Store } from './ports.js';
import type { TransactionRecord, TransactionType } from './records.js';

/**
 * Balances as a ledger. The balance is never stored: it is the sum of an account's
 * transactions. A debit checks and appends under the account's lock, so concurrent debits
 * in this process can never spend the same credit twice.
 */
export class Ledger {
  /** Derived balances of accounts whose ledger this process has read, kept in step with appends. */
  readonly #balances = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
  ) {}

  async balance(accountId: string): Promise<number> {
    const known = this.#balances.get(accountId);
    if (known !== undefined) return known;
    const transactions = await this.store.range<TransactionRecord>(keys.ledger(accountId));
    const total = transactions.reduce((sum, transaction) => sum + signedAmount(transaction), 0);
    this.#balances.set(accountId, total);
    return total;
  }

  async transactions(accountId: string): Promise<TransactionRecord[]> {
    return this.store.range<TransactionRecord>(keys.ledger(accountId));
  }

  credit(accountId: string, amount: number, reason: string): Promise<TransactionRecord> {
    return this.store.withLock(keys.ledger(accountId), () => this.#append(accountId, 'credit', amount, reason, null));
  }

  /**
   * Takes `amount` from the balance, or throws `BALANCE_INSUFFICIENT` and takes nothing.
   * `reference` names what was paid for (a job id), so a crash right after can be reconciled.
   */
  debit(accountId: string, amount: number, reason: string, reference: string | null = null): Promise<TransactionRecord> {
    return this.store.withLock(keys.ledger(accountId), async () => {
      const balance = await this.balance(accountId);
      if (balance < amount) {
        throw new AppError(
          'BALANCE_INSUFFICIENT',
          `This needs ${amount} credits and the balance is ${balance}. Ask an admin to add credits.`,
          { details: { balance, required: amount } },
        );
      }
      return this.#append(accountId, 'debit', amount, reason, null, reference);
    });
  }

  /** The debit that paid for `reference`, if one was made. */
  async debitFor(accountId: string, reference: string): Promise<TransactionRecord | undefined> {
    const transactions = await this.transactions(accountId);
    return transactions.findLast((transaction) => transaction.type === 'debit' && transaction.reference === reference);
  }

  /** Gives a debit back, once: refunding the same debit again returns the first refund. */
  refund(debitId: string, reason: string): Promise<TransactionRecord> {
    return this.store.withLock(keys.refundOf(debitId), async () => {
      const location = await this.store.get<{ accountId: string; index: number }>(keys.transaction(debitId));
      if (!location) throw notFound('Transaction', debitId);
      const [debit] = await this.store.range<TransactionRecord>(keys.ledger(location.accountId), location.index, location.index + 1);
      if (!debit || debit.type !== 'debit') {
        throw new AppError('CONFLICT', `Transaction ${debitId} is not a debit and cannot be refunded.`);
      }
      // The marker is written after the refund; a crash between the two is caught by the scan.
      const earlier =
        (await this.store.get<TransactionRecord>(keys.refundOf(debitId))) ??
        (await this.transactions(debit.accountId)).find((transaction) => transaction.refundOf === debitId);
      if (earlier) return earlier;
      const refund = await this.store.withLock(keys.ledger(debit.accountId), () =>
        this.#append(debit.accountId, 'refund', debit.amount, reason, debitId),
      );
      await this.store.set(keys.refundOf(debitId), refund);
      return refund;
    });
  }

  async #append(
    accountId: string,
    type: TransactionType,
    amount: number,
    reason: string,
    refundOf: string | null,
    reference: string | null = null,
  ): Promise<TransactionRecord> {
    if (!Number.isFinite(amount) || amount <= 0) throw ValidationError.field('amount', 'must be a positive number');
    const balance = await this.balance(accountId);
    let index = -1;
    const transaction = await this.store.append<TransactionRecord>(keys.ledger(accountId), (position) => {
      index = position;
      return { id: this.ids.uuid(), accountId, type, amount, reason, createdMillis: this.clock.nowMillis(), refundOf, ...(reference ? { reference } : {}) };
    });
    this.#balances.set(accountId, balance + signedAmount(transaction));
    await this.store.set(keys.transaction(transaction.id), { accountId, index });
    return transaction;
  }
}

function signedAmount(transaction: TransactionRecord): number {
  return transaction.type === 'debit' ? -transaction.amount : transaction.amount;
}
