import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Actor, accountActor, actsFor, adminActor } from './actor.js';
import type { Characters } from './characters.js';
import { AppError, ValidationError, notFound } from './errors.js';
import { keys } from './keys.js';
import type { Ledger } from './ledger.js';
import type { Clock, IdGenerator, Store } from './ports.js';
import type { AccountRecord, ApiKeyRecord } from './records.js';

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

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly ledger: Ledger,
    private readonly characters: Characters,
    private readonly options: { startingBalance: number; adminApiKey: string | undefined },
  ) {
    this.#adminKeyHash = options.adminApiKey === undefined ? undefined : hashKey(options.adminApiKey);
  }

  /** Creates an account with its own character and starting credits; returns its first API key. */
  async create(actor: Actor, input: NewAccount): Promise<{ account: AccountRecord; apiKey: string }> {
    requireAdmin(actor);
    if (!usernamePattern.test(input.username)) {
      throw ValidationError.field('username', 'must be 2 to 32 letters, digits, dots, dashes or underscores');
    }
    if (input.referredByAccountId && !(await this.store.get(keys.account(input.referredByAccountId)))) {
      throw ValidationError.field('referredByAccountId', `account ${input.referredByAccountId} does not exist`);
    }
    return this.store.withLock('usernames', async () => {
      if (await this.store.get(keys.accountByUsername(input.username))) {
        throw new AppError('USERNAME_TAKEN', `The username "${input.username}" is taken; choose another.`);
      }
      const accountId = this.ids.uuid();
      const character = await this.characters.createFor(accountId, input.username);
      const account: AccountRecord = {
        id: accountId,
        createdMillis: this.clock.nowMillis(),
        username: input.username,
        isVerified: false,
        isDisabled: false,
        isSubscribed: false,
        meta: { dateOfBirth: input.dateOfBirth ?? null, referredByAccountId: input.referredByAccountId ?? null },
        tags: input.tags ?? [],
        characterId: character.id,
        profilePictureUrl: input.profilePictureUrl ?? null,
      };
      await this.store.set(keys.account(accountId), account);
      if (this.options.startingBalance > 0) {
        await this.ledger.credit(accountId, this.options.startingBalance, 'starting balance');
      }
      const apiKey = await this.#issueKey(accountId);
      // The username index and the listing come last: a crash before them leaves no visible half-made account.
      await this.store.set(keys.accountByUsername(input.username), accountId);
      await this.store.append(keys.accounts(), () => accountId);
      return { account, apiKey };
    });
  }

  async get(actor: Actor, accountId: string): Promise<AccountRecord> {
    const account = actsFor(actor, accountId) ? await this.store.get<AccountRecord>(keys.account(accountId)) : undefined;
    if (!account) throw notFound('Account', accountId);
    return account;
  }

  /** The admin sees every account, a page at a time; an account sees only itself. */
  async list(actor: Actor, page: { limit: number; cursor?: string | undefined }): Promise<Page<AccountRecord>> {
    if (actor.type === 'account') {
      return { items: [await this.get(actor, actor.accountId)], nextCursor: null };
    }
    const bounds = await this.store.bounds(keys.accounts());
    const start = page.cursor === undefined ? bounds.start : decodeCursor(page.cursor);
    const end = Math.min(start + page.limit, bounds.end);
    const accountIds = await this.store.range<string>(keys.accounts(), start, end);
    const accounts = await this.store.getMany<AccountRecord>(accountIds.map((id) => keys.account(id)));
    return {
      items: accounts.filter((account): account is AccountRecord => account !== undefined),
      nextCursor: end < bounds.end ? String(end) : null,
    };
  }

  /** Replaces the account with `change(current)`; `change` builds a new record (records are frozen). */
  async update(actor: Actor, accountId: string, change: (account: AccountRecord) => AccountRecord): Promise<AccountRecord> {
    return this.store.withLock(keys.account(accountId), async () => {
      const account = await this.get(actor, accountId);
      const updated = change(account);
      await this.store.set(keys.account(accountId), updated);
      return updated;
    });
  }

  /** Issues a new API key for the account and revokes its earlier keys. */
  async rotateKey(actor: Actor, accountId: string): Promise<string> {
    await this.get(actor, accountId);
    return this.store.withLock(`api-keys:${accountId}`, () => this.#issueKey(accountId));
  }

  /** Turns a bearer token into an actor, or throws `UNAUTHORIZED` / `ACCOUNT_DISABLED`. */
  async authenticate(token: string): Promise<Actor> {
    const hash = hashKey(token);
    if (this.#adminKeyHash && timingSafeEqual(hash, this.#adminKeyHash)) return adminActor;
    const record = await this.store.get<ApiKeyRecord>(keys.apiKey(hash.toString('hex')));
    if (!record) throw new AppError('UNAUTHORIZED', 'The API key is not valid. Check the Authorization: Bearer header.');
    const account = await this.store.get<AccountRecord>(keys.account(record.accountId));
    if (!account) throw new AppError('UNAUTHORIZED', 'The API key belongs to no account.');
    if (account.isDisabled) throw new AppError('ACCOUNT_DISABLED', 'This account is disabled.');
    return accountActor(account.id);
  }

  async #issueKey(accountId: string): Promise<string> {
    const apiKey = `lk_${randomBytes(32).toString('base64url')}`;
    const hash = hashKey(apiKey).toString('hex');
    const previous = (await this.store.get<string[]>(keys.apiKeysOf(accountId))) ?? [];
    await this.store.set<ApiKeyRecord>(keys.apiKey(hash), { accountId, createdMillis: this.clock.nowMillis() });
    await this.store.set(keys.apiKeysOf(accountId), [hash]);
    await Promise.all(previous.map((old) => this.store.delete(keys.apiKey(old))));
    return apiKey;
  }
}

export function requireAdmin(actor: Actor): void {
  if (actor.type !== 'admin') throw new AppError('FORBIDDEN', 'Only the admin API key may do this.');
}

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

function decodeCursor(cursor: string): number {
  const index = Number(cursor);
  if (!Number.isSafeInteger(index) || index < 0) throw ValidationError.field('cursor', 'is not a cursor this API gave out');
  return index;
}
