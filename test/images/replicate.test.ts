import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServiceStopping } from '../../src/core/errors.js';
import type { ImageRequest } from '../../src/core/ports.js';
import { type ReplicateImageOptions, createReplicateImageEngine } from '../../src/engines/image/replicate.js';
import { type FileHost, startFileHost } from '../fakes/images/file-host.js';
import { type FakeReplicate, startFakeReplicate } from '../fakes/images/fake-replicate.js';
import { TestAbort, engineFailure, faceArchive, pngSize, recordingRun, rejection, sampleInput, samplePayload, waitFor } from './image-helpers.js';

let fake: FakeReplicate;
let files: FileHost;
const engines: Array<{ close(): Promise<void> }> = [];

function engineWith(overrides: Partial<ReplicateImageOptions> = {}) {
  const engine = createReplicateImageEngine({ baseURL: fake.apiURL, apiToken: 'test-token', model: 'stability-ai/sdxl', pollIntervalMs: 5, ...overrides });
  engines.push(engine);
  return engine;
}

function request(overrides: Partial<ImageRequest> = {}): ImageRequest {
  return { jobId: 'job-1', payload: samplePayload(), faceModel: null, ...overrides };
}

const creations = () => fake.requests.filter((recorded) => recorded.method === 'POST' && /\/predictions$/.test(recorded.path));

beforeAll(async () => {
  fake = await startFakeReplicate({ startingMs: 5, stepMs: 3, steps: 4 });
  files = await startFileHost();
});
afterEach(() => {
  fake.clearScripts();
  fake.release();
  fake.requests.length = 0;
  fake.delivery.requests.length = 0;
});
afterAll(async () => {
  await Promise.all(engines.map((engine) => engine.close()));
  await Promise.all([fake.close(), files.close()]);
});

describe('Replicate image engine', () => {
  it('creates a prediction by model, follows it, and downloads the outputs without our token', async () => {
    const engine = engineWith();
    const run = recordingRun();
    const images = await engine.generate(request({ payload: samplePayload({ samples: 2 }) }), run);

    expect(engine.provider).toBe('replicate');
    expect(engine.concurrency).toBe(4);
    expect(images.map(pngSize)).toEqual([{ width: 96, height: 64 }, { width: 96, height: 64 }]);
    const [creation] = creations();
    expect(creation).toMatchObject({ path: '/v1/models/stability-ai/sdxl/predictions' });
    expect(creation!.headers.authorization).toBe('Bearer test-token');
    expect(creation!.body.toString()).toBe(JSON.stringify({ input: sampleInput({ num_outputs: 2 }) }));
    expect(run.submittedIds).toEqual([fake.predictions.at(-1)!.id]);
    expect(fake.requests.some((recorded) => recorded.method === 'GET' && recorded.path === `/v1/predictions/${run.submittedIds[0]}`)).toBe(true);
    expect(fake.delivery.requests).toHaveLength(2);
    for (const download of fake.delivery.requests) expect(download.headers.authorization).toBeUndefined();
  });

  it('creates by version when the model is pinned', async () => {
    await engineWith({ model: 'stability-ai/sdxl:7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc' }).generate(request(), recordingRun());
    expect(creations()[0]).toMatchObject({ path: '/v1/predictions' });
    expect(creations()[0]!.body.toString()).toBe(JSON.stringify({ version: '7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc', input: sampleInput() }));
    expect(fake.predictions.at(-1)?.route).toBe('version');
  });

  it('reproduces the same images from the same seed, and others from another', async () => {
    const engine = engineWith();
    const first = await engine.generate(request(), recordingRun());
    const again = await engine.generate(request(), recordingRun());
    const other = await engine.generate(request({ payload: samplePayload({ seed: 4321 }) }), recordingRun());
    expect(Buffer.from(again[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(true);
    expect(Buffer.from(other[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(false);
  });

  it('sends the face model as lora_1, which the model downloads and which changes the image', async () => {
    const engine = engineWith();
    const archiveUrl = files.put('face-1.tar', faceArchive('face-1'), 'application/x-tar');
    const plain = await engine.generate(request(), recordingRun());
    const personal = await engine.generate(request({ payload: samplePayload({ loraScale: 0.6 }), faceModel: { id: 'face-1', archiveUrl, triggerToken: '<s0><s1>' } }), recordingRun());

    expect(creations().at(-1)!.body.toString()).toBe(JSON.stringify({ input: sampleInput({ lora_scale: 0.6, lora_1: archiveUrl }) }));
    expect(files.requests.some((recorded) => recorded.path === '/face-1.tar')).toBe(true);
    expect(Buffer.from(personal[0]!.data).equals(Buffer.from(plain[0]!.data))).toBe(false);
  });

  it('fails with the model\'s reason when the face archive cannot be downloaded', async () => {
    const archiveUrl = files.put('gone.tar', faceArchive('gone'));
    files.remove('gone.tar');
    const error = await engineFailure(engineWith().generate(request({ faceModel: { id: 'gone', archiveUrl, triggerToken: '<s0><s1>' } }), recordingRun()));
    expect(error).toMatchObject({ provider: 'replicate', retryable: false });
    expect(error.upstream).toContain('failed: Failed to download LoRA weights');
    expect(error.upstream).toContain('HTTP 404');
  });

  it('reports progress from the tqdm lines in the logs', async () => {
    const slow = await startFakeReplicate({ stepMs: 15, steps: 10 });
    const engine = createReplicateImageEngine({ baseURL: slow.apiURL, apiToken: 'test-token', model: 'a/b', pollIntervalMs: 5 });
    const run = recordingRun();
    await engine.generate(request(), run);
    await engine.close();
    await slow.close();
    expect(run.progressValues.length).toBeGreaterThanOrEqual(3);
    expect(run.progressValues.every((value, index) => value > 0 && value <= 1 && (index === 0 || value > run.progressValues[index - 1]!))).toBe(true);
  });

  it('follows the same prediction after a restart instead of creating another', async () => {
    fake.hold();
    const before = engineWith();
    const firstRun = recordingRun();
    const abandoned = before.generate(request(), firstRun).catch(() => undefined);
    const id = await firstRun.firstSubmission;
    await before.close(); // the process that created it is gone

    const after = engineWith();
    const resumed = recordingRun({ resumeId: id });
    const outcome = after.generate(request(), resumed);
    fake.release();
    const images = await outcome;
    await abandoned;

    expect(images.map(pngSize)).toEqual([{ width: 96, height: 64 }]);
    expect(creations()).toHaveLength(1);
    expect(resumed.submittedIds).toEqual([]);
    expect(fake.predictions.filter((prediction) => prediction.id === id)).toHaveLength(1);
  });

  it('starts over when the prediction it resumes was canceled', async () => {
    fake.hold();
    const engine = engineWith();
    const first = recordingRun();
    const outcome = rejection(engine.generate(request(), first));
    const id = await first.firstSubmission;
    first.controller.abort(new TestAbort('stopping'));
    await outcome;

    fake.release();
    const resumed = recordingRun({ resumeId: id });
    await engine.generate(request(), resumed);
    expect(resumed.submittedIds).toHaveLength(1);
    expect(resumed.submittedIds[0]).not.toBe(id);
  });

  it('cancels the prediction at Replicate on abort and stops polling', async () => {
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(engineWith().generate(request(), run));
    const id = await run.firstSubmission;
    const reason = new TestAbort('time limit');
    run.controller.abort(reason);

    expect(await outcome).toBe(reason);
    expect(fake.requests.some((recorded) => recorded.method === 'POST' && recorded.path === `/v1/predictions/${id}/cancel`)).toBe(true);
    expect(fake.predictions.find((prediction) => prediction.id === id)?.status).toBe('canceled');
    const polls = fake.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(fake.requests.length).toBe(polls);
  });

  it('leaves the prediction running when the service stops, for the next process to follow', async () => {
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(engineWith().generate(request(), run));
    const id = await run.firstSubmission;
    const reason = new ServiceStopping();
    run.controller.abort(reason);

    expect(await outcome).toBe(reason);
    expect(fake.requests.some((recorded) => recorded.path.endsWith('/cancel'))).toBe(false);
    fake.release();
    const resumed = recordingRun({ resumeId: id });
    expect(await engineWith().generate(request(), resumed)).toHaveLength(1);
    expect(creations()).toHaveLength(1);
    expect(fake.predictions.find((prediction) => prediction.id === id)?.status).toBe('succeeded');
  });

  it('reports a failed prediction with its error, as not worth retrying', async () => {
    fake.failNext('NSFW content detected. Try running it again, or try a different prompt.');
    const error = await engineFailure(engineWith().generate(request(), recordingRun()));
    expect(error).toMatchObject({ provider: 'replicate', retryable: false });
    expect(error.upstream).toMatch(/^Replicate prediction \w+ failed: NSFW content detected/);
  });

  it('says so when the prediction was canceled at the engine by someone else', async () => {
    fake.hold();
    const run = recordingRun();
    const outcome = engineFailure(engineWith().generate(request(), run));
    const id = await run.firstSubmission;
    await fetch(`${fake.apiURL}/predictions/${id}/cancel`, { method: 'POST', headers: { authorization: 'Bearer test-token' } });
    const error = await outcome;
    expect(error.upstream).toContain('was canceled at the engine');
  });

  it('maps 401 and 422 answers to errors with Replicate\'s detail', async () => {
    const unauthorized = await engineFailure(engineWith({ apiToken: 'wrong' }).generate(request(), recordingRun()));
    expect(unauthorized).toMatchObject({ status: 401, retryable: false });
    expect(unauthorized.upstream).toBe('Replicate answered 401: You did not pass a valid authentication token');

    const invalid = await engineFailure(engineWith().generate(request({ payload: samplePayload({ samples: 5 }) }), recordingRun()));
    expect(invalid).toMatchObject({ status: 422, retryable: false });
    expect(invalid.upstream).toContain('input.num_outputs: Must be less than or equal to 4');
  });

  it('waits out a 429 as retry-after says, then creates the prediction', async () => {
    fake.rateLimitNext(0.1, 2);
    const started = Date.now();
    const images = await engineWith().generate(request(), recordingRun());
    expect(images).toHaveLength(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(creations()).toHaveLength(3);
  });

  it('gives up on 429 after the configured retries, as retryable', async () => {
    fake.rateLimitNext(0.01, 5);
    const error = await engineFailure(engineWith({ rateLimitRetries: 1 }).generate(request(), recordingRun()));
    expect(error).toMatchObject({ status: 429, retryable: true });
    expect(error.upstream).toContain('Request was throttled');
    expect(creations()).toHaveLength(2);
  });

  it('stops waiting out a 429 when aborted', async () => {
    fake.rateLimitNext(30);
    const run = recordingRun();
    const outcome = rejection(engineWith().generate(request(), run));
    await waitFor(() => creations().length === 1);
    const reason = new TestAbort('canceled');
    run.controller.abort(reason);
    expect(await outcome).toBe(reason);
  });

  it('maps a 5xx on creation to a retryable error', async () => {
    fake.answerNext({ method: 'POST' }, { status: 503, body: { title: 'Service Unavailable', detail: 'Replicate is temporarily unavailable', status: 503 } });
    const error = await engineFailure(engineWith().generate(request(), recordingRun()));
    expect(error).toMatchObject({ status: 503, retryable: true });
    expect(error.upstream).toContain('Replicate is temporarily unavailable');
  });

  it('rides out a few failed polls', async () => {
    fake.answerNext({ method: 'GET', path: /^\/v1\/predictions\// }, { status: 502, body: { detail: 'Bad gateway' } }, 2);
    expect(await engineWith().generate(request(), recordingRun())).toHaveLength(1);
  });

  it('says the outputs expired when they can no longer be downloaded', async () => {
    const engine = engineWith();
    const run = recordingRun();
    await engine.generate(request(), run);
    fake.expireFiles();
    const error = await engineFailure(engine.generate(request(), recordingRun({ resumeId: run.submittedIds[0]! })));
    expect(error).toMatchObject({ status: 404, retryable: false });
    expect(error.upstream).toContain('expired or removed');
  });

  it('runs as many predictions at once as it is given, four by default', async () => {
    fake.hold();
    const engine = engineWith();
    const outcomes = Array.from({ length: 4 }, (_, index) => engine.generate(request({ jobId: `job-${index}` }), recordingRun()));
    await waitFor(() => fake.running === 4);
    fake.release();
    expect((await Promise.all(outcomes)).map((images) => images.length)).toEqual([1, 1, 1, 1]);
    expect(fake.maxRunning).toBeGreaterThanOrEqual(4);
  });

  it('times out when Replicate does not answer', async () => {
    fake.stall({ method: 'POST' });
    const error = await engineFailure(engineWith({ headersTimeoutMs: 150 }).generate(request(), recordingRun()));
    expect(error).toMatchObject({ code: 'ENGINE_TIMEOUT', retryable: true });
  });
});
