import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import KeyvPostgres from '@keyv/postgres';
import KeyvRedis from '@keyv/redis';
import KeyvSqlite from '@keyv/sqlite';
import Keyv from 'keyv';
import { AppError } from '../core/errors.js';
import { KeyvStore, type KeyvStoreOptions } from './keyv-store.js';

/** URL schemes `createKeyv` understands, each backed by keyv's own adapter. */
export const supportedStoreSchemes = ['sqlite', 'redis', 'rediss', 'postgres', 'postgresql'] as const;

export interface CreateKeyvOptions {
  /** Prefix of every key, so tests and services can share one Redis database. Default `likeness`. */
  namespace?: string;
  /** Table holding the records (SQLite and PostgreSQL). Default `keyv`. */
  table?: string;
  /** How long start-up waits for the store's first answer, in milliseconds. Default 10 000. */
  connectTimeoutMs?: number;
  /** Receives errors the adapter reports outside a call, such as a dropped connection. */
  onError?: (error: unknown) => void;
}

const defaultNamespace = 'likeness';
const defaultConnectTimeoutMs = 10_000;
/** Neither adapter quotes table names in its SQL, so only plain identifiers are allowed. */
const tablePattern = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Opens a Keyv over the store at `storeUrl` and makes one round trip, so an unreachable or
 * misconfigured store fails start-up with a message naming it instead of failing the first
 * request. Every adapter is set to throw: a swallowed write would look like success.
 */
export async function createKeyv(storeUrl: string, options: CreateKeyvOptions = {}): Promise<Keyv> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(storeUrl)?.[1]?.toLowerCase();
  const table = options.table ?? 'keyv';
  if (!tablePattern.test(table)) {
    throw new AppError('NOT_CONFIGURED', `Store table "${table}" must be a plain SQL identifier.`);
  }
  const namespace = options.namespace ?? defaultNamespace;
  const timeoutMs = options.connectTimeoutMs ?? defaultConnectTimeoutMs;
  let keyv: Keyv;
  switch (scheme) {
    case 'sqlite':
      keyv = await openSqlite(storeUrl, table, namespace);
      break;
    case 'redis':
    case 'rediss': {
      const adapter = new KeyvRedis(storeUrl, {
        namespace,
        throwOnErrors: true,
        throwOnConnectError: true,
        connectionTimeout: timeoutMs,
      });
      // Redis prefixes keys itself (`namespace::key`); keyv adding its own would double it.
      keyv = new Keyv(adapter, { namespace, useKeyPrefix: false, throwOnErrors: true });
      break;
    }
    case 'postgres':
    case 'postgresql':
      keyv = new Keyv(openPostgres(storeUrl, table, timeoutMs), { namespace, throwOnErrors: true });
      break;
    default:
      throw new AppError(
        'NOT_CONFIGURED',
        `Store URL ${redact(storeUrl)} has an unsupported scheme; use one of ${supportedStoreSchemes.map((name) => `${name}://`).join(', ')}.`,
      );
  }
  // Redis retries until the timeout and then throws a generic "not connected"; the reasons
  // (ECONNREFUSED, a refused password) only arrive as events, so start-up keeps them.
  const reported = new Set<string>();
  keyv.on('error', (error: unknown) => {
    if (reported.size < 5) reported.add(messageOf(error));
    options.onError?.(error);
  });
  try {
    await withTimeout(keyv.get('#probe'), timeoutMs);
  } catch (error) {
    // Bounded: ending a pool whose connection attempt hangs could itself hang start-up.
    await withTimeout(keyv.disconnect(), 1_000).catch(() => undefined);
    const reasons = new Set([...reported, messageOf(error)].filter((text) => text !== ''));
    throw new AppError('NOT_CONFIGURED', `Store ${redact(storeUrl)} is unreachable: ${[...reasons].join('; ')}`, {
      cause: error,
    });
  }
  return keyv;
}

/** `createKeyv` wrapped in a `KeyvStore`: what the service uses as its `Store`. */
export async function openStore(storeUrl: string, options: CreateKeyvOptions & KeyvStoreOptions = {}): Promise<KeyvStore> {
  return new KeyvStore(await createKeyv(storeUrl, options), options);
}

async function openSqlite(storeUrl: string, table: string, namespace: string): Promise<Keyv> {
  const location = storeUrl.slice('sqlite://'.length);
  if (!storeUrl.toLowerCase().startsWith('sqlite://') || location === '') {
    throw new AppError('NOT_CONFIGURED', `SQLite store URL ${storeUrl} needs a path, e.g. sqlite://data/store.sqlite.`);
  }
  const inMemory = location === ':memory:';
  const file = inMemory ? location : path.resolve(location);
  const failed = (error: unknown): AppError =>
    new AppError('NOT_CONFIGURED', `SQLite store ${file} could not be opened: ${messageOf(error)}`, { cause: error });
  if (!inMemory) await mkdir(path.dirname(file), { recursive: true }).catch((error: unknown) => Promise.reject(failed(error)));
  const adapter = new KeyvSqlite({ uri: `sqlite://${file}`, table });
  const keyv = new Keyv(adapter, { namespace, throwOnErrors: true });
  try {
    // In autocommit with the default rollback journal every write is its own fsync'd
    // transaction, which caps appends far below the 2,000/s the service needs. WAL with
    // synchronous=NORMAL fsyncs only at checkpoints: a process crash loses nothing that was
    // committed, a power loss or OS crash may lose the last transactions but never corrupts
    // the file. The busy timeout makes a reader in another process (a backup) wait, not fail.
    const [mode] = (await adapter.query('PRAGMA journal_mode = WAL')) as Array<{ journal_mode?: string }>;
    if (!inMemory && mode?.journal_mode !== 'wal') {
      throw new Error(`SQLite refused WAL (journal_mode is ${mode?.journal_mode ?? 'unknown'})`);
    }
    await adapter.query('PRAGMA synchronous = NORMAL');
    await adapter.query('PRAGMA busy_timeout = 5000');
  } catch (error) {
    await keyv.disconnect().catch(() => undefined);
    throw failed(error);
  }
  // The adapter has no setMany, so keyv would fall back to separate, unordered writes. One
  // multi-row upsert is one transaction: an append's item and bounds land together, in one
  // round trip (about twice the append rate).
  const setMany = async (entries: Array<{ key: string; value: unknown }>): Promise<void> => {
    if (entries.length === 0) return;
    const rows = entries.map(() => '(?, ?)').join(', ');
    const upsert = `INSERT INTO ${adapter.opts.table} (key, value) VALUES ${rows} ON CONFLICT(key) DO UPDATE SET value = excluded.value`;
    await adapter.query(upsert, ...entries.flatMap((entry) => [entry.key, entry.value]));
  };
  Object.assign(adapter, { setMany });
  return keyv;
}

/**
 * @keyv/postgres keeps ONE module-wide pg pool, shared by every adapter with the same URL,
 * and its `disconnect` ends that shared pool. We count the adapters using it and end the pool
 * only when the last one closes; a second, different URL in one process is refused because
 * the module would silently swap the pool under the first.
 */
let postgresUsers = 0;
let postgresUrl: string | undefined;

function openPostgres(storeUrl: string, table: string, timeoutMs: number): KeyvPostgres {
  if (postgresUsers > 0 && postgresUrl !== storeUrl) {
    throw new AppError('NOT_CONFIGURED', 'Only one PostgreSQL store URL can be open per process (@keyv/postgres shares one pool).');
  }
  const watchedPools = new WeakSet<object>();
  const adapter = new KeyvPostgres({
    uri: storeUrl,
    table,
    connectionTimeoutMillis: timeoutMs,
    // pg's pool emits 'error' when an idle connection dies (a server restart); with no listener
    // that crashes the process, and the adapter adds none. pg calls `log` as a method of the
    // pool, which is the one place the adapter lets us reach it.
    log(this: unknown) {
      const pool = this as { on?: (event: 'error', listener: (error: unknown) => void) => unknown } | undefined;
      if (typeof pool?.on !== 'function' || watchedPools.has(pool)) return;
      watchedPools.add(pool);
      pool.on('error', (error) => adapter.emit('error', error));
    },
  });
  postgresUsers += 1;
  postgresUrl = storeUrl;
  const endSharedPool = adapter.disconnect.bind(adapter);
  let released = false;
  adapter.disconnect = async () => {
    if (released) return;
    released = true;
    postgresUsers -= 1;
    if (postgresUsers > 0) return;
    postgresUrl = undefined;
    await endSharedPool();
  };
  return adapter;
}

async function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function messageOf(error: unknown): string {
  if (error === undefined) return '';
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(messageOf).join('; ');
  }
  return error instanceof Error ? error.message : String(error);
}

/** Store URLs carry passwords (`redis://:secret@host`); messages and logs must not. */
function redact(storeUrl: string): string {
  return storeUrl.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@');
}
