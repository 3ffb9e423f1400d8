import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { AppError } from '../../src/core/errors.js';
import { Ledger } from '../../src/core/ledger.js';
import { openStore } from '../../src/store/create-keyv.js';
import type { KeyvStore } from '../../src/store/keyv-store.js';

describe('Ledger on the SQLite store', () => {
  let directory: string;
  let store: KeyvStore;
  let ledger: Ledger;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-ledger-'));
    store = await openStore(`sqlite://${path.join(directory, 'store.sqlite')}`);
    ledger = new Ledger(store, createSystemClock(), createRandomIds());
  });
  afterAll(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('derives the balance from credits, debits and refunds', async () => {
    await ledger.credit('alice', 10, 'start');
    const debit = await ledger.debit('alice', 4, 'image');
    expect(await ledger.balance('alice')).toBe(6);
    await ledger.refund(debit.id, 'image failed');
    expect(await ledger.balance('alice')).toBe(10);
    const kinds = (await ledger.transactions('alice')).map((transaction) => `${transaction.type}:${transaction.amount}`);
    expect(kinds).toEqual(['credit:10', 'debit:4', 'refund:4']);
  });

  it('never overspends under concurrent debits', async () => {
    await ledger.credit('bob', 10, 'start');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => ledger.debit('bob', 1, 'image')));
    const succeeded = results.filter((result) => result.status === 'fulfilled');
    const refused = results.filter((result) => result.status === 'rejected');
    expect(succeeded).toHaveLength(10);
    expect(refused).toHaveLength(40);
    for (const result of refused) {
      expect(((result as PromiseRejectedResult).reason as AppError).code).toBe('BALANCE_INSUFFICIENT');
    }
    expect(await ledger.balance('bob')).toBe(0);
  });

  it('refunds a debit once, even when asked at once', async () => {
    await ledger.credit('carol', 5, 'start');
    const debit = await ledger.debit('carol', 5, 'image');
    const refunds = await Promise.all(Array.from({ length: 5 }, () => ledger.refund(debit.id, 'failed')));
    expect(new Set(refunds.map((refund) => refund.id)).size).toBe(1);
    expect(await ledger.balance('carol')).toBe(5);
  });

  it('derives the same balance in a new process (a fresh ledger over the same file)', async () => {
    await store.close();
    store = await openStore(`sqlite://${path.join(directory, 'store.sqlite')}`);
    const fresh = new Ledger(store, createSystemClock(), createRandomIds());
    expect(await fresh.balance('alice')).toBe(10);
    expect(await fresh.balance('bob')).toBe(0);
    await expect(fresh.debit('bob', 1, 'image')).rejects.toMatchObject({ code: 'BALANCE_INSUFFICIENT' });
  });

  it('refuses amounts that are not positive', async () => {
    await expect(ledger.credit('dave', 0, 'nothing')).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    await expect(ledger.credit('dave', Number.NaN, 'nothing')).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });
});
