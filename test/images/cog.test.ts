import { Agent, request as httpRequest } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServiceStopping } from '../../src/core/errors.js';
import type { ImageRequest } from '../../src/core/ports.js';
import { type CogImageOptions, createCogImageEngine } from '../../src/engines/image/cog.js';
import { type FakeCog, type FakeCogOptions, startFakeCog } from '../fakes/images/fake-cog.js';
import { type FileHost, startFileHost } from '../fakes/images/file-host.js';
import { TestAbort, engineFailure, faceArchive, pngSize, recordingRun, rejection, sampleInput, samplePayload, waitFor } from './image-helpers.js';

let files: FileHost;
const closers: Array<{ close(): Promise<void> }> = [];

async function cogWith(fakeOptions: FakeCogOptions = {}, engineOptions: Partial<CogImageOptions> = {}) {
  const fake = await startFakeCog({ stepMs: 3, steps: 4, ...fakeOptions });
  const engine = createCogImageEngine({ baseURL: fake.url, pollIntervalMs: 5, ...engineOptions });
  closers.push(engine, fake);
  return { fake, engine };
}

function request(overrides: Partial<ImageRequest> = {}): ImageRequest {
  return { jobId: 'job-1', payload: samplePayload(), faceModel: null, ...overrides };
}

const puts = (fake: FakeCog) => fake.requests.filter((recorded) => recorded.method === 'PUT');

beforeAll(async () => {
  files = await startFileHost();
});
afterEach(async () => {
  await Promise.all(closers.splice(0).map((closer) => closer.close()));
});
afterAll(() => files.close());

describe('Cog image engine', () => {
  it('runs the prediction under the job id and decodes the data: URL outputs', async () => {
    const { fake, engine } = await cogWith();
    const run = recordingRun();
    const images = await engine.generate(request({ payload: samplePayload({ samples: 2 }) }), run);

    expect(engine.provider).toBe('cog');
    expect(engine.concurrency).toBe(1);
    expect(images.map(pngSize)).toEqual([{ width: 96, height: 64 }, { width: 96, height: 64 }]);
    expect(run.submittedIds).toEqual(['job-1']);
    expect(puts(fake)).toHaveLength(1);
    expect(puts(fake)[0]).toMatchObject({ path: '/predictions/job-1' });
    expect(puts(fake)[0]!.body.toString()).toBe(JSON.stringify({ input: sampleInput({ num_outputs: 2 }) }));
  });

  it('reproduces the same images from the same seed, and others from another', async () => {
    const { engine } = await cogWith();
    const first = await engine.generate(request(), recordingRun());
    const again = await engine.generate(request({ jobId: 'job-2' }), recordingRun());
    const other = await engine.generate(request({ jobId: 'job-3', payload: samplePayload({ seed: 5 }) }), recordingRun());
    expect(Buffer.from(again[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(true);
    expect(Buffer.from(other[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(false);
  });

  it('sends the face model as lora_1, which the container downloads', async () => {
    const { fake, engine } = await cogWith();
    const archiveUrl = files.put('cog-face.tar', faceArchive('cog-face'), 'application/x-tar');
    const plain = await engine.generate(request(), recordingRun());
    const personal = await engine.generate(request({ jobId: 'job-2', faceModel: { id: 'face', archiveUrl, triggerToken: '<s0><s1>' } }), recordingRun());
    expect(puts(fake).at(-1)?.body.toString()).toBe(JSON.stringify({ input: sampleInput({ lora_1: archiveUrl }) }));
    expect(files.requests.some((recorded) => recorded.path === '/cog-face.tar')).toBe(true);
    expect(Buffer.from(personal[0]!.data).equals(Buffer.from(plain[0]!.data))).toBe(false);
  });

  it('reports a failed prediction with the model\'s error', async () => {
    const { fake, engine } = await cogWith();
    fake.failNext('CUDA out of memory');
    const error = await engineFailure(engine.generate(request(), recordingRun()));
    expect(error).toMatchObject({ provider: 'cog', retryable: false });
    expect(error.upstream).toBe('Cog prediction job-1 failed: CUDA out of memory');
  });

  it('reports invalid input field by field', async () => {
    const { engine } = await cogWith();
    const error = await engineFailure(engine.generate(request({ payload: samplePayload({ samples: 9 }) }), recordingRun()));
    expect(error).toMatchObject({ status: 422, retryable: false });
    expect(error.upstream).toContain('input.num_outputs: Must be less than or equal to 4');
  });

  it('waits while the container is busy with another prediction (409), then runs', async () => {
    const { fake, engine } = await cogWith();
    fake.hold();
    const other = httpRequest(`${fake.url}/predictions/someone-else`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: samplePayload() }) });
    await waitFor(() => fake.running === 1);
    const outcome = engine.generate(request(), recordingRun());
    await waitFor(() => puts(fake).length >= 3);
    fake.release();
    expect(await outcome).toHaveLength(1);
    await (await other).body.text();
    expect(fake.maxRunning).toBe(1);
    expect(fake.predictions.map((prediction) => prediction.id)).toEqual(['someone-else', 'job-1']);
  });

  it('gives up on a container that stays busy, as retryable', async () => {
    const { fake, engine } = await cogWith({}, { busyRetries: 2 });
    fake.answerNext({ method: 'PUT' }, { status: 409, body: { error: 'At capacity - all prediction slots busy', status: 'failed' } }, 3);
    const error = await engineFailure(engine.generate(request(), recordingRun()));
    expect(error).toMatchObject({ status: 409, retryable: true });
    expect(error.upstream).toBe('Cog answered 409: At capacity - all prediction slots busy');
  });

  it('waits for a container that is still starting', async () => {
    const { fake, engine } = await cogWith({ health: 'STARTING' });
    setTimeout(() => fake.setHealth('READY'), 40);
    expect(await engine.generate(request(), recordingRun())).toHaveLength(1);
    expect(fake.requests.some((recorded) => recorded.path === '/health-check')).toBe(true);
  });

  it('says plainly when the container failed its setup', async () => {
    const { fake, engine } = await cogWith();
    fake.setHealth('SETUP_FAILED', 'Loading weights\nOSError: sdxl weights not found at /src/weights');
    const error = await engineFailure(engine.generate(request(), recordingRun()));
    expect(error).toMatchObject({ code: 'ENGINE_UNAVAILABLE', retryable: false });
    expect(error.upstream).toContain('is SETUP_FAILED and needs a restart');
    expect(error.upstream).toContain('OSError: sdxl weights not found');
    expect(puts(fake)).toHaveLength(1);
  });

  it('after a restart, attaches to its earlier run by id and never runs two at once', async () => {
    // The Python Cog server lets a synchronous prediction run on after its client is gone.
    const connections = new Agent();
    const { fake, engine: before } = await cogWith({ cancelOnDisconnect: false, steps: 6, stepMs: 5 }, { dispatcher: connections });
    fake.hold();
    const abandoned = before.generate(request(), recordingRun()).catch(() => undefined);
    await waitFor(() => fake.running === 1);
    await connections.destroy(); // the connection drops, as when the process dies
    const after = createCogImageEngine({ baseURL: fake.url, pollIntervalMs: 5 });
    closers.push(after);
    const resumed = recordingRun({ resumeId: 'job-1' });
    const outcome = after.generate(request(), resumed);
    await waitFor(() => fake.requests.filter((recorded) => recorded.method === 'PUT').length >= 3);
    fake.release();
    const images = await outcome;
    await abandoned;

    expect(images.map(pngSize)).toEqual([{ width: 96, height: 64 }]);
    expect(resumed.submittedIds).toEqual([]);
    expect(resumed.progressValues.length).toBeGreaterThan(0);
    expect(fake.maxRunning).toBe(1);
    // Cog keeps no finished predictions: the earlier run's images are lost and made anew.
    expect(fake.predictions.map((prediction) => prediction.id)).toEqual(['job-1', 'job-1']);
  });

  it('cancels the prediction at the container on abort', async () => {
    const { fake, engine } = await cogWith({ cancelOnDisconnect: false });
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(engine.generate(request(), run));
    await waitFor(() => fake.running === 1);
    const reason = new TestAbort('time limit');
    run.controller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(fake.requests.some((recorded) => recorded.method === 'POST' && recorded.path === '/predictions/job-1/cancel')).toBe(true);
    expect(fake.predictions[0]?.status).toBe('canceled');
  });

  it('leaves the prediction running when the service stops', async () => {
    const { fake, engine } = await cogWith({ cancelOnDisconnect: false });
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(engine.generate(request(), run));
    await waitFor(() => fake.running === 1);
    const reason = new ServiceStopping();
    run.controller.abort(reason);

    expect(await outcome).toBe(reason);
    expect(fake.requests.some((recorded) => recorded.path.endsWith('/cancel'))).toBe(false);
    fake.release();
    await waitFor(() => fake.running === 0);
    expect(fake.predictions[0]?.status).toBe('succeeded');
  });

  it('times out when the container never answers', async () => {
    const { fake, engine } = await cogWith({}, { headersTimeoutMs: 150 });
    fake.stall({ method: 'PUT' });
    const error = await engineFailure(engine.generate(request(), recordingRun()));
    expect(error).toMatchObject({ code: 'ENGINE_TIMEOUT', retryable: true });
  });
});
