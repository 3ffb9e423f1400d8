import { PNG } from 'pngjs';
import { zipSync } from 'fflate';
import { afterEach, describe, expect, it } from 'vitest';
import { adminActor } from '../../../src/core/actor.js';
import { AppError, ValidationError } from '../../../src/core/errors.js';
import type { JobRecord } from '../../../src/core/records.js';
import { type CoreHarness, startCoreHarness } from './core-harness.js';
import { engineRefused } from './scripted-engines.js';

let harness: CoreHarness;
afterEach(async () => {
  await harness?.close();
});

function photo(shade: number): Uint8Array {
  const image = new PNG({ width: 16, height: 16 });
  image.data.fill(shade);
  return PNG.sync.write(image);
}

const photos = (count: number) => Array.from({ length: count }, (_, index) => ({ filename: `face-${index}.png`, data: photo(index * 10) }));

async function final(jobId: string): Promise<JobRecord> {
  const job = await harness.core.images.waitForFinal(adminActor, jobId, 5000);
  if (!job) throw new Error(`job ${jobId} did not finish`);
  return job;
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(() => undefined, (thrown: unknown) => thrown);
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe('face models', () => {
  it('trains from photos to a usable model, then draws the character with it', async () => {
    harness = await startCoreHarness({ trainingCreditCost: 5 });
    const { actor, accountId, characterId } = await harness.account(10);
    const { model, job, transaction } = await harness.core.images.trainFace(actor, characterId, photos(6));
    expect(model.status).toBe('IN_PROGRESS');
    expect(transaction.amount).toBe(5);
    expect((await harness.core.characters.faceModels(actor, characterId)).map((entry) => entry.status)).toEqual(['IN_PROGRESS']);
    const training = await harness.trainer.runs.nth(0);
    // The trainer fetches the photos by signed URL: a zip of all six.
    expect(training.request.imagesUrl).toContain('.zip');
    training.finish();
    expect((await final(job.id)).status).toBe('SUCCESS');
    const [trained] = await harness.core.characters.faceModels(actor, characterId);
    expect(trained).toMatchObject({ status: 'SUCCESS', triggerToken: '<s0><s1>' });
    expect((await harness.core.files.read(trained!.archive!.key)).bytes.toString()).toBe(`weights for ${job.id}`);

    const image = await harness.core.images.create(actor, { prompt: `<${characterId}> on a horse`, loraScale: 0.8 });
    const run = await harness.engine.runs.nth(0);
    expect(run.request.payload).toMatchObject({ prompt: '<s0><s1> on a horse', loraScale: 0.8, faceInpainting: true });
    expect(run.request.faceModel).toEqual({ id: trained!.id, archiveUrl: expect.stringContaining(trained!.archive!.key), triggerToken: '<s0><s1>' });
    expect(image.job.faceModel).toEqual({ id: trained!.id, characterId, archiveKey: trained!.archive!.key });
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(4);
  });

  it('takes photos inside a zip', async () => {
    harness = await startCoreHarness();
    const { actor, characterId } = await harness.account(50);
    const zip = zipSync(Object.fromEntries(photos(5).map((entry) => [`faces/${entry.filename}`, entry.data])));
    const { job } = await harness.core.images.trainFace(actor, characterId, [{ filename: 'faces.zip', data: zip }]);
    expect(job.payload).toMatchObject({ photoCount: 5 });
  });

  it('refuses bad photos before charging anything', async () => {
    harness = await startCoreHarness();
    const { actor, accountId, characterId } = await harness.account(50);
    const tooFew = await rejection(harness.core.images.trainFace(actor, characterId, photos(4)));
    expect(tooFew).toBeInstanceOf(ValidationError);
    expect(tooFew.message).toContain('5 to 30');
    expect((await rejection(harness.core.images.trainFace(actor, characterId, photos(31)))).message).toContain('got 31');
    const notImages = await rejection(
      harness.core.images.trainFace(actor, characterId, [...photos(4), { filename: 'notes.txt', data: new TextEncoder().encode('hello') }]),
    );
    expect((notImages as ValidationError).issues.map((issue) => issue.field)).toEqual(['photos.notes.txt']);
    expect(await harness.core.accounts.balance(adminActor, accountId)).toBe(50);
    expect(await harness.core.characters.faceModels(actor, characterId)).toEqual([]);
  });

  it('lets only the owner train a face', async () => {
    harness = await startCoreHarness();
    const owner = await harness.account(50);
    const other = await harness.account(50);
    await harness.core.characters.update(owner.actor, owner.characterId, { isPublic: true });
    expect((await rejection(harness.core.images.trainFace(other.actor, owner.characterId, photos(5)))).code).toBe('FORBIDDEN');
  });

  it('marks a failed training FAILED with the reason and refunds it', async () => {
    harness = await startCoreHarness({ trainingCreditCost: 5 });
    const { actor, accountId, characterId } = await harness.account(5);
    const { job } = await harness.core.images.trainFace(actor, characterId, photos(5));
    (await harness.trainer.runs.nth(0)).fail(engineRefused());
    await final(job.id);
    await expect.poll(async () => (await harness.core.characters.faceModels(actor, characterId))[0]?.status).toBe('FAILED');
    expect((await harness.core.characters.faceModels(actor, characterId))[0]?.failure).toContain('refused this request');
    await expect.poll(() => harness.core.accounts.balance(adminActor, accountId)).toBe(5);
  });

  it('refuses to draw a character without a ready face model, saying its state', async () => {
    harness = await startCoreHarness();
    const { actor, characterId } = await harness.account(50);
    const none = await rejection(harness.core.images.create(actor, { prompt: `<${characterId}> smiling` }));
    expect(none.code).toBe('FACE_MODEL_NOT_READY');
    expect(none.message).toContain(characterId);
    expect(none.message).toContain('no face model');
    await harness.core.images.trainFace(actor, characterId, photos(5));
    const training = await rejection(harness.core.images.create(actor, { prompt: `<${characterId}> smiling` }));
    expect(training.message).toContain('IN_PROGRESS');
    expect(training.details).toMatchObject({ characterId, modelStatus: 'IN_PROGRESS' });
  });

  it('treats a character the caller cannot see as an invalid prompt', async () => {
    harness = await startCoreHarness();
    const owner = await harness.account(5);
    const other = await harness.account(5);
    const error = await rejection(harness.core.images.create(other.actor, { prompt: `<${owner.characterId}> waving` }));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues[0]?.field).toBe('prompt');
  });

  it('re-rolls a personalised job with the character reference and a new seed', async () => {
    harness = await startCoreHarness();
    harness.trainer.runs.autoFinish = true;
    harness.engine.runs.autoFinish = true;
    const { actor, characterId } = await harness.account(50);
    await final((await harness.core.images.trainFace(actor, characterId, photos(5))).job.id);
    const first = await harness.core.images.create(actor, { prompt: `<${characterId}> at sea`, seed: 5 });
    const again = await harness.core.images.reroll(actor, await final(first.job.id));
    expect(again.job.payload).toMatchObject({ prompt: '<s0><s1> at sea' });
    expect((again.job.payload as { seed: number }).seed).not.toBe(5);
    expect(again.job.faceModel?.characterId).toBe(characterId);
  });
});
