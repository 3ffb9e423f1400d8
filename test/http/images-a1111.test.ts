import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeA1111, startFakeA1111 } from '../fakes/images/fake-a1111.js';
import { type FakeReplicate, startFakeReplicate } from '../fakes/images/fake-replicate.js';
import { type Harness, startHarness } from './harness.js';

function photo(shade: number): Blob {
  const image = new PNG({ width: 32, height: 32 });
  image.data.fill(shade);
  return new Blob([new Uint8Array(PNG.sync.write(image))], { type: 'image/png' });
}

/** AUTOMATIC1111 draws; Replicate trains; the face model reaches A1111 as a LoRA file. */
describe('personalised images on AUTOMATIC1111', () => {
  let harness: Harness;
  let a1111: FakeA1111;
  let replicate: FakeReplicate;
  beforeAll(async () => {
    a1111 = await startFakeA1111({ stepMs: 1 });
    replicate = await startFakeReplicate();
    harness = await startHarness({
      environment: {
        IMAGE_ENGINE: 'a1111',
        A1111_BASE_URL: a1111.url,
        REPLICATE_API_TOKEN: 'test-token',
        REPLICATE_BASE_URL: replicate.apiURL,
        REPLICATE_TRAINER_VERSION: 'likeness/face-trainer:0123456789abcdef',
        REPLICATE_TRAINING_DESTINATION: 'likeness/faces',
      },
    });
  });
  afterAll(async () => {
    await harness.close();
    await a1111.close();
    await replicate.close();
  });

  it('fails a job whose LoRA is not installed, saying where to put it, then uses it once it is', async () => {
    const account = await harness.account('model');
    const form = new FormData();
    for (let index = 0; index < 5; index += 1) form.append('photos', photo(index * 50), `face-${index}.png`);
    const trained = await harness.call('POST', `/api/v0/characters/${account.characterId}/images/models`, { key: account.key, raw: form });
    expect(trained.status).toBe(201);
    const modelId = trained.body.model.id;
    const models = async () => (await harness.call('GET', `/api/v0/characters/${account.characterId}/images/models`, { key: account.key })).body.models;
    await expect.poll(async () => (await models())[0].status, { timeout: 60_000 }).toBe('SUCCESS');
    const balance = async () => (await harness.call('GET', `/api/v0/accounts/${account.id}/balance`, { key: account.key })).body.balance;
    const before = await balance();

    const body = { prompt: `<${account.characterId}> reading in a garden`, seed: 3, width: 64, height: 64, loraScale: 0.7, synchronous: true };
    const missing = await harness.call('POST', '/api/v0/images', { key: account.key, body });
    expect(missing.status).toBe(502);
    expect(missing.body.error.message).toContain(`models/Lora/likeness-${modelId}.safetensors`);
    expect(missing.body.error.message).not.toContain('127.0.0.1');
    expect(missing.body.error.message).toContain('refunded');
    expect(await balance()).toBe(before);

    a1111.copyLora(`likeness-${modelId}`);
    const drawn = await harness.call('POST', '/api/v0/images', { key: account.key, body });
    expect(drawn.status).toBe(200);
    const run = a1111.runs.at(-1)!;
    expect(run.appliedLoras).toEqual([`likeness-${modelId}:0.7`]);
    expect(run.prompt).toContain('<s0><s1> reading in a garden');
    expect(run.seed).toBe(3);
    expect(await balance()).toBe(before - 1);
  });
});
