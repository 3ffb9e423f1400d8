import { afterEach, describe, expect, it } from 'vitest';
import { adminActor } from '../../../src/core/actor.js';
import { AppError, ValidationError } from '../../../src/core/errors.js';
import type { JobRecord } from '../../../src/core/records.js';
import { type CoreHarness, startCoreHarness } from './core-harness.js';
import { engineDown, engineRefused } from './scripted-engines.js';

let harness: CoreHarness;
afterEach(async () => {
  await harness?.close();
});

async function final(jobId: string): Promise<JobRecord> {
  const job = await harness.core.images.waitForFinal(adminActor, jobId, 5000);
  if (!job) throw new Error(`job ${jobId} did not finish`);
  return job;
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe('image jobs', () => {
  it('goes CREATED → IN_PROGRESS → SUCCESS, keeps the outputs and charges samples × cost', async () => {
    harness = await startCoreHarness({ imageCreditCost: 2 });
    const { actor, accountId } = await harness.account(10);
    const { job, transaction } = await harness.core.images.create(actor, { prompt: 'a lighthouse at dusk', samples: 3, seed: 42 });
    expect(transaction.amount).toBe(6);
    expect(job.transactionId).toBe(transaction.id);
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(4);
    const run = await harness.engine.runs.nth(0);
    expect(run.request.payload).toMatchObject({ prompt: 'a lighthouse at dusk', samples: 3, seed: 42, width: 1024, height: 1024 });
    expect((await harness.core.images.get(actor, job.id)).status).toBe('IN_PROGRESS');
    run.finish();
    const done = await final(job.id);
    expect(done.statuses.map((entry) => entry.status)).toEqual(['SUCCESS', 'IN_PROGRESS', 'CREATED']);
    expect(done.outputFiles.map((file) => file.name)).toEqual(['image-1.png', 'image-2.png', 'image-3.png']);
    const { bytes } = await harness.core.files.read(done.outputFiles[0]!.key);
    expect(bytes?.subarray(1, 4).toString()).toBe('PNG');
    expect(done.outputFiles[0]!.feedback).toEqual({ like: null, feedback: null });
    expect(done.payload).toMatchObject({ seed: 42 });
  });

  it('draws and records a seed when none is given', async () => {
    harness = await startCoreHarness();
    const { actor } = await harness.account(10);
    const first = await harness.core.images.create(actor, { prompt: 'x' });
    const second = await harness.core.images.create(actor, { prompt: 'x' });
    const seeds = [first, second].map(({ job }) => (job.payload as { seed: number }).seed);
    expect(seeds.every((seed) => Number.isInteger(seed) && seed >= 0)).toBe(true);
    expect(seeds[0]).not.toBe(seeds[1]);
  });

  it('names every invalid field in one error and charges nothing', async () => {
    harness = await startCoreHarness();
    const { actor, accountId } = await harness.account(10);
    const error = await rejection(
      harness.core.images.create(actor, { prompt: ' ', width: 2048, height: 100, samples: 5, guidanceScale: 0.5, loraScale: 1.5, seed: -1, negativePrompt: 'n'.repeat(2001) }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues.map((issue) => issue.field).sort()).toEqual(
      ['guidanceScale', 'height', 'loraScale', 'negativePrompt', 'prompt', 'samples', 'seed', 'width'],
    );
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(10);
    expect((await harness.core.images.list(actor, accountId, 10)).jobs).toEqual([]);
  });

  it('refuses a short balance with 402 and leaves no job behind', async () => {
    harness = await startCoreHarness();
    const { actor, accountId } = await harness.account(2);
    const error = await rejection(harness.core.images.create(actor, { prompt: 'x', samples: 3 }));
    expect(error.code).toBe('BALANCE_INSUFFICIENT');
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(2);
    expect((await harness.core.images.list(actor, accountId, 10)).jobs).toEqual([]);
  });

  it('never overspends under concurrent requests', async () => {
    harness = await startCoreHarness();
    const { actor, accountId } = await harness.account(5);
    const results = await Promise.allSettled(Array.from({ length: 12 }, () => harness.core.images.create(actor, { prompt: 'x' })));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(5);
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(0);
    expect((await harness.core.images.list(actor, accountId, 50)).jobs).toHaveLength(5);
  });

  it('fails with the engine reason and refunds exactly once', async () => {
    harness = await startCoreHarness();
    const { actor, accountId } = await harness.account(3);
    const { job } = await harness.core.images.create(actor, { prompt: 'x', samples: 2 });
    (await harness.engine.runs.nth(0)).fail(engineRefused());
    const failed = await final(job.id);
    expect(failed.status).toBe('FAILED');
    // The engine's words stay in the log: the job shows a message written by us.
    expect(failed.failure).toEqual({ code: 'ENGINE_FAILED', message: expect.stringContaining('refused this request') });
    expect(failed.failure?.message).not.toContain('flagged');
    await expect.poll(() => harness.core.accounts.balance(adminActor, accountId)).toBe(3);
    await expect.poll(async () => (await harness.core.images.find(job.id))?.settled).toBe(true);
    const kinds = (await harness.core.accounts.transactions(adminActor, accountId)).map((transaction) => transaction.type);
    expect(kinds).toEqual(['credit', 'debit', 'refund']);
  });

  it('retries an engine that is down, then succeeds on the same run', async () => {
    harness = await startCoreHarness({ attempts: 3 });
    const { actor } = await harness.account(3);
    const { job } = await harness.core.images.create(actor, { prompt: 'x' });
    (await harness.engine.runs.nth(0)).fail(engineDown());
    const second = await harness.engine.runs.nth(1);
    // The retry follows the run the engine already accepted instead of starting another.
    expect(second.run.resumeId).toBe(`prediction-${job.id}`);
    second.finish();
    expect((await final(job.id)).status).toBe('SUCCESS');
  });

  it('gives up after the last attempt and refunds', async () => {
    harness = await startCoreHarness({ attempts: 2 });
    const { actor, accountId } = await harness.account(1);
    const { job } = await harness.core.images.create(actor, { prompt: 'x' });
    (await harness.engine.runs.nth(0)).fail(engineDown());
    (await harness.engine.runs.nth(1)).fail(engineDown());
    const failed = await final(job.id);
    expect(failed.failure?.code).toBe('ENGINE_UNAVAILABLE');
    await expect.poll(() => harness.core.accounts.balance(adminActor, accountId)).toBe(1);
  });

  it('fails a job past its time limit, stops the engine run and refunds', async () => {
    harness = await startCoreHarness({ imageTimeLimitMs: 150 });
    const { actor, accountId } = await harness.account(1);
    const { job } = await harness.core.images.create(actor, { prompt: 'x' });
    const run = await harness.engine.runs.nth(0);
    const failed = await final(job.id);
    expect(failed.status).toBe('FAILED');
    expect(failed.failure?.code).toBe('ENGINE_TIMEOUT');
    expect(run.run.signal.aborted).toBe(true);
    await expect.poll(() => harness.core.accounts.balance(adminActor, accountId)).toBe(1);
  });

  it('cancels queued and running jobs with a refund, and refuses to cancel a finished one', async () => {
    harness = await startCoreHarness({}, 1);
    const { actor, accountId } = await harness.account(3);
    const running = await harness.core.images.create(actor, { prompt: 'first' });
    const queued = await harness.core.images.create(actor, { prompt: 'second' });
    const run = await harness.engine.runs.nth(0);
    expect(await harness.core.images.position(queued.job)).toBe(0);
    expect((await harness.core.images.cancel(actor, queued.job.id)).status).toBe('CANCELED');
    const canceled = await harness.core.images.cancel(actor, running.job.id);
    expect(canceled.statuses.map((entry) => entry.status)).toEqual(['CANCELED', 'IN_PROGRESS', 'CREATED']);
    expect(run.run.signal.aborted).toBe(true);
    await expect.poll(() => harness.core.accounts.balance(adminActor, accountId)).toBe(3);
    // The queued job never reached the engine.
    expect(harness.engine.runs.started).toHaveLength(1);
    const third = await harness.core.images.create(actor, { prompt: 'third' });
    (await harness.engine.runs.nth(1)).finish();
    await final(third.job.id);
    const error = await rejection(harness.core.images.cancel(actor, third.job.id));
    expect(error.code).toBe('CONFLICT');
    expect(error.message).toContain('SUCCESS');
  });

  it('runs at most the engine concurrency at once, in creation order', async () => {
    harness = await startCoreHarness({}, 2);
    const { actor } = await harness.account(10);
    const created = [];
    for (let index = 0; index < 5; index += 1) created.push(await harness.core.images.create(actor, { prompt: `job ${index}` }));
    await harness.engine.runs.nth(1);
    expect(harness.engine.runs.running).toBe(2);
    // Each finished run lets the oldest waiting job in, one at a time.
    for (let index = 0; index < 5; index += 1) {
      (await harness.engine.runs.nth(index)).finish();
      if (index + 2 < 5) expect((await harness.engine.runs.nth(index + 2)).request.payload.prompt).toBe(`job ${index + 2}`);
    }
    for (const { job } of created) expect((await final(job.id)).status).toBe('SUCCESS');
    expect(harness.engine.runs.maxRunning).toBe(2);
  });

  it('keeps only its owner (and the admin) able to read, cancel or judge a job', async () => {
    harness = await startCoreHarness();
    const owner = await harness.account(2);
    const stranger = await harness.account(2);
    const { job } = await harness.core.images.create(owner.actor, { prompt: 'x' });
    expect((await rejection(harness.core.images.get(stranger.actor, job.id))).code).toBe('NOT_FOUND');
    expect((await rejection(harness.core.images.cancel(stranger.actor, job.id))).code).toBe('NOT_FOUND');
    expect((await harness.core.images.get({ type: 'admin' }, job.id)).id).toBe(job.id);
    expect((await rejection(harness.core.images.create({ type: 'admin' }, { prompt: 'x' }))).code).toBe('FORBIDDEN');
  });

  it('records feedback per output', async () => {
    harness = await startCoreHarness();
    harness.engine.runs.autoFinish = true;
    const { actor } = await harness.account(2);
    const { job } = await harness.core.images.create(actor, { prompt: 'x', samples: 2 });
    await final(job.id);
    await harness.core.images.feedback(actor, job.id, 'image-2.png', { like: true });
    const judged = await harness.core.images.feedback(actor, job.id, 'image-2.png', { feedback: 'lovely light' });
    expect(judged.outputFiles.map((file) => file.feedback)).toEqual([
      { like: null, feedback: null },
      { like: true, feedback: 'lovely light' },
    ]);
    const error = await rejection(harness.core.images.feedback(actor, job.id, 'image-9.png', { like: false }));
    expect(error.code).toBe('NOT_FOUND');
    expect(error.message).toContain('image-9.png');
  });

  it('lists the account\'s jobs newest first, page by page', async () => {
    harness = await startCoreHarness();
    const { actor, accountId } = await harness.account(20);
    const ids = [];
    for (let index = 0; index < 7; index += 1) ids.push((await harness.core.images.create(actor, { prompt: `p${index}` })).job.id);
    const first = await harness.core.images.list(actor, accountId, 3);
    expect(first.jobs.map((job) => job.id)).toEqual(ids.slice(4).reverse());
    const second = await harness.core.images.list(actor, accountId, 3, first.nextCursor);
    expect(second.jobs.map((job) => job.id)).toEqual(ids.slice(1, 4).reverse());
    const last = await harness.core.images.list(actor, accountId, 3, second.nextCursor);
    expect(last.jobs.map((job) => job.id)).toEqual([ids[0]]);
    expect(last.nextCursor).toBeUndefined();
    const other = await harness.account(0);
    expect((await rejection(harness.core.images.list(other.actor, accountId, 3))).code).toBe('FORBIDDEN');
    expect((await harness.core.images.list({ type: 'admin' }, accountId, 3)).jobs).toHaveLength(3);
  });
});

describe('image jobs across a restart', () => {
  it('follows a running job again at its engine and submits one never sent', async () => {
    harness = await startCoreHarness({}, 1);
    const { actor, accountId } = await harness.account(5);
    const running = await harness.core.images.create(actor, { prompt: 'running', seed: 7 });
    const waiting = await harness.core.images.create(actor, { prompt: 'waiting' });
    await harness.engine.runs.nth(0);
    await harness.restart();
    const resumed = await harness.engine.runs.nth(0);
    expect(resumed.request.jobId).toBe(running.job.id);
    expect(resumed.run.resumeId).toBe(`prediction-${running.job.id}`);
    resumed.finish();
    const submitted = await harness.engine.runs.nth(1);
    expect(submitted.request.jobId).toBe(waiting.job.id);
    expect(submitted.run.resumeId).toBeUndefined();
    submitted.finish();
    expect((await final(running.job.id)).status).toBe('SUCCESS');
    expect((await final(waiting.job.id)).status).toBe('SUCCESS');
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(3);
  });

  it('records a job whose images arrive as the service stops', async () => {
    harness = await startCoreHarness();
    const { actor } = await harness.account(1);
    const { job } = await harness.core.images.create(actor, { prompt: 'just in time' });
    const run = await harness.engine.runs.nth(0);
    run.finish();
    await harness.core.images.stop();
    const stored = await harness.repositories.jobs.get(job.id);
    expect(stored?.status).toBe('SUCCESS');
    expect(stored?.outputFiles).toHaveLength(1);
  });

  it('fails a job whose time ran out while the service was down, with a refund', async () => {
    harness = await startCoreHarness({ imageTimeLimitMs: 100_000 });
    const { actor, accountId } = await harness.account(1);
    const { job } = await harness.core.images.create(actor, { prompt: 'x' });
    await harness.engine.runs.nth(0);
    await harness.core.images.stop();
    await harness.repositories.jobs.update(job.id, { startedMillis: Date.now() - 200_000 });
    await harness.restart();
    const failed = await final(job.id);
    expect(failed.failure?.code).toBe('ENGINE_TIMEOUT');
    await expect.poll(() => harness.core.accounts.balance(adminActor, accountId)).toBe(1);
    expect(harness.engine.runs.started).toHaveLength(0);
  });

  it('takes over the jobs of a process that died holding them, once its lease runs out', async () => {
    harness = await startCoreHarness({ leaseMs: 400, claimPollMs: 50 }, 1);
    const { actor, accountId } = await harness.account(2);
    const { job } = await harness.core.images.create(actor, { prompt: 'orphaned', seed: 3 });
    const first = await harness.engine.runs.nth(0);
    // As if the holder died: nothing renews its lease any more, and nothing releases it.
    await harness.abandon();
    const resumed = await harness.engine.runs.nth(0);
    expect(resumed.request.jobId).toBe(job.id);
    expect(resumed.run.resumeId).toBe(`prediction-${job.id}`);
    expect(first.run.signal.aborted).toBe(false);
    resumed.finish();
    expect((await final(job.id)).status).toBe('SUCCESS');
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(1);
  });

  it('refunds a job that failed just before a crash left it unsettled', async () => {
    harness = await startCoreHarness();
    const { actor, accountId } = await harness.account(1);
    const { job } = await harness.core.images.create(actor, { prompt: 'x' });
    await harness.engine.runs.nth(0);
    await harness.core.images.stop();
    await harness.repositories.jobs.transition(job.id, { id: 'failed-before-the-crash', status: 'FAILED', createdMillis: Date.now() }, { failure: { code: 'ENGINE_FAILED', message: 'boom' } });
    await harness.restart();
    await expect.poll(() => harness.core.accounts.balance(adminActor, accountId)).toBe(1);
    await expect.poll(async () => (await harness.repositories.jobs.get(job.id))?.settled).toBe(true);
    // A second restart does not refund again.
    await harness.restart();
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(1);
  });
});
