import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Actor, accountActor, actsFor, adminActor } from './actor.js';
import type { Characters } from './characters.js';
import { AppError, ValidationError, notFound } from './errors.js';
import type { Ledger } from './ledger.js';
import type { Clock, IdGenerator } from './ports.js';
import type { AccountRecord, TransactionRecord } from './records.js';
import { ChangeTokenMemo } from './change-token-memo.js';
import type { RepositoryStore } from './repositories.js';

export interface NewAccount {
  username: string;
  dateOfBirth?: string | null;
  referredByAccountId?: string | null;
  profilePictureUrl?: string | null;
  tags?: string[];
}

export interface Page<T> {
  items: T[];
  /** Pass back to get the next page; null on the last page. */
  nextCursor: string | null;
}

export const usernamePattern = /^[A-Za-z0-9_.-]{2,32}$/;

/** Accounts, their API keys and their own character. */
export class Accounts {
  readonly #adminKeyHash: Buffer | undefined;
  /** Who holds each key, while nothing in the database changed (every request asks). */
  readonly #keyHolders: ChangeTokenMemo<{ accountId: string; isDisabled: boolean } | undefined>;

  constructor(
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly characters: Characters,
    private readonly ledger: Ledger,
    private readonly options: { startingBalance: number; adminApiKey: string | undefined },
  ) {
    this.#adminKeyHash = options.adminApiKey === undefined ? undefined : hashKey(options.adminApiKey);
    this.#keyHolders = new ChangeTokenMemo(() => store.changeToken(), { max: 10_000 });
  }

  /** Creates an account with its own character and starting credits; returns its first API key. */
  async create(actor: Actor, input: NewAccount): Promise<{ account: AccountRecord; apiKey: string }> {
    requireAdmin(actor);
    if (!usernamePattern.test(input.username)) {
      throw ValidationError.field('username', 'must be 2 to 32 letters, digits, dots, dashes or underscores');
    }
    if (input.referredByAccountId && !(await this.store.accounts.get(input.referredByAccountId))) {
      throw ValidationError.field('referredByAccountId', `account ${input.referredByAccountId} does not exist`);
    }
    const accountId = this.ids.uuid();
    const character = await this.characters.newCharacterFor(accountId, input.username);
    const createdMillis = this.clock.nowMillis();
    const account: AccountRecord = {
      id: accountId,
      createdMillis,
      username: input.username,
      isVerified: false,
      isDisabled: false,
      isSubscribed: false,
      meta: { dateOfBirth: input.dateOfBirth ?? null, referredByAccountId: input.referredByAccountId ?? null },
      tags: input.tags ?? [],
      characterId: character.id,
      profilePictureUrl: input.profilePictureUrl ?? null,
    };
    const apiKey = newApiKey();
    const { startingBalance } = this.options;
    // One transaction: the unique index on lower(username) refuses a taken name in any process.
    const created = await this.store.accounts.create({
      account,
      character,
      apiKeyHash: hashKey(apiKey).toString('hex'),
      startingCredit:
        startingBalance > 0
          ? { id: this.ids.uuid(), accountId, type: 'credit', amount: startingBalance, reason: 'starting balance', createdMillis, refundOf: null }
          : null,
    });
    return { account: created, apiKey };
  }

  async get(actor: Actor, accountId: string): Promise<AccountRecord> {
    const account = actsFor(actor, accountId) ? await this.store.accounts.get(accountId) : undefined;
    if (!account) throw notFound('Account', accountId);
    return account;
  }

  /** The admin sees every account, a page at a time; an account sees only itself. */
  async list(actor: Actor, page: { limit: number; cursor?: string | undefined }): Promise<Page<AccountRecord>> {
    if (actor.type === 'account') {
      return { items: [await this.get(actor, actor.accountId)], nextCursor: null };
    }
    return this.store.accounts.list(page);
  }

  /** Replaces the account with `change(current)`; `change` builds a new record (records are frozen). */
  async update(actor: Actor, accountId: string, change: (account: AccountRecord) => AccountRecord): Promise<AccountRecord> {
    if (!actsFor(actor, accountId)) throw notFound('Account', accountId);
    // Read and written in one transaction, so a concurrent change is not lost.
    return this.store.transaction(async ({ accounts }) => {
      const account = await accounts.get(accountId);
      if (!account) throw notFound('Account', accountId);
      return accounts.update(change(account));
    });
  }

  /** Issues a new API key for the account and revokes its earlier keys. */
  async rotateKey(actor: Actor, accountId: string): Promise<string> {
    await this.get(actor, accountId);
    const apiKey = newApiKey();
    // Every process reads keys from the database, so the old key stops working everywhere at once.
    await this.store.accounts.rotateApiKey(accountId, hashKey(apiKey).toString('hex'), this.clock.nowMillis());
    return apiKey;
  }

  /** The account's balance, for the account itself or the admin. */
  async balance(actor: Actor, accountId: string): Promise<number> {
    const account = await this.get(actor, accountId);
    return this.ledger.balance(account.id);
  }

  /** The account's transactions, oldest first, for the account itself or the admin. */
  async transactions(actor: Actor, accountId: string): Promise<TransactionRecord[]> {
    const account = await this.get(actor, accountId);
    return this.ledger.transactions(account.id);
  }

  /** Adds credits: the admin only (a Discord bot owner acts as the admin), checked here for every front end. */
  async credit(actor: Actor, accountId: string, amount: number, reason: string): Promise<{ transaction: TransactionRecord; balance: number }> {
    requireAdmin(actor);
    const account = await this.get(actor, accountId);
    const transaction = await this.ledger.credit(account.id, amount, reason);
    return { transaction, balance: await this.ledger.balance(account.id) };
  }

  /** Turns a bearer token into an actor, or throws `UNAUTHORIZED` / `ACCOUNT_DISABLED`. */
  async authenticate(token: string): Promise<Actor> {
    const hash = hashKey(token);
    if (this.#adminKeyHash && timingSafeEqual(hash, this.#adminKeyHash)) return adminActor;
    const keyHash = hash.toString('hex');
    const holder = await this.#keyHolders.get(keyHash, () => this.store.accounts.keyHolder(keyHash));
    if (!holder) throw new AppError('UNAUTHORIZED', 'The API key is not valid. Check the Authorization: Bearer header.');
    if (holder.isDisabled) throw new AppError('ACCOUNT_DISABLED', 'This account is disabled.');
    return accountActor(holder.accountId);
  }
}

export function requireAdmin(actor: Actor): void {
  if (actor.type !== 'admin') throw new AppError('FORBIDDEN', 'Only the admin API key may do this.');
}

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

function newApiKey(): string {
  return `lk_${randomBytes(32).toString('base64url')}`;
}
