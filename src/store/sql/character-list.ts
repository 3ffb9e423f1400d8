import { sql } from 'kysely';
import { ValidationError } from '../../core/errors.js';
import type { CharacterListOptions, CharacterPage } from '../../core/repositories.js';
import { afterEveryName, characterRecord, escapeLike } from './character-repository.js';
import type { SqlContext } from './sql-context.js';

/** Where a page stopped: which part of the list (own, then public), and the last name and id. */
interface ListPosition {
  part: 'own' | 'public';
  name: string;
  id: string;
}

/**
 * Characters page by page, keyset-paged on (name_lower, id) so a page is one indexed, LIMITed
 * query however deep it is: the caller's own (by the (account_id, name_lower) index), then,
 * with a query, public ones of others by an index range on name_lower.
 */
export async function listCharacters(context: SqlContext, options: CharacterListOptions): Promise<CharacterPage> {
  const limit = Math.max(1, Math.min(options.limit, 200));
  const needle = options.publicQuery?.trim().toLowerCase();
  const from = options.cursor === undefined ? undefined : readCursor(options.cursor);
  const { db } = context;

  const page: Awaited<ReturnType<typeof ownQuery>> = [];
  if (from === undefined || from.part === 'own') {
    page.push(...(await ownQuery(limit + 1)));
  }
  if (needle !== undefined && page.length <= limit) {
    page.push(...(await publicQuery(needle, limit + 1 - page.length)));
  }
  const more = page.length > limit;
  const rows = page.slice(0, limit);
  const last = rows.at(-1);
  const nextCursor =
    more && last ? writeCursor({ part: last.account_id === options.accountId ? 'own' : 'public', name: last.name_lower, id: last.id }) : null;
  return { characters: rows.map(characterRecord), nextCursor };

  function ownQuery(count: number) {
    let query = db
      .selectFrom('characters')
      .selectAll()
      .where('account_id', '=', options.accountId)
      .where('deleted_micros', 'is', null)
      .orderBy('name_lower')
      .orderBy('id')
      .limit(count);
    if (needle) query = query.where(sql<boolean>`name_lower like ${`%${escapeLike(needle)}%`} escape '\\'`);
    if (from?.part === 'own') query = query.where(sql<boolean>`(name_lower, id) > (${from.name}, ${from.id})`);
    return query.execute();
  }

  function publicQuery(prefix: string, count: number) {
    let query = db
      .selectFrom('characters')
      .selectAll()
      .where('name_lower', '>=', prefix)
      .where('name_lower', '<', prefix + afterEveryName)
      .where('is_public', '=', 1)
      .where('account_id', '<>', options.accountId)
      .where('deleted_micros', 'is', null)
      .orderBy('name_lower')
      .orderBy('id')
      .limit(count);
    if (from?.part === 'public') query = query.where(sql<boolean>`(name_lower, id) > (${from.name}, ${from.id})`);
    return query.execute();
  }
}

function writeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([position.part, position.name, position.id])).toString('base64url');
}

function readCursor(cursor: string): ListPosition {
  try {
    const [part, name, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[];
    if ((part === 'own' || part === 'public') && typeof name === 'string' && typeof id === 'string') return { part, name, id };
  } catch {
    // Falls through to the one answer for any cursor we did not give out.
  }
  throw ValidationError.field('query.cursor', 'is not a cursor this API gave out');
}
