import { monitorEventLoopDelay } from 'node:perf_hooks';
import zlib from 'node:zlib';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeReplicate, startFakeReplicate } from '../fakes/images/fake-replicate.js';
import { zipOfZeros } from '../support/zip-bomb.js';
import { type Harness, startHarness } from './harness.js';

/** The first 16 bytes of a PNG: the signature and the start of its IHDR chunk, no more. */
const pngHeaderOnly = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);

function photo(shade: number): Uint8Array {
  const image = new PNG({ width: 16, height: 16 });
  image.data.fill(shade);
  return new Uint8Array(PNG.sync.write(image));
}

/** A whole, valid PNG header claiming `width × height` pixels, with one tiny compressed row. */
function pixelBomb(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body) >>> 0);
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', header),
      chunk('IDAT', zlib.deflateSync(Buffer.alloc(width + 1))),
      chunk('IEND', Buffer.alloc(0)),
    ]),
  );
}

describe('hostile uploads', () => {
  let harness: Harness;
  let replicate: FakeReplicate;
  let account: { id: string; characterId: string; key: string };
  beforeAll(async () => {
    replicate = await startFakeReplicate();
    harness = await startHarness({
      environment: {
        IMAGE_ENGINE: 'replicate',
        REPLICATE_API_TOKEN: 'test-token',
        REPLICATE_BASE_URL: replicate.apiURL,
        REPLICATE_IMAGE_MODEL: 'likeness/sdxl-faces',
        REPLICATE_TRAINER_VERSION: 'likeness/face-trainer:0123456789abcdef',
        REPLICATE_TRAINING_DESTINATION: 'likeness/faces',
        STARTING_BALANCE: '100',
      },
    });
    account = await harness.account('hostile');
  });
  afterAll(async () => {
    await harness.close();
    await replicate.close();
  });

  const train = (body: Uint8Array | FormData) =>
    harness.call('POST', `/api/v0/characters/${account.characterId}/images/models`, {
      key: account.key,
      raw: body instanceof FormData ? body : Buffer.from(body),
      ...(body instanceof FormData ? {} : { headers: { 'content-type': 'application/zip' } }),
    });

  for (const declareSizes of [true, false]) {
    it(`answers a 1 MB zip of a gigabyte of zeros (${declareSizes ? 'sizes declared' : 'streamed, no sizes'}) with 413 and keeps serving meanwhile`, async () => {
      const bomb = zipOfZeros(1024, { declareSizes });
      expect(bomb.byteLength).toBeLessThan(1.1 * 1024 * 1024);
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const heapBefore = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
      const answered: number[] = [];
      const bombed = train(bomb);
      // Ordinary requests made while the archive is read are answered.
      const ordinary = Promise.all(
        Array.from({ length: 5 }, async () => {
          const response = await harness.call('GET', `/api/v0/accounts/${account.id}/balance`, { key: account.key });
          answered.push(response.status);
        }),
      );
      const [answer] = await Promise.all([bombed, ordinary]);
      lag.disable();
      expect(answer.status).toBe(413);
      expect(answer.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(answered).toEqual([200, 200, 200, 200, 200]);
      // Generous: the old unzipSync held the loop for seconds on this archive.
      expect(lag.max / 1e6).toBeLessThan(1000);
      // Far from the gigabyte it would unpack to.
      const heapAfter = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
      expect(heapAfter - heapBefore).toBeLessThan(200 * 1024 * 1024);
      expect(replicate.trainings).toHaveLength(0);
    });
  }

  it('refuses 16 bytes of a PNG header as an avatar, saying the image is not readable', async () => {
    const answer = await harness.call('PUT', `/api/v0/characters/${account.characterId}/avatar`, {
      key: account.key,
      raw: Buffer.from(pngHeaderOnly),
      headers: { 'content-type': 'image/png' },
    });
    expect([400, 415]).toContain(answer.status);
    expect(answer.body.error.message).toMatch(/avatar .*(not a readable image|PNG, JPEG or WebP)/);
  });

  it('refuses 16 bytes of a PNG header as a face photo, naming it', async () => {
    const form = new FormData();
    for (let index = 0; index < 5; index += 1) form.append('photos', new Blob([Buffer.from(photo(index * 40))], { type: 'image/png' }), `face-${index}.png`);
    form.append('photos', new Blob([Buffer.from(pngHeaderOnly)], { type: 'image/png' }), 'header-only.png');
    const answer = await train(form);
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.fields).toEqual([{ field: 'photos.header-only.png', message: expect.stringMatching(/not a readable image|PNG, JPEG or WebP/) }]);
    expect(replicate.trainings).toHaveLength(0);
  });

  it('refuses a decompression bomb as an avatar by its pixel count', async () => {
    const bomb = pixelBomb(20_000, 20_000);
    expect(bomb.byteLength).toBeLessThan(100_000);
    const answer = await harness.call('PUT', `/api/v0/characters/${account.characterId}/avatar`, {
      key: account.key,
      raw: Buffer.from(bomb),
      headers: { 'content-type': 'image/png' },
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error.message).toContain('pixels');
  });

  it('refuses a compressed request body instead of inflating it', async () => {
    const answer = await harness.call('POST', '/api/v0/conversations', {
      key: account.key,
      raw: zlib.gzipSync(Buffer.alloc(10 * 1024 * 1024)),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(answer.status).toBe(415);
    expect(answer.body.error.message).toContain('uncompressed');
  });
});
