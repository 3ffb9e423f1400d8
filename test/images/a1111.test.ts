import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServiceStopping } from '../../src/core/errors.js';
import type { ImageEngine, ImageRequest } from '../../src/core/ports.js';
import { createA1111ImageEngine } from '../../src/engines/image/a1111.js';
import { type FakeA1111, startFakeA1111 } from '../fakes/images/fake-a1111.js';
import { TestAbort, engineFailure, pngSize, recordingRun, rejection, samplePayload, waitFor } from './image-helpers.js';

const FACE = { id: 'face-1', archiveUrl: 'http://127.0.0.1:9/never-fetched.tar', triggerToken: '<s0><s1>' };
let fake: FakeA1111;
let engine: ImageEngine;

function request(overrides: Partial<ImageRequest> = {}): ImageRequest {
  return { jobId: 'job-1', payload: samplePayload(), faceModel: null, ...overrides };
}

beforeAll(async () => {
  fake = await startFakeA1111({ loras: ['likeness-face-1'], stepMs: 2 });
  engine = createA1111ImageEngine({ baseURL: fake.url, pollIntervalMs: 5, headersTimeoutMs: 2_000 });
});
afterEach(() => {
  fake.clearScripts();
  fake.release();
  fake.requests.length = 0;
  fake.runs.length = 0;
});
afterAll(async () => {
  await engine.close();
  await fake.close();
});

describe('AUTOMATIC1111 image engine', () => {
  it('maps the payload onto txt2img and returns the images as real PNGs', async () => {
    const run = recordingRun();
    const files = await engine.generate(request({ payload: samplePayload({ samples: 2 }) }), run);

    expect(engine.provider).toBe('automatic1111');
    expect(engine.concurrency).toBe(1);
    expect(files).toHaveLength(2);
    for (const file of files) expect(pngSize(file)).toEqual({ width: 96, height: 64 });
    expect(run.submittedIds).toEqual(['a1111:job-1']);
    const post = fake.requests.find((recorded) => recorded.path === '/sdapi/v1/txt2img');
    expect(post?.body.toString()).toBe(JSON.stringify({
      prompt: 'a portrait of <s0><s1> in a sunflower field, golden hour',
      negative_prompt: 'blurry, deformed',
      width: 96,
      height: 64,
      batch_size: 2,
      n_iter: 1,
      seed: 1234,
      cfg_scale: 7.5,
      steps: 8,
    }));
    expect(fake.requests.some((recorded) => recorded.path === '/sdapi/v1/loras')).toBe(false);
  });

  it('reproduces the same images from the same seed, and others from another', async () => {
    const first = await engine.generate(request(), recordingRun());
    const again = await engine.generate(request(), recordingRun());
    const other = await engine.generate(request({ payload: samplePayload({ seed: 99 }) }), recordingRun());
    expect(Buffer.from(again[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(true);
    expect(Buffer.from(other[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(false);
  });

  it('reports progress from /progress while txt2img runs, never backwards', async () => {
    const run = recordingRun();
    await engine.generate(request({ payload: samplePayload({ steps: 60 }) }), run);
    expect(run.progressValues.length).toBeGreaterThanOrEqual(3);
    expect(run.progressValues.every((value, index) => value > 0 && value <= 1 && (index === 0 || value > run.progressValues[index - 1]!))).toBe(true);
    const poll = fake.requests.find((recorded) => recorded.path === '/sdapi/v1/progress');
    expect(poll?.query.get('skip_current_image')).toBe('true');
  });

  it('applies a face model as a LoRA tag after checking the server has it', async () => {
    const plain = await engine.generate(request(), recordingRun());
    const files = await engine.generate(request({ payload: samplePayload({ loraScale: 0.6 }), faceModel: FACE }), recordingRun());

    const post = fake.requests.find((recorded) => recorded.path === '/sdapi/v1/txt2img' && String((recorded.json as { prompt: string }).prompt).includes('<lora:'));
    expect((post?.json as { prompt: string }).prompt).toBe(`${samplePayload().prompt} <lora:likeness-face-1:0.6>`);
    expect(fake.runs.at(-1)?.appliedLoras).toEqual(['likeness-face-1:0.6']);
    expect(Buffer.from(files[0]!.data).equals(Buffer.from(plain[0]!.data))).toBe(false);
  });

  it('refuses a face model whose LoRA is not installed, saying how to install it', async () => {
    const error = await engineFailure(engine.generate(request({ faceModel: { ...FACE, id: 'face-2' } }), recordingRun()));
    expect(error).toMatchObject({ provider: 'automatic1111', retryable: false });
    expect(error.upstream).toContain('lora.safetensors');
    expect(error.upstream).toContain('models/Lora/likeness-face-2.safetensors');
    expect(error.upstream).toContain('POST /sdapi/v1/refresh-loras');
    expect(fake.requests.map((recorded) => recorded.path)).toEqual(['/sdapi/v1/loras', '/sdapi/v1/refresh-loras', '/sdapi/v1/loras']);
  });

  it('finds a LoRA copied in after start-up by refreshing the list once', async () => {
    fake.copyLora('likeness-face-3');
    await engine.generate(request({ faceModel: { ...FACE, id: 'face-3' } }), recordingRun());
    expect(fake.runs.at(-1)?.appliedLoras).toEqual(['likeness-face-3:1']);
  });

  it('interrupts A1111 on abort and rejects with the reason, polling no more', async () => {
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(engine.generate(request(), run));
    await waitFor(() => fake.running === 1);
    const reason = new TestAbort('canceled by the person');
    run.controller.abort(reason);

    expect(await outcome).toBe(reason);
    expect(fake.requests.some((recorded) => recorded.path === '/sdapi/v1/interrupt')).toBe(true);
    await waitFor(() => fake.running === 0);
    expect(fake.runs.at(-1)?.interrupted).toBe(true);
    const polls = fake.requests.filter((recorded) => recorded.path === '/sdapi/v1/progress').length;
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(fake.requests.filter((recorded) => recorded.path === '/sdapi/v1/progress').length).toBe(polls);
  });

  it('leaves the generation running when the service stops', async () => {
    fake.hold();
    const run = recordingRun();
    const outcome = rejection(engine.generate(request(), run));
    await waitFor(() => fake.running === 1);
    const reason = new ServiceStopping();
    run.controller.abort(reason);

    expect(await outcome).toBe(reason);
    fake.release();
    await waitFor(() => fake.running === 0);
    expect(fake.requests.some((recorded) => recorded.path === '/sdapi/v1/interrupt')).toBe(false);
    expect(fake.runs.at(-1)?.interrupted).toBe(false);
  });

  it('generates again when resumed, without announcing the id a second time', async () => {
    const run = recordingRun({ resumeId: 'a1111:job-1' });
    const files = await engine.generate(request(), run);
    expect(files).toHaveLength(1);
    expect(run.submittedIds).toEqual([]);
  });

  it('reports an exception inside A1111 with its message, not its class name alone', async () => {
    fake.failNext('CUDA out of memory. Tried to allocate 2.00 GiB');
    const error = await engineFailure(engine.generate(request(), recordingRun()));
    expect(error).toMatchObject({ status: 500, retryable: true });
    expect(error.upstream).toBe('AUTOMATIC1111 answered 500: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB');
  });

  it('reports validation failures field by field, as not worth retrying', async () => {
    const error = await engineFailure(engine.generate(request({ payload: samplePayload({ width: 96.5 }) }), recordingRun()));
    expect(error).toMatchObject({ status: 422, retryable: false });
    expect(error.upstream).toContain('width: value is not a valid integer');
  });

  it('names an unknown sampler', async () => {
    const withSampler = createA1111ImageEngine({ baseURL: fake.url, samplerName: 'No Such Sampler', pollIntervalMs: 5 });
    const error = await engineFailure(withSampler.generate(request(), recordingRun()));
    await withSampler.close();
    expect(error).toMatchObject({ status: 404, retryable: false });
    expect(error.upstream).toContain('Sampler not found');
  });

  it('refuses an answer made with another seed', async () => {
    const overriding = await startFakeA1111({ overrideSeed: 7 });
    const other = createA1111ImageEngine({ baseURL: overriding.url, pollIntervalMs: 5 });
    const error = await engineFailure(other.generate(request(), recordingRun()));
    await other.close();
    await overriding.close();
    expect(error.upstream).toContain('seed 7 instead of 1234');
  });

  it('reads the real image type from the bytes', async () => {
    const jpegSigned = (png: Buffer): Buffer => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]), png]);
    const jpegServer = await startFakeA1111({ transcode: jpegSigned });
    const other = createA1111ImageEngine({ baseURL: jpegServer.url, pollIntervalMs: 5 });
    const files = await other.generate(request(), recordingRun());
    await other.close();
    await jpegServer.close();
    expect(files[0]!.mimeType).toBe('image/jpeg');
  });

  it('sends HTTP Basic credentials when A1111 runs with --api-auth', async () => {
    const guarded = await startFakeA1111({ auth: 'painter:secret' });
    const allowed = createA1111ImageEngine({ baseURL: guarded.url, apiKey: 'painter:secret', pollIntervalMs: 5 });
    const refused = createA1111ImageEngine({ baseURL: guarded.url, apiKey: 'painter:wrong', pollIntervalMs: 5 });
    expect(await allowed.generate(request(), recordingRun())).toHaveLength(1);
    const error = await engineFailure(refused.generate(request(), recordingRun()));
    await Promise.all([allowed.close(), refused.close()]);
    await guarded.close();
    expect(error).toMatchObject({ status: 401, retryable: false });
    expect(error.upstream).toContain('Incorrect username or password');
  });

  it('times out when txt2img never answers', async () => {
    const impatient = createA1111ImageEngine({ baseURL: fake.url, headersTimeoutMs: 150, pollIntervalMs: 5 });
    fake.stall({ path: '/sdapi/v1/txt2img' });
    const error = await engineFailure(impatient.generate(request(), recordingRun()));
    await impatient.close();
    expect(error).toMatchObject({ code: 'ENGINE_TIMEOUT', retryable: true });
    expect(error.upstream).toContain('did not start answering within 150 ms');
  });
});
