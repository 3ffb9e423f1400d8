import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/core/errors.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { hashKey, newAccountRecords, transactionRecord, uniqueUsername } from '../repository-fixtures.js';
import { type ContractContext, outcomes, signed } from './contract-context.js';

/** Accounts, keys and the ledger: usernames, revocation, no overspend, refunds once. */
export function accountsAndLedgerContract(context: ContractContext): void {
  const { createAccount } = context;
  // The stores are opened in the suite's beforeAll; read them when a test runs.
  let store: RepositoryStore;
  let other: RepositoryStore;
  beforeEach(() => {
    store = context.store();
    other = context.other();
  });

  describe('accounts', () => {
    it('creates an account with its character, key and credit, found by any case of its username', async () => {
      const records = newAccountRecords(uniqueUsername('Mixed'), 25);
      await store.accounts.create(records);
      expect(await other.accounts.get(records.account.id)).toEqual(records.account);
      expect((await other.accounts.findByUsername(records.account.username.toUpperCase()))?.id).toBe(records.account.id);
      expect(await other.characters.get(records.character.id)).toEqual(records.character);
      expect(await other.accounts.keyHolder(records.apiKeyHash)).toEqual({ accountId: records.account.id, isDisabled: false });
      expect(await other.ledger.balance(records.account.id)).toBe(25);
    });

    it('takes a username once regardless of case, under concurrent creates from two stores', async () => {
      const base = uniqueUsername('Race');
      const spellings = [base, base.toUpperCase(), base.toLowerCase()];
      const attempts = Array.from({ length: 24 }, (_, index) => newAccountRecords(spellings[index % 3]!, 10));
      const { values, codes } = await outcomes(attempts.map((records, index) => (index % 2 ? other : store).accounts.create(records)));
      expect(values).toHaveLength(1);
      expect(codes).toEqual(Array(23).fill('USERNAME_TAKEN'));
      // A refused create leaves nothing behind: no character, key or credit.
      for (const refused of attempts.filter((records) => records.account.id !== values[0]!.id)) {
        expect(await store.characters.get(refused.character.id)).toBeUndefined();
        expect(await store.accounts.keyHolder(refused.apiKeyHash)).toBeUndefined();
        expect(await store.ledger.transactions(refused.account.id)).toEqual([]);
      }
    });

    it('lists accounts in creation order, a page at a time', async () => {
      const created = [await createAccount('page'), await createAccount('page'), await createAccount('page')];
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let guard = 0; guard < 1000; guard++) {
        const page = await store.accounts.list({ limit: 2, cursor });
        seen.push(...page.items.map((account) => account.id));
        if (page.nextCursor === null) break;
        cursor = page.nextCursor;
      }
      const ids = created.map((records) => records.account.id);
      expect(seen.filter((id) => ids.includes(id))).toEqual(ids);
    });

    it('updates an account but never its username', async () => {
      const records = await createAccount('update');
      await store.accounts.update({ ...records.account, username: 'ignored', isDisabled: true, tags: ['a', 'b'] });
      const read = await other.accounts.get(records.account.id);
      expect(read).toMatchObject({ username: records.account.username, isDisabled: true, tags: ['a', 'b'] });
      // Authentication sees the change from the other store at once.
      expect(await other.accounts.keyHolder(records.apiKeyHash)).toEqual({ accountId: records.account.id, isDisabled: true });
    });

    it('revokes the old key at once for every store when a key is rotated', async () => {
      const records = await createAccount('rotate');
      expect((await other.accounts.keyHolder(records.apiKeyHash))?.accountId).toBe(records.account.id);
      const next = hashKey(`lk_${randomUUID()}`);
      await store.accounts.rotateApiKey(records.account.id, next, Date.now());
      expect(await other.accounts.keyHolder(records.apiKeyHash)).toBeUndefined();
      expect((await other.accounts.keyHolder(next))?.accountId).toBe(records.account.id);
    });
  });

  describe('ledger', () => {
    it('never overspends: 50 concurrent debits of 1 against 10 from two stores, exactly 10 succeed', async () => {
      const { account } = await createAccount('debits', 10);
      const debits = Array.from({ length: 50 }, (_, index) =>
        (index % 2 ? other : store).ledger.debit(transactionRecord(account.id, 'debit', 1, 'image', { reference: `job-${index}` })),
      );
      const { values, codes } = await outcomes(debits);
      expect(values).toHaveLength(10);
      expect(codes).toEqual(Array(40).fill('BALANCE_INSUFFICIENT'));
      expect(await store.ledger.balance(account.id)).toBe(0);
      const ledger = await other.ledger.transactions(account.id);
      expect(ledger.reduce((sum, transaction) => sum + signed(transaction), 0)).toBe(0);
      expect(ledger.filter((transaction) => transaction.type === 'debit')).toHaveLength(10);
    });

    it('refuses a debit above the balance with the balance in the details', async () => {
      const { account } = await createAccount('short', 3);
      const error = await store.ledger.debit(transactionRecord(account.id, 'debit', 5, 'training')).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: 'BALANCE_INSUFFICIENT', details: { balance: 3, required: 5 } });
      expect(await store.ledger.transactions(account.id)).toHaveLength(1);
    });

    it('refunds a debit once, however many refunds race', async () => {
      const { account } = await createAccount('refund', 10);
      const debit = await store.ledger.debit(transactionRecord(account.id, 'debit', 4, 'image', { reference: 'job-refund' }));
      expect((await other.ledger.debitFor(account.id, 'job-refund'))?.id).toBe(debit.id);
      const refunds = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          (index % 2 ? other : store).ledger.refund(transactionRecord(account.id, 'refund', 4, 'failed', { refundOf: debit.id })),
        ),
      );
      expect(new Set(refunds.map((refund) => refund.id)).size).toBe(1);
      expect(await store.ledger.balance(account.id)).toBe(10);
      const ledger = await store.ledger.transactions(account.id);
      expect(ledger.map((transaction) => transaction.type)).toEqual(['credit', 'debit', 'refund']);
      expect(ledger.reduce((sum, transaction) => sum + signed(transaction), 0)).toBe(10);
    });

    it('refuses to refund what is not a debit, or does not exist', async () => {
      const { account, startingCredit } = await createAccount('norefund', 10);
      const credit = transactionRecord(account.id, 'refund', 1, 'x', { refundOf: startingCredit!.id });
      await expect(store.ledger.refund(credit)).rejects.toMatchObject({ code: 'CONFLICT' });
      await expect(store.ledger.refund({ ...credit, refundOf: randomUUID() })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(store.ledger.credit(transactionRecord(account.id, 'credit', 0, 'zero'))).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    });

    it('keeps the balance equal to the ledger under mixed concurrent credits, debits and refunds', async () => {
      const { account } = await createAccount('mixed', 20);
      const debits = await Promise.all(
        Array.from({ length: 10 }, () => store.ledger.debit(transactionRecord(account.id, 'debit', 2, 'image'))),
      );
      await Promise.all([
        ...debits.map((debit, index) => (index % 2 ? other : store).ledger.refund(transactionRecord(account.id, 'refund', 2, 'r', { refundOf: debit.id }))),
        ...Array.from({ length: 10 }, (_, index) => (index % 2 ? store : other).ledger.credit(transactionRecord(account.id, 'credit', 3, 'gift'))),
        ...Array.from({ length: 10 }, () => other.ledger.debit(transactionRecord(account.id, 'debit', 1, 'image')).catch(() => undefined)),
      ]);
      const ledger = await store.ledger.transactions(account.id);
      expect(await other.ledger.balance(account.id)).toBe(ledger.reduce((sum, transaction) => sum + signed(transaction), 0));
      expect(await store.ledger.balance(account.id)).toBeGreaterThanOrEqual(0);
    });
  });
}
