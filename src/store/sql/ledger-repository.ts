import { type Selectable, sql } from 'kysely';
import { AppError, ValidationError, notFound } from '../../core/errors.js';
import type { LedgerRepository } from '../../core/repositories.js';
import type { TransactionRecord, TransactionType } from '../../core/records.js';
import { type SqlContext, atomic } from './sql-context.js';
import type { Database, LedgerTransactionsTable } from './schema.js';

/**
 * The ledger, with the balance kept as a column of the account. Every ledger row is written
 * in the same transaction as the balance change it implies, so the balance is one primary-key
 * read (no SUM over the history) and always equals the sum of the ledger. A debit is a single
 * conditional UPDATE (`balance >= amount`): PostgreSQL row-locks the account and re-checks the
 * condition after any concurrent debit commits; SQLite runs it under its one write lock.
 */
export class SqlLedgerRepository implements LedgerRepository {
  constructor(private readonly context: SqlContext) {}

  async balance(accountId: string): Promise<number> {
    const row = await this.context.db.selectFrom('accounts').select('balance').where('id', '=', accountId).executeTakeFirst();
    if (!row) throw notFound('Account', accountId);
    return Number(row.balance);
  }

  async transactions(accountId: string): Promise<TransactionRecord[]> {
    const rows = await this.context.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('position')
      .execute();
    return rows.map(transactionRecord);
  }

  async credit(transaction: TransactionRecord): Promise<TransactionRecord> {
    checkAmount(transaction.amount);
    return atomic(this.context.db, async (db) => {
      const result = await db
        .updateTable('accounts')
        .set({ balance: sql`balance + ${transaction.amount}` })
        .where('id', '=', transaction.accountId)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw notFound('Account', transaction.accountId);
      await db.insertInto('ledger_transactions').values(transactionRow({ ...transaction, type: 'credit', refundOf: null })).execute();
      return { ...transaction, type: 'credit', refundOf: null };
    });
  }

  async debit(transaction: TransactionRecord): Promise<TransactionRecord> {
    checkAmount(transaction.amount);
    return atomic(this.context.db, async (db) => {
      const result = await db
        .updateTable('accounts')
        .set({ balance: sql`balance - ${transaction.amount}` })
        .where('id', '=', transaction.accountId)
        .where('balance', '>=', transaction.amount)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) {
        const balance = await new SqlLedgerRepository({ ...this.context, db }).balance(transaction.accountId);
        throw new AppError(
          'BALANCE_INSUFFICIENT',
          `This needs ${transaction.amount} credits and the balance is ${balance}. Ask an admin to add credits.`,
          { details: { balance, required: transaction.amount } },
        );
      }
      const debit: TransactionRecord = { ...transaction, type: 'debit', refundOf: null };
      await db.insertInto('ledger_transactions').values(transactionRow(debit)).execute();
      return debit;
    });
  }

  async debitFor(accountId: string, reference: string): Promise<TransactionRecord | undefined> {
    const row = await this.context.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('reference', '=', reference)
      .where('type', '=', 'debit')
      .orderBy('position', 'desc')
      .executeTakeFirst();
    return row && transactionRecord(row);
  }

  /** The refund's account and amount are the debit's; its id, reason and time are the caller's. */
  async refund(refund: TransactionRecord): Promise<TransactionRecord> {
    const debitId = refund.refundOf;
    if (debitId === null) throw ValidationError.field('refundOf', 'must name the debit to refund');
    return atomic(this.context.db, async (db) => {
      const debitRow = await db.selectFrom('ledger_transactions').selectAll().where('id', '=', debitId).executeTakeFirst();
      if (!debitRow) throw notFound('Transaction', debitId);
      if (debitRow.type !== 'debit') throw new AppError('CONFLICT', `Transaction ${debitId} is not a debit and cannot be refunded.`);
      const record: TransactionRecord = { ...refund, type: 'refund', accountId: debitRow.account_id, amount: Number(debitRow.amount) };
      // The unique refund_of makes a second refund (in any process) insert nothing.
      const inserted = await db
        .insertInto('ledger_transactions')
        .values(transactionRow(record))
        .onConflict((conflict) => conflict.column('refund_of').doNothing())
        .executeTakeFirst();
      if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) {
        const earlier = await db.selectFrom('ledger_transactions').selectAll().where('refund_of', '=', debitId).executeTakeFirstOrThrow();
        return transactionRecord(earlier);
      }
      await db
        .updateTable('accounts')
        .set({ balance: sql`balance + ${record.amount}` })
        .where('id', '=', record.accountId)
        .execute();
      return record;
    });
  }
}

function checkAmount(amount: number): void {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw ValidationError.field('amount', 'must be a positive whole number');
}

export function transactionRow(transaction: TransactionRecord): Omit<LedgerTransactionsTable, 'position'> {
  return {
    id: transaction.id,
    account_id: transaction.accountId,
    type: transaction.type,
    amount: transaction.amount,
    reason: transaction.reason,
    created_millis: transaction.createdMillis,
    refund_of: transaction.refundOf,
    reference: transaction.reference ?? null,
  };
}

function transactionRecord(row: Selectable<Database['ledger_transactions']>): TransactionRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    type: row.type as TransactionType,
    amount: Number(row.amount),
    reason: row.reason,
    createdMillis: Number(row.created_millis),
    refundOf: row.refund_of,
    reference: row.reference,
  };
}
