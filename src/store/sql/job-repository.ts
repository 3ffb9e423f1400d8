import { type Insertable, type Kysely, type Selectable, type Updateable, sql } from 'kysely';
import { notFound } from '../../core/errors.js';
import type { ClaimOptions, ClaimedJob, JobChange, JobRepository } from '../../core/repositories.js';
import type { JobRecord, JobStatus, JobStatusEntry, JobType } from '../../core/records.js';
import { type SqlContext, atomic, forUpdate, fromJson, fromNullableJson, toJson } from './sql-context.js';
import type { Database, JobsTable } from './schema.js';

const finalStatuses: readonly JobStatus[] = ['SUCCESS', 'FAILED', 'CANCELED'];

/**
 * Jobs as a durable work queue. A worker claims the oldest unsettled job whose lease is free
 * or expired: on PostgreSQL the candidate is read `FOR UPDATE SKIP LOCKED`, so concurrent
 * claimers pass over each other's rows instead of queueing behind them; on SQLite the claim
 * runs under the file's one write lock (BEGIN IMMEDIATE). Either way the lease is then taken
 * by an UPDATE that re-checks it is free, so a job has at most one live holder. A holder that
 * dies stops renewing; once `lease_expires_millis` passes, the next claim takes the job over.
 */
/** The advisory lock that serialises counted claims on PostgreSQL (any constant of our own). */
const claimLockKey = 7_140_001;

export class SqlJobRepository implements JobRepository {
  constructor(private readonly context: SqlContext) {}

  create(job: JobRecord): Promise<JobRecord> {
    return atomic(this.context.db, async (db) => {
      await db.insertInto('jobs').values(jobRow(job)).execute();
      // History is stored oldest first, so positions follow time; read back newest first.
      for (const entry of [...job.statuses].reverse()) await insertStatus(db, job.id, entry);
      return job;
    });
  }

  async get(jobId: string): Promise<JobRecord | undefined> {
    const row = await this.context.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
    return row && jobRecord(row, await this.statuses(jobId));
  }

  async listFor(accountId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ jobs: JobRecord[]; nextCursor: string | null }> {
    let query = this.context.db
      .selectFrom('jobs')
      .selectAll()
      .where('account_id', '=', accountId)
      // A job is the caller's once it is charged.
      .where('transaction_id', 'is not', null)
      .orderBy('position', 'desc')
      .limit(page.limit + 1);
    if (page.cursor !== undefined) query = query.where('position', '<', Number(page.cursor));
    const rows = await query.execute();
    const shown = rows.slice(0, page.limit);
    const history = await this.#statusesOf(shown.map((row) => row.id));
    const last = shown.at(-1);
    return {
      jobs: shown.map((row) => jobRecord(row, history.get(row.id) ?? [])),
      nextCursor: rows.length > page.limit && last ? String(last.position) : null,
    };
  }

  async census(): Promise<{ counts: Array<{ type: JobType; status: JobStatus; count: number }>; waiting: number }> {
    const db = this.context.db;
    const [rows, waiting] = await Promise.all([
      db.selectFrom('jobs').select(['type', 'status', (expression) => expression.fn.countAll<number>().as('count')]).groupBy(['type', 'status']).execute(),
      db
        .selectFrom('jobs')
        .select((expression) => expression.fn.countAll<number>().as('count'))
        .where(sql<boolean>`settled = 0`)
        .where('status', '=', 'CREATED')
        .where('lease_owner', 'is', null)
        .executeTakeFirstOrThrow(),
    ]);
    return {
      counts: rows.map((row) => ({ type: row.type as JobType, status: row.status as JobStatus, count: Number(row.count) })),
      waiting: Number(waiting.count),
    };
  }

  async deleteUncharged(jobId: string): Promise<boolean> {
    const result = await this.context.db.deleteFrom('jobs').where('id', '=', jobId).where('transaction_id', 'is', null).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  claim(options: ClaimOptions): Promise<ClaimedJob | undefined> {
    if (options.types.length === 0) return Promise.resolve(undefined);
    return atomic(this.context.db, async (db) => {
      const types = options.limits ? await this.#typesWithRoom(db, options.types, options.limits, options.nowMillis) : options.types;
      if (types.length === 0) return undefined;
      let candidates = db
        .selectFrom('jobs')
        .select('id')
        // Written literally so PostgreSQL matches the partial index `WHERE settled = 0`.
        .where(sql<boolean>`settled = 0`)
        .where('type', 'in', types)
        .where((where) => where.or([where('lease_owner', 'is', null), where('lease_expires_millis', '<=', options.nowMillis)]))
        .orderBy('position')
        .limit(1);
      if (this.context.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
      const candidate = await candidates.executeTakeFirst();
      if (!candidate) return undefined;
      const leaseExpiresMillis = options.nowMillis + options.leaseMs;
      const taken = await db
        .updateTable('jobs')
        .set({ lease_owner: options.workerId, lease_expires_millis: leaseExpiresMillis, claims: sql`claims + 1` })
        .where('id', '=', candidate.id)
        .where('settled', '=', 0)
        .where((where) => where.or([where('lease_owner', 'is', null), where('lease_expires_millis', '<=', options.nowMillis)]))
        .returningAll()
        .executeTakeFirst();
      if (!taken) return undefined;
      return {
        job: jobRecord(taken, await statusesIn(db, candidate.id)),
        position: Number(taken.position),
        leaseOwner: options.workerId,
        leaseExpiresMillis,
        claims: taken.claims,
      };
    });
  }

  /**
   * The types with fewer live leases than their limit. Claims that count are serialised (an
   * advisory lock on PostgreSQL, held to the end of the transaction; SQLite's transactions
   * already take the one write lock), so two workers never both take the last free place.
   */
  async #typesWithRoom(db: SqlContext['db'], types: readonly JobType[], limits: Partial<Record<JobType, number>>, nowMillis: number): Promise<JobType[]> {
    if (this.context.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${claimLockKey})`.execute(db);
    const held = await db
      .selectFrom('jobs')
      .select(['type', (expression) => expression.fn.countAll<number>().as('count')])
      .where(sql<boolean>`settled = 0`)
      .where('type', 'in', types)
      .where('lease_owner', 'is not', null)
      .where('lease_expires_millis', '>', nowMillis)
      .groupBy('type')
      .execute();
    const counts = new Map(held.map((row) => [row.type, Number(row.count)]));
    return types.filter((type) => (counts.get(type) ?? 0) < (limits[type] ?? Number.POSITIVE_INFINITY));
  }

  async renewLease(jobId: string, workerId: string, nowMillis: number, leaseMs: number): Promise<boolean> {
    const result = await this.context.db
      .updateTable('jobs')
      .set({ lease_expires_millis: nowMillis + leaseMs })
      .where('id', '=', jobId)
      .where('lease_owner', '=', workerId)
      .where('settled', '=', 0)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async releaseLease(jobId: string, workerId: string): Promise<void> {
    await this.context.db
      .updateTable('jobs')
      .set({ lease_owner: null, lease_expires_millis: null })
      .where('id', '=', jobId)
      .where('lease_owner', '=', workerId)
      .execute();
  }

  transition(jobId: string, entry: JobStatusEntry, change: JobChange = {}): Promise<JobRecord | undefined> {
    return atomic(this.context.db, async (db) => {
      // The status condition makes the first final status win, in one statement.
      const result = await db
        .updateTable('jobs')
        .set({ ...changeRow(change), status: entry.status })
        .where('id', '=', jobId)
        .where('status', 'not in', finalStatuses)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return undefined;
      await insertStatus(db, jobId, entry);
      return new SqlJobRepository({ ...this.context, db }).get(jobId);
    });
  }

  update(jobId: string, change: JobChange | ((job: JobRecord) => JobChange)): Promise<JobRecord> {
    return atomic(this.context.db, async (db) => {
      const row = await forUpdate(this.context, db.selectFrom('jobs').selectAll().where('id', '=', jobId)).executeTakeFirst();
      if (!row) throw notFound('Job', jobId);
      const current = jobRecord(row, await statusesIn(db, jobId));
      const changed = typeof change === 'function' ? change(current) : change;
      const fields = changeRow(changed);
      if (Object.keys(fields).length > 0) await db.updateTable('jobs').set(fields).where('id', '=', jobId).execute();
      return { ...current, ...changed };
    });
  }

  async settle(jobId: string): Promise<boolean> {
    const result = await this.context.db
      .updateTable('jobs')
      .set({ settled: 1, lease_owner: null, lease_expires_millis: null })
      .where('id', '=', jobId)
      .where('settled', '=', 0)
      .where('status', 'in', finalStatuses)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  statuses(jobId: string): Promise<JobStatusEntry[]> {
    return statusesIn(this.context.db, jobId);
  }

  async waitingAhead(jobId: string, nowMillis: number): Promise<number | undefined> {
    const { db } = this.context;
    const waiting = (query: ReturnType<typeof db.selectFrom<'jobs'>>) =>
      query
        .where(sql<boolean>`settled = 0`)
        .where('status', '=', 'CREATED')
        .where((where) => where.or([where('lease_owner', 'is', null), where('lease_expires_millis', '<=', nowMillis)]));
    const job = await waiting(db.selectFrom('jobs')).select(['position', 'type']).where('id', '=', jobId).executeTakeFirst();
    if (!job) return undefined;
    const { count } = await waiting(db.selectFrom('jobs'))
      .select((expression) => expression.fn.countAll<number>().as('count'))
      .where('type', '=', job.type)
      .where('position', '<', job.position)
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  async #statusesOf(jobIds: readonly string[]): Promise<Map<string, JobStatusEntry[]>> {
    const byJob = new Map<string, JobStatusEntry[]>();
    if (jobIds.length === 0) return byJob;
    const rows = await this.context.db
      .selectFrom('job_statuses')
      .selectAll()
      .where('job_id', 'in', jobIds)
      .orderBy('position', 'desc')
      .execute();
    for (const row of rows) {
      const entries = byJob.get(row.job_id) ?? [];
      entries.push({ id: row.id, status: row.status as JobStatus, createdMillis: Number(row.created_millis) });
      byJob.set(row.job_id, entries);
    }
    return byJob;
  }
}

async function statusesIn(db: Kysely<Database>, jobId: string): Promise<JobStatusEntry[]> {
  const rows = await db.selectFrom('job_statuses').selectAll().where('job_id', '=', jobId).orderBy('position', 'desc').execute();
  return rows.map((row) => ({ id: row.id, status: row.status as JobStatus, createdMillis: Number(row.created_millis) }));
}

async function insertStatus(db: Kysely<Database>, jobId: string, entry: JobStatusEntry): Promise<void> {
  await db.insertInto('job_statuses').values({ id: entry.id, job_id: jobId, status: entry.status, created_millis: entry.createdMillis }).execute();
}

function jobRow(job: JobRecord): Insertable<JobsTable> {
  return {
    id: job.id,
    account_id: job.accountId,
    client_id: job.clientId,
    created_millis: job.createdMillis,
    type: job.type,
    payload: toJson(job.payload),
    face_model: job.faceModel === null ? null : toJson(job.faceModel),
    photos: job.photos === null ? null : toJson(job.photos),
    status: job.status,
    output_files: toJson(job.outputFiles),
    transaction_id: job.transactionId,
    external_id: job.externalId,
    started_millis: job.startedMillis,
    failure: job.failure === null ? null : toJson(job.failure),
    settled: job.settled ? 1 : 0,
  };
}

function changeRow(change: JobChange): Updateable<JobsTable> {
  const row: Updateable<JobsTable> = {};
  if (change.outputFiles !== undefined) row.output_files = toJson(change.outputFiles);
  if (change.transactionId !== undefined) row.transaction_id = change.transactionId;
  if (change.externalId !== undefined) row.external_id = change.externalId;
  if (change.startedMillis !== undefined) row.started_millis = change.startedMillis;
  if (change.failure !== undefined) row.failure = change.failure === null ? null : toJson(change.failure);
  if (change.faceModel !== undefined) row.face_model = change.faceModel === null ? null : toJson(change.faceModel);
  return row;
}

function jobRecord(row: Selectable<Database['jobs']>, statuses: JobStatusEntry[]): JobRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    clientId: row.client_id,
    createdMillis: Number(row.created_millis),
    type: row.type as JobType,
    payload: fromJson(row.payload),
    faceModel: fromNullableJson(row.face_model),
    photos: fromNullableJson(row.photos),
    status: row.status as JobStatus,
    statuses,
    outputFiles: fromJson(row.output_files),
    transactionId: row.transaction_id,
    externalId: row.external_id,
    startedMillis: row.started_millis === null ? null : Number(row.started_millis),
    failure: fromNullableJson(row.failure),
    settled: row.settled === 1,
  };
}
