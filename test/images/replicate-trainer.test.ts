import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AppError, ServiceStopping } from '../../src/core/errors.js';
import { type ReplicateFaceTrainerOptions, createReplicateFaceTrainer } from '../../src/engines/image/replicate-trainer.js';
import { createReplicateImageEngine } from '../../src/engines/image/replicate.js';
import { type FileHost, startFileHost } from '../fakes/images/file-host.js';
import { type FakeReplicate, startFakeReplicate } from '../fakes/images/fake-replicate.js';
import { ustarNames } from '../fakes/images/ustar.js';
import { TestAbort, engineFailure, photoZip, recordingRun, rejection, samplePayload, waitFor } from './image-helpers.js';

const TRAINER = 'replicate/sdxl-trainer:39ed52f2a78e934b3ba6e2a89f5b1c712de7dfea535525255b1aa35c5565e08b';
let fake: FakeReplicate;
let files: FileHost;
let photos: string;
const closers: Array<{ close(): Promise<void> }> = [];

function trainerWith(overrides: Partial<ReplicateFaceTrainerOptions> = {}) {
  const trainer = createReplicateFaceTrainer({ baseURL: fake.apiURL, apiToken: 'test-token', trainerVersion: TRAINER, destination: 'likeness/faces', pollIntervalMs: 5, ...overrides });
  closers.push(trainer);
  return trainer;
}

beforeAll(async () => {
  fake = await startFakeReplicate({ startingMs: 5, stepMs: 3, steps: 4 });
  files = await startFileHost();
  photos = files.put('photos.zip', photoZip(3), 'application/zip');
});
afterEach(() => {
  fake.clearScripts();
  fake.release();
  fake.requests.length = 0;
});
afterAll(async () => {
  await Promise.all(closers.map((closer) => closer.close()));
  await Promise.all([fake.close(), files.close()]);
});

describe('Replicate face trainer', () => {
  it('trains on the photo zip and returns the trained archive with the <s0><s1> token', async () => {
    const trainer = trainerWith();
    const run = recordingRun();
    const trained = await trainer.train({ jobId: 'job-7', imagesUrl: photos }, run);

    expect(trainer.provider).toBe('replicate');
    expect(trainer.concurrency).toBe(2);
    const creation = fake.requests.find((recorded) => recorded.method === 'POST');
    expect(creation?.path).toBe('/v1/models/replicate/sdxl-trainer/versions/39ed52f2a78e934b3ba6e2a89f5b1c712de7dfea535525255b1aa35c5565e08b/trainings');
    expect(creation?.json).toEqual({
      destination: 'likeness/faces',
      input: {
        input_images: photos,
        token_string: 'TOK',
        caption_prefix: 'a photo of TOK, ',
        max_train_steps: 1000,
        use_face_detection_instead: true,
        is_lora: true,
        lora_rank: 32,
        resolution: 1024,
      },
    });
    const training = fake.trainings.at(-1)!;
    expect(run.submittedIds).toEqual([training.id]);
    expect(training.photoCount).toBe(3);
    expect(trained.triggerToken).toBe('<s0><s1>');
    expect(trained.archive.mimeType).toBe('application/x-tar');
    expect(ustarNames(trained.archive.data)).toEqual(['lora.safetensors', 'embeddings.pti', 'special_params.json']);
    expect(fake.requests.some((recorded) => recorded.path === `/v1/trainings/${training.id}`)).toBe(true);
  });

  it('passes its token string and step count to the trainer', async () => {
    await trainerWith({ tokenString: 'zxq', steps: 400 }).train({ jobId: 'job-8', imagesUrl: photos }, recordingRun());
    expect(fake.trainings.at(-1)?.input).toMatchObject({ token_string: 'zxq', caption_prefix: 'a photo of zxq, ', max_train_steps: 400 });
  });

  it('reports progress from the trainer logs', async () => {
    const run = recordingRun();
    await trainerWith().train({ jobId: 'job-9', imagesUrl: photos }, run);
    expect(run.progressValues.length).toBeGreaterThan(0);
    expect(run.progressValues.at(-1)).toBe(1);
  });

  it('reports the trainer\'s reason when the photos are not a zip', async () => {
    const notZip = files.put('photos.txt', Buffer.from('not a zip'));
    const error = await engineFailure(trainerWith().train({ jobId: 'job-10', imagesUrl: notZip }, recordingRun()));
    expect(error).toMatchObject({ provider: 'replicate', retryable: false });
    expect(error.upstream).toMatch(/^Replicate training \w+ failed: input_images is not a zip file$/);
  });

  it('follows the same training after a restart', async () => {
    fake.hold();
    const first = recordingRun();
    const before = trainerWith();
    const abandoned = before.train({ jobId: 'job-11', imagesUrl: photos }, first).catch(() => undefined);
    const id = await first.firstSubmission;
    await before.close();
    const resumed = recordingRun({ resumeId: id });
    const outcome = trainerWith().train({ jobId: 'job-11', imagesUrl: photos }, resumed);
    fake.release();
    expect((await outcome).triggerToken).toBe('<s0><s1>');
    await abandoned;
    expect(fake.trainings.filter((training) => training.input['input_images'] === photos && training.id === id)).toHaveLength(1);
    expect(fake.requests.filter((recorded) => recorded.method === 'POST' && recorded.path.endsWith('/trainings'))).toHaveLength(1);
    expect(resumed.submittedIds).toEqual([]);
  });

  it('cancels the training at Replicate on abort', async () => {
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(trainerWith().train({ jobId: 'job-12', imagesUrl: photos }, run));
    const id = await run.firstSubmission;
    const reason = new TestAbort('canceled');
    run.controller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(fake.requests.some((recorded) => recorded.method === 'POST' && recorded.path === `/v1/trainings/${id}/cancel`)).toBe(true);
    expect(fake.trainings.find((training) => training.id === id)?.status).toBe('canceled');
  });

  it('leaves the training running when the service stops', async () => {
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(trainerWith().train({ jobId: 'job-15', imagesUrl: photos }, run));
    const id = await run.firstSubmission;
    const reason = new ServiceStopping();
    run.controller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(fake.requests.some((recorded) => recorded.path.endsWith('/cancel'))).toBe(false);
    expect(fake.trainings.find((training) => training.id === id)?.status).not.toBe('canceled');
    fake.release();
    await waitFor(() => fake.trainings.find((training) => training.id === id)?.status === 'succeeded');
  });

  it('makes an archive that the image model takes as lora_1', async () => {
    const trained = await trainerWith().train({ jobId: 'job-13', imagesUrl: photos }, recordingRun());
    const archiveUrl = files.put('trained.tar', trained.archive.data, 'application/x-tar');
    const engine = createReplicateImageEngine({ baseURL: fake.apiURL, apiToken: 'test-token', model: 'stability-ai/sdxl', pollIntervalMs: 5 });
    closers.push(engine);
    const request = { jobId: 'job-14', payload: samplePayload({ loraScale: 0.6 }) };
    const plain = await engine.generate({ ...request, faceModel: null }, recordingRun());
    const personal = await engine.generate({ ...request, faceModel: { id: 'face-13', archiveUrl, triggerToken: trained.triggerToken } }, recordingRun());
    expect(Buffer.from(personal[0]!.data).equals(Buffer.from(plain[0]!.data))).toBe(false);
  });

  it('refuses a trainer without a version or a destination with one', () => {
    expect(() => trainerWith({ trainerVersion: 'replicate/sdxl-trainer' })).toThrow(AppError);
    expect(() => trainerWith({ destination: 'likeness/faces:0123456789abcdef' })).toThrow(/owner\/model/);
  });
});
