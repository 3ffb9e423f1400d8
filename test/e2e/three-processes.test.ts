import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.js';
import { type FakeCog, startFakeCog } from '../fakes/images/fake-cog.js';
import { createTestDatabase } from '../store/postgres-database.js';
import { type ServiceProcess, call, startServing } from './service-processes.js';

const adminKey = 'admin-key-of-the-three-process-test';
const leaseSeconds = 2;

describe('three service processes on one PostgreSQL database, over HTTP', () => {
  let database: { url: string; drop(): Promise<void> };
  let llm: FakeOpenAI;
  let cog: FakeCog;
  let services: ServiceProcess[] = [];
  let sql: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase();
    llm = await startFakeOpenAI({ script: { reply: 'Noted.' } });
    // Slow enough (about a second a prediction) for jobs to be running when a process is killed.
    cog = await startFakeCog({ capacity: 32, steps: 5, stepMs: 200 });
    const environment = {
      STORE_URL: database.url,
      LLM_BASE_URL: llm.baseURL,
      ADMIN_API_KEY: adminKey,
      IMAGE_ENGINE: 'cog',
      COG_BASE_URL: cog.url,
      IMAGE_CONCURRENCY: '3',
      IMAGE_JOB_LEASE_SECONDS: String(leaseSeconds),
      API_RATE_LIMIT_PER_MINUTE: '100000',
      STARTING_BALANCE: '0',
    };
    services = await Promise.all(['one', 'two', 'three'].map((name) => startServing(name, environment)));
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
  });

  afterAll(async () => {
    await sql?.end();
    await Promise.all(
      services.map(async (service) => {
        if (service.child.exitCode !== null || service.child.signalCode !== null) return;
        const exited = once(service.child, 'exit');
        service.child.kill('SIGTERM');
        await exited;
      }),
    );
    await Promise.all([llm?.close(), cog?.close()]);
    await database?.drop();
  });

  /** A new account made through one process, with `credits` added by the admin through another. */
  async function account(username: string, credits: number): Promise<{ id: string; key: string }> {
    const created = await call(services[0]!, 'POST', '/accounts', adminKey, { username });
    expect(created.status).toBe(201);
    const id: string = created.body.account?.id ?? created.body.id;
    const key: string = created.body.apiKey;
    if (credits > 0) expect((await call(services[1]!, 'POST', `/accounts/${id}/balance`, adminKey, { amount: credits, reason: 'test' })).status).toBe(200);
    return { id, key };
  }

  async function balanceEqualsLedger(service: ServiceProcess, user: { id: string; key: string }): Promise<number> {
    const balance = (await call(service, 'GET', `/accounts/${user.id}/balance`, user.key)).body.balance as number;
    const transactions = (await call(service, 'GET', `/accounts/${user.id}/transactions`, user.key)).body.transactions as Array<{ type: string; amount: number }>;
    const sum = transactions.reduce((total, entry) => total + (entry.type === 'debit' ? -entry.amount : entry.amount), 0);
    expect(balance).toBe(sum);
    return balance;
  }

  it('gives each username once, whatever its case and whichever process is asked', async () => {
    const names = ['Ada', 'Brook', 'Cyd', 'Dale'];
    const attempts = services.flatMap((service, index) =>
      names.map((name) => call(service, 'POST', '/accounts', adminKey, { username: index === 1 ? name.toLowerCase() : name }).then((answer) => ({ name, status: answer.status }))),
    );
    const outcomes = await Promise.all(attempts);
    for (const name of names) {
      const statuses = outcomes.filter((outcome) => outcome.name === name).map((outcome) => outcome.status).sort();
      expect(statuses).toEqual([201, 409, 409]);
    }
  });

  it('never spends more than the balance, and the balance always equals the ledger', async () => {
    const user = await account('spender', 10);
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, index) => call(services[index % 3]!, 'POST', '/images', user.key, { prompt: `coin ${index}`, samples: 1 })),
    );
    const accepted = answers.filter((answer) => answer.status === 201);
    expect(accepted).toHaveLength(10);
    expect(answers.filter((answer) => answer.status === 402)).toHaveLength(14);
    for (const service of services) expect(await balanceEqualsLedger(service, user)).toBe(0);
    // Each job runs once, in whichever process claimed it.
    for (const { body } of accepted) {
      await expect
        .poll(async () => (await call(services[0]!, 'GET', `/jobs/${body.jobId}`, user.key)).body.job.status, { timeout: 30_000, interval: 250 })
        .toBe('SUCCESS');
    }
    const runs = cog.predictions.filter((prediction) => accepted.some(({ body }) => prediction.id.includes(body.jobId)));
    expect(runs).toHaveLength(10);
  });

  it('stores every message once, in one order every process reads', async () => {
    const user = await account('talker', 0);
    const me = await call(services[0]!, 'GET', `/accounts/${user.id}`, user.key);
    const characterId: string = me.body.account.characterId ?? me.body.account.character_id;
    const opened = await call(services[2]!, 'POST', '/conversations', user.key, { characterId });
    expect(opened.status).toBe(201);
    const conversationId: string = opened.body.id;
    const sent = await Promise.all(
      Array.from({ length: 18 }, (_, index) => call(services[index % 3]!, 'POST', `/conversations/${conversationId}/chat`, user.key, { data: `message ${index}` })),
    );
    expect(sent.map((answer) => answer.status)).toEqual(sent.map(() => 200));
    const reads = await Promise.all(services.map((service) => call(service, 'GET', `/conversations/${conversationId}`, user.key)));
    const orders = reads.map((read) => (read.body.messages as Array<{ id: string }>).map((message) => message.id));
    expect(orders[1]).toEqual(orders[0]);
    expect(orders[2]).toEqual(orders[0]);
    const texts = (reads[0]!.body.messages as Array<{ content?: string; data?: string }>).map((message) => message.content ?? message.data);
    for (let index = 0; index < 18; index++) expect(texts.filter((text) => text === `message ${index}`)).toHaveLength(1);
    expect(orders[0]).toHaveLength(36);
  });

  it('revokes a rotated key in every process at once', async () => {
    const user = await account('rotator', 0);
    for (const service of services) expect((await call(service, 'GET', `/accounts/${user.id}`, user.key)).status).toBe(200);
    const rotated = await call(services[0]!, 'POST', `/accounts/${user.id}/keys`, user.key);
    const newKey: string = rotated.body.apiKey;
    for (const service of services) {
      expect((await call(service, 'GET', `/accounts/${user.id}`, user.key)).status).toBe(401);
      expect((await call(service, 'GET', `/accounts/${user.id}`, newKey)).status).toBe(200);
    }
  });

  it('finishes or refunds elsewhere the running jobs of a process killed with SIGKILL', async () => {
    const user = await account('survivor', 6);
    const accepted = await Promise.all(Array.from({ length: 6 }, (_, index) => call(services[index % 3]!, 'POST', '/images', user.key, { prompt: `survive ${index}` })));
    const jobIds = accepted.map((answer) => answer.body.jobId as string);
    // The holder of a running job, by the pid its runner names itself with.
    let holder: ServiceProcess | undefined;
    await expect
      .poll(
        async () => {
          const { rows } = await sql.query<{ lease_owner: string }>(`select lease_owner from jobs where status = 'IN_PROGRESS' and lease_owner is not null`);
          holder = services.find((service) => service.child.exitCode === null && rows.some((row) => row.lease_owner.includes(`:${service.child.pid}:`)));
          return holder !== undefined;
        },
        { timeout: 20_000, interval: 50 },
      )
      .toBe(true);
    holder!.child.kill('SIGKILL');
    await once(holder!.child, 'exit');
    const alive = services.find((service) => service !== holder)!;
    for (const jobId of jobIds) {
      await expect
        .poll(async () => {
          const { job } = (await call(alive, 'GET', `/jobs/${jobId}`, user.key)).body;
          return job.status === 'SUCCESS' || job.status === 'FAILED' ? job.status : 'running';
        }, { timeout: leaseSeconds * 1000 + 30_000, interval: 250 })
        .not.toBe('running');
    }
    // Settled: every failure refunded once, every success paid once.
    await expect.poll(async () => (await sql.query(`select count(*)::int as open from jobs where settled = 0`)).rows[0].open, { timeout: 60_000 }).toBe(0);
    const { rows } = await sql.query<{ status: string }>(`select status from jobs where id = any($1)`, [jobIds]);
    const succeeded = rows.filter((row) => row.status === 'SUCCESS').length;
    expect(await balanceEqualsLedger(alive, user)).toBe(6 - succeeded);
    // A job taken over is followed at the engine by its prediction id: it succeeds there at most once
    // (Cog cancels a synchronous prediction whose client died, so the new holder may start it again).
    for (const jobId of jobIds) {
      expect(cog.predictions.filter((prediction) => prediction.id.includes(jobId) && prediction.status === 'succeeded').length).toBeLessThanOrEqual(1);
    }
  });
});
