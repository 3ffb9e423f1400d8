import { type Selectable, sql } from 'kysely';
import { AppError, notFound } from '../../core/errors.js';
import type { AccountRepository, NewAccountRecords } from '../../core/repositories.js';
import type { AccountRecord } from '../../core/records.js';
import { characterRow } from './character-repository.js';
import { transactionRow } from './ledger-repository.js';
import { PreparedQuery, type SqlContext, atomic, isUniqueViolation, toJson } from './sql-context.js';
import type { AccountsTable, Database } from './schema.js';

/** Accounts and their API keys. Username uniqueness is the index on lower(username). */
export class SqlAccountRepository implements AccountRepository {
  constructor(private readonly context: SqlContext) {}

  create({ account, character, apiKeyHash, startingCredit }: NewAccountRecords): Promise<AccountRecord> {
    return atomic(this.context.db, async (db) => {
      try {
        await db
          .insertInto('accounts')
          .values({ ...accountRow(account), balance: startingCredit?.amount ?? 0 })
          .execute();
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw new AppError('USERNAME_TAKEN', `The username "${account.username}" is taken; choose another.`, { cause: error });
        }
        throw error;
      }
      await db.insertInto('characters').values(characterRow(character)).execute();
      await db.insertInto('api_keys').values({ key_hash: apiKeyHash, account_id: account.id, created_millis: account.createdMillis }).execute();
      if (startingCredit) await db.insertInto('ledger_transactions').values(transactionRow(startingCredit)).execute();
      return account;
    });
  }

  async get(accountId: string): Promise<AccountRecord | undefined> {
    const row = await this.context.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
    return row && accountRecord(row);
  }

  async findByUsername(username: string): Promise<AccountRecord | undefined> {
    const row = await this.context.db
      .selectFrom('accounts')
      .selectAll()
      .where(sql`lower(username)`, '=', username.toLowerCase())
      .executeTakeFirst();
    return row && accountRecord(row);
  }

  async list(page: { limit: number; cursor?: string | undefined }): Promise<{ items: AccountRecord[]; nextCursor: string | null }> {
    const after = page.cursor === undefined ? 0 : Number(page.cursor);
    if (!Number.isSafeInteger(after) || after < 0) throw new AppError('VALIDATION_FAILED', 'cursor: is not a cursor this API gave out');
    const rows = await this.context.db
      .selectFrom('accounts')
      .selectAll()
      .where('position', '>', after)
      .orderBy('position')
      .limit(page.limit + 1)
      .execute();
    const items = rows.slice(0, page.limit);
    const last = items.at(-1);
    return { items: items.map(accountRecord), nextCursor: rows.length > page.limit && last ? String(last.position) : null };
  }

  async update(account: AccountRecord): Promise<AccountRecord> {
    const { id, username, character_id, ...fields } = accountRow(account);
    const result = await this.context.db.updateTable('accounts').set(fields).where('id', '=', id).executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw notFound('Account', id);
    return (await this.get(id)) ?? account;
  }

  async keyHolder(keyHash: string): Promise<{ accountId: string; isDisabled: boolean } | undefined> {
    // Read from the database every time: a key revoked by another process fails here at once.
    const [row] = await keyHolderByHash.run(this.context, keyHash);
    return row && { accountId: row.id, isDisabled: row.is_disabled === 1 };
  }

  rotateApiKey(accountId: string, keyHash: string, createdMillis: number): Promise<void> {
    return atomic(this.context.db, async (db) => {
      await db.deleteFrom('api_keys').where('account_id', '=', accountId).execute();
      await db.insertInto('api_keys').values({ key_hash: keyHash, account_id: accountId, created_millis: createdMillis }).execute();
    });
  }
}

/** Every API request's lookup, so prepared once. */
const keyHolderByHash = new PreparedQuery(1, (db, keyHash) =>
  db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select(['accounts.id', 'accounts.is_disabled'])
    .where('api_keys.key_hash', '=', keyHash),
);

function accountRow(account: AccountRecord): Omit<AccountsTable, 'position' | 'balance'> {
  return {
    id: account.id,
    username: account.username,
    created_millis: account.createdMillis,
    is_verified: account.isVerified ? 1 : 0,
    is_disabled: account.isDisabled ? 1 : 0,
    is_subscribed: account.isSubscribed ? 1 : 0,
    date_of_birth: account.meta.dateOfBirth,
    referred_by_account_id: account.meta.referredByAccountId,
    tags: toJson(account.tags),
    character_id: account.characterId,
    profile_picture_url: account.profilePictureUrl,
  };
}

export function accountRecord(row: Selectable<Database['accounts']>): AccountRecord {
  return {
    id: row.id,
    createdMillis: row.created_millis,
    username: row.username,
    isVerified: row.is_verified === 1,
    isDisabled: row.is_disabled === 1,
    isSubscribed: row.is_subscribed === 1,
    meta: { dateOfBirth: row.date_of_birth, referredByAccountId: row.referred_by_account_id },
    tags: JSON.parse(row.tags) as string[],
    characterId: row.character_id,
    profilePictureUrl: row.profile_picture_url,
  };
}
