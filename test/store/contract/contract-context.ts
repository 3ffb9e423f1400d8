import { AppError } from '../../../src/core/errors.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import type { TransactionRecord } from '../../../src/core/records.js';
import type { newAccountRecords } from '../repository-fixtures.js';

/** What each part of the contract gets: two stores on one database, and a way to make an account. */
export interface ContractContext {
  store(): RepositoryStore;
  /** A second pool on the same database, as another process would hold. */
  other(): RepositoryStore;
  createAccount(prefix?: string, balance?: number): Promise<ReturnType<typeof newAccountRecords>>;
}

/** Settles every promise and splits the outcomes, keeping the error codes. */
export async function outcomes<T>(promises: Array<Promise<T>>): Promise<{ values: T[]; codes: string[] }> {
  const results = await Promise.allSettled(promises);
  const values: T[] = [];
  const codes: string[] = [];
  for (const result of results) {
    if (result.status === 'fulfilled') values.push(result.value);
    else codes.push(result.reason instanceof AppError ? result.reason.code : String(result.reason));
  }
  return { values, codes };
}

export function signed(transaction: TransactionRecord): number {
  return transaction.type === 'debit' ? -transaction.amount : transaction.amount;
}
