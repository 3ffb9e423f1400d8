import { createHash } from 'node:crypto';
import { zipSync } from 'fflate';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeReplicate, startFakeReplicate } from '../fakes/images/fake-replicate.js';
import { type Harness, startHarness } from './harness.js';

const TRAINER = 'likeness/face-trainer:0123456789abcdef';

function replicateEnvironment(replicate: FakeReplicate, extra: Record<string, string> = {}): Record<string, string> {
  return {
    IMAGE_ENGINE: 'replicate',
    REPLICATE_API_TOKEN: 'test-token',
    REPLICATE_BASE_URL: replicate.apiURL,
    REPLICATE_IMAGE_MODEL: 'likeness/sdxl-faces',
    REPLICATE_TRAINER_VERSION: TRAINER,
    REPLICATE_TRAINING_DESTINATION: 'likeness/faces',
    STARTING_BALANCE: '30',
    ...extra,
  };
}

function photo(shade: number): Blob {
  const image = new PNG({ width: 32, height: 32 });
  image.data.fill(shade);
  return new Blob([new Uint8Array(PNG.sync.write(image))], { type: 'image/png' });
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('image jobs over HTTP without an engine', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness();
  });
  afterAll(async () => harness.close());

  it('answers 503 saying what to set', async () => {
    const { key } = await harness.account('nobody');
    const answer = await harness.call('POST', '/api/v0/images', { key, body: { prompt: 'a cat' } });
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('NOT_CONFIGURED');
    expect(answer.body.error.message).toContain('IMAGE_ENGINE');
  });
});

describe('image jobs over HTTP on Replicate', () => {
  let harness: Harness;
  let replicate: FakeReplicate;
  beforeAll(async () => {
    replicate = await startFakeReplicate();
    harness = await startHarness({ environment: replicateEnvironment(replicate, { IMAGE_SYNC_WAIT_SECONDS: '3' }) });
  });
  afterAll(async () => {
    await harness.close();
    await replicate.close();
  });

  const job = async (key: string, jobId: string) => (await harness.call('GET', `/api/v0/jobs/${jobId}`, { key })).body.job;
  const finished = async (key: string, jobId: string) => {
    await expect.poll(async () => (await job(key, jobId)).status, { timeout: 60_000 }).toMatch(/SUCCESS|FAILED|CANCELED/);
    return job(key, jobId);
  };
  const balance = async (account: { id: string; key: string }) =>
    (await harness.call('GET', `/api/v0/accounts/${account.id}/balance`, { key: account.key })).body.balance;

  it('names every invalid field in one 400 and charges nothing', async () => {
    const account = await harness.account('validator');
    const answer = await harness.call('POST', '/api/v0/images', {
      key: account.key,
      body: { prompt: '', width: 1030, height: 'tall', samples: 5, guidanceScale: 21, loraScale: -0.1, colour: 'red' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('VALIDATION_FAILED');
    const fields = answer.body.error.details.fields.map((field: { field: string }) => field.field);
    expect(fields).toEqual(expect.arrayContaining(['height', 'colour']));
    const missing = await harness.call('POST', '/api/v0/images', { key: account.key, body: { width: 512 } });
    expect(missing.body.error.details.fields).toEqual([{ field: 'prompt', message: expect.stringContaining('required') }]);
    const ranges = await harness.call('POST', '/api/v0/images', {
      key: account.key,
      body: { prompt: ' ', width: 1030, samples: 5, guidanceScale: 21, loraScale: -0.1 },
    });
    expect(ranges.body.error.details.fields.map((field: { field: string }) => field.field).sort()).toEqual(
      ['guidanceScale', 'loraScale', 'prompt', 'samples', 'width'],
    );
    expect(await balance(account)).toBe(30);
  });

  it('makes real images through the whole path, reproducible by seed', async () => {
    const account = await harness.account('painter');
    const created = await harness.call('POST', '/api/v0/images', {
      key: account.key,
      body: { prompt: 'a red fox in snow', width: 256, height: 192, samples: 2, seed: 1234, guidanceScale: 6 },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ success: true, jobId: expect.any(String), transactionId: expect.any(String) });
    const done = await finished(account.key, created.body.jobId);
    expect(done.status).toBe('SUCCESS');
    expect(done.statuses.map((entry: { status: string }) => entry.status)).toEqual(['SUCCESS', 'IN_PROGRESS', 'CREATED']);
    expect(done).toMatchObject({ accountId: account.id, type: 'IMAGE_INFERENCE', clientId: null, failure: null });
    // The spec's payload, byte for byte: names, values and order.
    expect(JSON.stringify(done.payload)).toBe(
      JSON.stringify({
        prompt: 'a red fox in snow',
        negative_prompt: '',
        width: 256,
        height: 192,
        num_outputs: 2,
        seed: 1234,
        guidance_scale: 6,
        num_inference_steps: 30,
        prompt_strength: 0.8,
        enable_face_inpainting: false,
        max_face_inpaint_size: 0.5,
        face_inpainting_prompt: '',
        face_inpainting_negative_prompt: '',
      }),
    );
    expect(done.outputFiles).toHaveLength(2);
    const [first] = done.outputFiles;
    expect(first).toMatchObject({ name: 'image-1.png', size: expect.any(Number), created: expect.any(Number), feedback: { like: null, feedback: null } });
    const bytes = await download(first.url);
    expect(bytes.length).toBe(first.size);
    const picture = PNG.sync.read(bytes);
    expect([picture.width, picture.height]).toEqual([256, 192]);
    expect(await balance(account)).toBe(28);

    const same = await harness.call('POST', '/api/v0/images', {
      key: account.key,
      body: { prompt: 'a red fox in snow', width: 256, height: 192, samples: 1, seed: 1234, guidanceScale: 6, synchronous: true },
    });
    expect(same.status).toBe(200);
    expect(same.body.output).toHaveLength(1);
    expect(sha(await download(same.body.output[0]))).toBe(sha(bytes));
    const other = await harness.call('POST', '/api/v0/images', {
      key: account.key,
      body: { prompt: 'a red fox in snow', width: 256, height: 192, seed: 999, guidanceScale: 6, synchronous: true },
    });
    expect(sha(await download(other.body.output[0]))).not.toBe(sha(bytes));
  });

  it('answers a synchronous request that outlives the wait with the job id to poll', async () => {
    const account = await harness.account('patient');
    replicate.hold();
    try {
      const answer = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'slow', synchronous: true, width: 64, height: 64 } });
      expect(answer.status).toBe(202);
      expect(answer.body).toMatchObject({ success: true, jobId: expect.any(String), status: 'IN_PROGRESS', output: null });
      expect(answer.headers.get('location')).toBe(`/api/v0/jobs/${answer.body.jobId}`);
      replicate.release();
      const done = await finished(account.key, answer.body.jobId);
      expect(done.failure).toBeNull();
      expect(done.status).toBe('SUCCESS');
    } finally {
      replicate.release();
    }
  });

  it('refunds a job the engine fails, and says why', async () => {
    const account = await harness.account('unlucky');
    replicate.failNext('CUDA out of memory');
    const created = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'x', samples: 3, width: 64, height: 64 } });
    const done = await finished(account.key, created.body.jobId);
    expect(done.status).toBe('FAILED');
    // What the engine said goes to the log; the job says what happened in our words.
    expect(done.failure.message).toBe('The image engine failed to answer. Try again; if it keeps failing, tell the operator.');
    await expect.poll(() => balance(account)).toBe(30);
    const transactions = (await harness.call('GET', `/api/v0/accounts/${account.id}/transactions`, { key: account.key })).body.transactions;
    expect(transactions.map((transaction: { type: string }) => transaction.type)).toEqual(['refund', 'debit', 'credit']);
  });

  it('cancels, takes feedback and lists jobs page by page', async () => {
    const account = await harness.account('critic');
    replicate.hold();
    const held = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'held', width: 64, height: 64 } });
    await expect.poll(async () => (await job(account.key, held.body.jobId)).status).toBe('IN_PROGRESS');
    const canceled = await harness.call('POST', `/api/v0/jobs/${held.body.jobId}/cancel`, { key: account.key });
    expect(canceled.status).toBe(200);
    expect(canceled.body.job.status).toBe('CANCELED');
    replicate.release();
    await expect.poll(() => replicate.predictions.find((task) => task.status === 'canceled') !== undefined).toBe(true);
    const again = await harness.call('POST', `/api/v0/jobs/${held.body.jobId}/cancel`, { key: account.key });
    expect(again.status).toBe(409);

    const made = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'judge me', width: 64, height: 64, synchronous: true, samples: 2 } });
    const liked = await harness.call('POST', `/api/v0/jobs/${made.body.jobId}/outputs/image-2.png/feedback`, { key: account.key, body: { like: true, feedback: 'sharp' } });
    expect(liked.status).toBe(200);
    expect(liked.body.job.outputFiles[1].feedback).toEqual({ like: true, feedback: 'sharp' });
    expect((await harness.call('POST', `/api/v0/jobs/${made.body.jobId}/outputs/image-7.png/feedback`, { key: account.key, body: { like: false } })).status).toBe(404);
    expect((await harness.call('POST', `/api/v0/jobs/${made.body.jobId}/outputs/image-1.png/feedback`, { key: account.key, body: {} })).status).toBe(400);
    const stranger = await harness.account('stranger');
    expect((await harness.call('GET', `/api/v0/jobs/${made.body.jobId}`, { key: stranger.key })).status).toBe(404);

    const first = await harness.call('GET', '/api/v0/jobs?limit=1', { key: account.key });
    expect(first.body.jobs.map((entry: { id: string }) => entry.id)).toEqual([made.body.jobId]);
    const second = await harness.call('GET', `/api/v0/jobs?limit=1&cursor=${first.body.nextCursor}`, { key: account.key });
    expect(second.body.jobs.map((entry: { id: string }) => entry.id)).toEqual([held.body.jobId]);
    expect(second.body.nextCursor).toBeUndefined();
    const byAdmin = await harness.call('GET', `/api/v0/jobs?accountId=${account.id}&limit=5`);
    expect(byAdmin.body.jobs).toHaveLength(2);
    expect((await harness.call('GET', '/api/v0/jobs')).body.error.details.fields[0].field).toBe('query.accountId');
  });

  it('never overspends under concurrent requests', async () => {
    const account = await harness.account('spender');
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'x', samples: 3, width: 64, height: 64 } })),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(10);
    expect(answers.filter((answer) => answer.status === 402).every((answer) => answer.body.error.code === 'BALANCE_INSUFFICIENT')).toBe(true);
    expect(await balance(account)).toBe(0);
  });

  it('trains a face from photos, then draws the character with it', async () => {
    const account = await harness.account('sitter');
    const form = new FormData();
    for (let index = 0; index < 6; index += 1) form.append('photos', photo(index * 40), `face-${index}.png`);
    const started = await harness.call('POST', `/api/v0/characters/${account.characterId}/images/models`, { key: account.key, raw: form });
    expect(started.status).toBe(201);
    expect(started.body.model).toMatchObject({ status: 'IN_PROGRESS', jobId: started.body.jobId });
    expect(started.body.model.url).toBeUndefined();
    const models = async () => (await harness.call('GET', `/api/v0/characters/${account.characterId}/images/models`, { key: account.key })).body.models;
    await expect.poll(async () => (await models())[0].status, { timeout: 60_000 }).toBe('SUCCESS');
    const [model] = await models();
    expect(model.url).toContain('/files/');
    expect((await download(model.url)).length).toBeGreaterThan(0);
    // The trainer fetched our zip of all six photos.
    expect(replicate.trainings.at(-1)).toMatchObject({ photoCount: 6, destination: 'likeness/faces' });
    const training = await job(account.key, started.body.jobId);
    expect(training.type).toBe('FACE_MODEL_TRAINING');
    expect(training.payload.input_images).toContain('/files/');
    expect(JSON.stringify(training.payload)).toBe(
      JSON.stringify({ character_id: account.characterId, face_model_id: model.id, photo_count: 6, input_images: training.payload.input_images }),
    );

    const plain = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'portrait, studio light', seed: 77, width: 128, height: 128, synchronous: true } });
    const personal = await harness.call('POST', '/api/v0/images', {
      key: account.key,
      body: { prompt: `portrait of <${account.characterId}>, studio light`, seed: 77, width: 128, height: 128, loraScale: 0.9, synchronous: true },
    });
    expect(personal.status).toBe(200);
    const personalJob = await job(account.key, personal.body.jobId);
    const personalPayload = {
      prompt: 'portrait of <s0><s1>, studio light',
      negative_prompt: '',
      width: 128,
      height: 128,
      num_outputs: 1,
      seed: 77,
      guidance_scale: 7.5,
      num_inference_steps: 30,
      prompt_strength: 0.8,
      enable_face_inpainting: true,
      max_face_inpaint_size: 0.5,
      face_inpainting_prompt: 'a photo of <s0><s1>',
      face_inpainting_negative_prompt: 'blurry, deformed, disfigured',
      lora_scale: 0.9,
    };
    expect(personalJob.payload.lora_1).toContain('/files/');
    expect(JSON.stringify(personalJob.payload)).toBe(JSON.stringify({ ...personalPayload, lora_1: personalJob.payload.lora_1 }));
    // The model got the same names, in the same order, as its `input`.
    const input = replicate.predictions.at(-1)!.input;
    expect(input.lora_1).toEqual(expect.stringContaining('/files/'));
    expect(JSON.stringify(input)).toBe(JSON.stringify({ ...personalPayload, lora_1: input.lora_1 }));
    expect(sha(await download(personal.body.output[0]))).not.toBe(sha(await download(plain.body.output[0])));
  });

  it('refuses bad photos before charging, and a character without a model with 409', async () => {
    const account = await harness.account('camera-shy');
    const form = new FormData();
    for (let index = 0; index < 4; index += 1) form.append('photos', photo(index), `face-${index}.png`);
    form.append('photos', new Blob(['not a picture'], { type: 'image/png' }), 'fake.png');
    const answer = await harness.call('POST', `/api/v0/characters/${account.characterId}/images/models`, { key: account.key, raw: form });
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.fields).toEqual([{ field: 'photos.fake.png', message: expect.stringContaining('PNG, JPEG or WebP') }]);
    const few = new FormData();
    few.append('photos', photo(1), 'one.png');
    expect((await harness.call('POST', `/api/v0/characters/${account.characterId}/images/models`, { key: account.key, raw: few })).body.error.message).toContain('5 to 30');
    const zip = zipSync({ 'a.png': new Uint8Array(await photo(1).arrayBuffer()), 'b.png': new Uint8Array(await photo(2).arrayBuffer()) });
    const zipped = await harness.call('POST', `/api/v0/characters/${account.characterId}/images/models`, {
      key: account.key,
      raw: zip,
      headers: { 'content-type': 'application/zip' },
    });
    expect(zipped.status).toBe(400);
    expect(zipped.body.error.message).toContain('got 2');
    const text = await harness.call('POST', `/api/v0/characters/${account.characterId}/images/models`, { key: account.key, body: { photos: [] } });
    expect(text.status).toBe(415);
    expect(await balance(account)).toBe(30);
    const noModel = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: `<${account.characterId}> waving` } });
    expect(noModel.status).toBe(409);
    expect(noModel.body.error.code).toBe('FACE_MODEL_NOT_READY');
    expect(noModel.body.error.message).toContain('camera-shy');
  });

  // Last in this group: the fake's file host stays expired afterwards.
  it('keeps the outputs after the engine\'s URLs expire', async () => {
    const account = await harness.account('archivist');
    const made = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'keep me', width: 64, height: 64, synchronous: true } });
    const bytes = await download(made.body.output[0]);
    replicate.expireFiles();
    const done = await job(account.key, made.body.jobId);
    expect(sha(await download(done.outputFiles[0].url))).toBe(sha(bytes));
  });
});

describe('image jobs across a restart', () => {
  let harness: Harness;
  let replicate: FakeReplicate;
  beforeAll(async () => {
    replicate = await startFakeReplicate();
    harness = await startHarness({ environment: replicateEnvironment(replicate) });
  });
  afterAll(async () => {
    await harness.close();
    await replicate.close();
  });

  it('follows a prediction that was running when the service stopped, without sending it again', async () => {
    const account = await harness.account('restarter');
    replicate.hold();
    const created = await harness.call('POST', '/api/v0/images', { key: account.key, body: { prompt: 'across a restart', width: 64, height: 64 } });
    await expect.poll(() => replicate.predictions.length).toBe(1);
    await harness.restart();
    replicate.release();
    await expect
      .poll(async () => (await harness.call('GET', `/api/v0/jobs/${created.body.jobId}`, { key: account.key })).body.job.status, { timeout: 10_000 })
      .toBe('SUCCESS');
    expect(replicate.predictions).toHaveLength(1);
  });
});
