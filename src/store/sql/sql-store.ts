import { SqlLorebookRepository } from './lorebook-repository.js';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import type { Repositories, RepositoryStore } from '../../core/repositories.js';
import { SqlAccountRepository } from './account-repository.js';
import { SqlCharacterRepository, SqlMemoryRepository } from './character-repository.js';
import { SqlConversationRepository } from './conversation-repository.js';
import { SqlConversationInvitationRepository } from './conversation-invitation-repository.js';
import { SqlJobRepository } from './job-repository.js';
import { type JobSignalListener, PostgresJobSignals, SqlSignalRepository, SqliteJobSignals } from './job-signals.js';
import { SqlFileReleaseRepository } from './file-release-repository.js';
import { SqlSpeechAudioRepository } from './speech-audio-repository.js';
import { SqlLearnedMemoryRepository } from './learned-memory-repository.js';
import { SqlReplyMemoryRepository } from './reply-memory-repository.js';
import { SqlLedgerRepository } from './ledger-repository.js';
import { SqlLearningPerPersonRepository } from './learning-per-person-repository.js';
import { SqlMemoryBatchRepository } from './memory-batch-repository.js';
import { type SqlDialectName, migrateToLatest } from './migrations.js';
import { NodeSqliteDialect } from './node-sqlite-dialect.js';
import type { Database } from './schema.js';
import { type SqlContext, refuseNulText } from './sql-context.js';
import { SqlDiscordChannelRepository } from './discord-channel-repository.js';
import { SqlDiscordVoiceRuleRepository } from './discord-voice-rule-repository.js';
import { SqlDiscordLinkRepository, SqlFaceModelRepository, SqlFactRepository, SqlJobDeliveryRepository } from './small-repositories.js';
import { sharedReadings } from './shared-readings.js';

export interface SqlStoreOptions {
  /** PostgreSQL connections per process. */
  poolSize?: number;
  /** SQLite: how long a writer waits for another process's write lock. */
  busyTimeoutMs?: number;
  /** PostgreSQL: told when an idle pooled connection fails (the pool replaces it); ignored otherwise. */
  onConnectionError?: (error: Error) => void;
  /** SQLite: how often the job signal log is read while someone listens. */
  signalPollMs?: number;
}

/** The repository store over SQL, plus what tests and benchmarks need to see. */
export interface SqlStore extends RepositoryStore {
  readonly dialect: SqlDialectName;
}

/**
 * Opens the store named by `url` and migrates it to the latest schema:
 * `sqlite://data/likeness.db` (relative to the working directory), `sqlite:///abs/path.db`,
 * `sqlite://:memory:`, or `postgres://user@host:port/database`.
 */
export async function openSqlStore(url: string, options: SqlStoreOptions = {}): Promise<SqlStore> {
  const { db, dialect, changeToken } = connect(url, options);
  try {
    await migrateToLatest(db as Kysely<unknown>, dialect);
    const signals = dialect === 'postgres' ? await PostgresJobSignals.open(url) : await SqliteJobSignals.open(db, options.signalPollMs);
    return new KyselyRepositoryStore(db, dialect, signals, changeToken);
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

interface Connected {
  db: Kysely<Database>;
  dialect: SqlDialectName;
  changeToken: () => Promise<string | undefined>;
}

function connect(url: string, options: SqlStoreOptions): Connected {
  if (url.startsWith('sqlite://')) {
    const file = url.slice('sqlite://'.length);
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const dialect = new NodeSqliteDialect({ path: file, ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }) });
    return { db: new Kysely<Database>({ dialect }), dialect: 'sqlite', changeToken: () => dialect.changeToken() };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      // Our bigints are times and counts well inside 2^53: read them as numbers, not strings.
      types: { getTypeParser: (oid: number, format?: string) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format as 'text')) },
    } as pg.PoolConfig);
    // Without a listener an idle connection's failure (a server restart) would crash the process.
    pool.on('error', (error) => options.onConnectionError?.(error));
    return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: refusingNulText(pool) }) }), dialect: 'postgres', changeToken: postgresChangeToken(pool) };
  }
  throw new Error(`The store URL must start with sqlite:// or postgres://; got "${url.split(':')[0]}:…".`);
}

/**
 * The pool as Kysely sees it, each client's queries checked for text holding a NUL first (see
 * `refuseNulText`). One wrapper per client: Kysely keeps a connection per client object.
 */
function refusingNulText(pool: pg.Pool): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = {
          // A streamed query (a cursor) is passed on as it is: the store streams only reads.
          query: ((query: string, parameters?: readonly unknown[]) => {
            if (parameters) refuseNulText(parameters);
            return client.query(query, parameters as unknown[]);
          }) as unknown as PostgresPoolClient['query'],
          release: () => client.release(),
        };
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

/**
 * PostgreSQL's change token: the server's current snapshot (`xmin:xmax:in-progress xids`). Two
 * equal snapshots see exactly the same finished transactions, so nothing was committed in
 * between by any process; a transaction that began or ended anywhere on the server changes it.
 * A reading is one round trip, shared by every ask of a turn of the event loop.
 */
function postgresChangeToken(pool: pg.Pool): () => Promise<string> {
  return sharedReadings(async () => {
    const { rows } = await pool.query<{ snapshot: string }>('SELECT pg_current_snapshot()::text AS snapshot');
    return rows[0]!.snapshot;
  });
}

class KyselyRepositoryStore implements SqlStore {
  readonly accounts;
  readonly characters;
  readonly memories;
  readonly conversations;
  readonly invitations;
  readonly ledger;
  readonly jobs;
  readonly faceModels;
  readonly discordLinks;
  readonly discordChannels;
  readonly discordVoiceRules;
  readonly jobDeliveries;
  readonly facts;
  readonly signals;
  readonly learnedMemories;
  readonly lorebooks;
  readonly memoryBatches;
  readonly learningPerPerson;
  readonly replyMemories;
  readonly fileReleases;
  readonly speechAudio;

  constructor(
    private readonly db: Kysely<Database>,
    readonly dialect: SqlDialectName,
    private readonly signalListener: JobSignalListener,
    readonly changeToken: () => Promise<string | undefined>,
  ) {
    const repositories = repositoriesFor({ db, dialect });
    this.accounts = repositories.accounts;
    this.characters = repositories.characters;
    this.memories = repositories.memories;
    this.conversations = repositories.conversations;
    this.invitations = repositories.invitations;
    this.ledger = repositories.ledger;
    this.jobs = repositories.jobs;
    this.faceModels = repositories.faceModels;
    this.discordLinks = repositories.discordLinks;
    this.discordChannels = repositories.discordChannels;
    this.discordVoiceRules = repositories.discordVoiceRules;
    this.jobDeliveries = repositories.jobDeliveries;
    this.facts = repositories.facts;
    this.signals = repositories.signals;
    this.learnedMemories = repositories.learnedMemories;
    this.lorebooks = repositories.lorebooks;
    this.memoryBatches = repositories.memoryBatches;
    this.learningPerPerson = repositories.learningPerPerson;
    this.replyMemories = repositories.replyMemories;
    this.fileReleases = repositories.fileReleases;
    this.speechAudio = repositories.speechAudio;
  }

  onJobChanged(listener: (jobId: string) => void): () => void {
    return this.signalListener.subscribe(listener);
  }

  /**
   * On SQLite the transaction holds the process's one connection: `work` must use the
   * repositories it is given, never this store, or it waits on itself.
   */
  transaction<T>(work: (repositories: Repositories) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((transaction) => work(repositoriesFor({ db: transaction, dialect: this.dialect })));
  }

  async close(): Promise<void> {
    await this.signalListener.close();
    await this.db.destroy();
  }
}

function repositoriesFor(context: SqlContext): Repositories {
  return {
    accounts: new SqlAccountRepository(context),
    characters: new SqlCharacterRepository(context),
    memories: new SqlMemoryRepository(context),
    conversations: new SqlConversationRepository(context),
    invitations: new SqlConversationInvitationRepository(context),
    ledger: new SqlLedgerRepository(context),
    jobs: new SqlJobRepository(context),
    faceModels: new SqlFaceModelRepository(context),
    discordLinks: new SqlDiscordLinkRepository(context),
    discordChannels: new SqlDiscordChannelRepository(context),
    discordVoiceRules: new SqlDiscordVoiceRuleRepository(context),
    jobDeliveries: new SqlJobDeliveryRepository(context),
    facts: new SqlFactRepository(context),
    signals: new SqlSignalRepository(context),
    learnedMemories: new SqlLearnedMemoryRepository(context),
    memoryBatches: new SqlMemoryBatchRepository(context),
    learningPerPerson: new SqlLearningPerPersonRepository(context),
    lorebooks: new SqlLorebookRepository(context),
    replyMemories: new SqlReplyMemoryRepository(context),
    fileReleases: new SqlFileReleaseRepository(context),
    speechAudio: new SqlSpeechAudioRepository(context),
  };
}
