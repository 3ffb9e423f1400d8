import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { AppError } from '../../src/core/errors.js';
import { Ledger } from '../../src/core/ledger.js';
import { type SqlStore, openSqlStore } from '../../src/store/sql/sql-store.js';
import { newAccountRecords } from '../store/repository-fixtures.js';

describe('Ledger on the SQLite store', () => {
  let directory: string;
  let store: SqlStore;
  let ledger: Ledger;
  /** Account ids by name: the ledger belongs to accounts that exist. */
  const ids = new Map<string, string>();
  const id = (name: string) => ids.get(name)!;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-ledger-'));
    store = await openSqlStore(`sqlite://${path.join(directory, 'likeness.sqlite')}`);
    ledger = new Ledger(store, createSystemClock(), createRandomIds());
    for (const name of ['alice', 'bob', 'carol', 'dave']) {
      const { apiKey: _apiKey, ...records } = newAccountRecords(name, 0);
      ids.set(name, (await store.accounts.create(records)).id);
    }
  });
  afterAll(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('derives the balance from credits, debits and refunds', async () => {
    await ledger.credit(id('alice'), 10, 'start');
    const debit = await ledger.debit(id('alice'), 4, 'image');
    expect(await ledger.balance(id('alice'))).toBe(6);
    await ledger.refund(debit.id, 'image failed');
    expect(await ledger.balance(id('alice'))).toBe(10);
    const kinds = (await ledger.transactions(id('alice'))).map((transaction) => `${transaction.type}:${transaction.amount}`);
    expect(kinds).toEqual(['credit:10', 'debit:4', 'refund:4']);
  });

  it('never overspends under concurrent debits', async () => {
    await ledger.credit(id('bob'), 10, 'start');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => ledger.debit(id('bob'), 1, 'image')));
    const succeeded = results.filter((result) => result.status === 'fulfilled');
    const refused = results.filter((result) => result.status === 'rejected');
    expect(succeeded).toHaveLength(10);
    expect(refused).toHaveLength(40);
    for (const result of refused) {
      expect(((result as PromiseRejectedResult).reason as AppError).code).toBe('BALANCE_INSUFFICIENT');
    }
    expect(await ledger.balance(id('bob'))).toBe(0);
  });

  it('refunds a debit once, even when asked at once', async () => {
    await ledger.credit(id('carol'), 5, 'start');
    const debit = await ledger.debit(id('carol'), 5, 'image');
    const refunds = await Promise.all(Array.from({ length: 5 }, () => ledger.refund(debit.id, 'failed')));
    expect(new Set(refunds.map((refund) => refund.id)).size).toBe(1);
    expect(await ledger.balance(id('carol'))).toBe(5);
  });

  it('derives the same balance in a new process (a fresh ledger over the same file)', async () => {
    await store.close();
    store = await openSqlStore(`sqlite://${path.join(directory, 'likeness.sqlite')}`);
    const fresh = new Ledger(store, createSystemClock(), createRandomIds());
    expect(await fresh.balance(id('alice'))).toBe(10);
    expect(await fresh.balance(id('bob'))).toBe(0);
    await expect(fresh.debit(id('bob'), 1, 'image')).rejects.toMatchObject({ code: 'BALANCE_INSUFFICIENT' });
  });

  it('refuses amounts that are not positive', async () => {
    await expect(ledger.credit(id('dave'), 0, 'nothing')).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    await expect(ledger.credit(id('dave'), Number.NaN, 'nothing')).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });
});
