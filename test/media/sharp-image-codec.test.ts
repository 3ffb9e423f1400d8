import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import { createSharpImageCodec } from '../../src/media/sharp-image-codec.js';

const codec = createSharpImageCodec({ maxPixels: 4_000_000, maxFrames: 1 });

function solid(width: number, height: number, format: 'png' | 'jpeg' | 'webp'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#3366cc' } })[format]().toBuffer();
}

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('sharp image codec', () => {
  it('reads the real format and size of PNG, JPEG and WebP', async () => {
    for (const format of ['png', 'jpeg', 'webp'] as const) {
      const info = await codec.inspect('image', await solid(300, 200, format));
      expect(info).toEqual({ mimeType: `image/${format}`, width: 300, height: 200, frames: 1 });
    }
  });

  it('refuses a bare PNG signature and header with no image behind it', async () => {
    const header = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);
    const error = await refusal(codec.inspect('avatar', header));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toContain('avatar is not a readable image');
  });

  it('refuses a decompression bomb by its header: 3000 × 3000 over a 4 MP limit', async () => {
    const bomb = await solid(3000, 3000, 'png');
    expect(bomb.byteLength).toBeLessThan(200_000);
    const error = await refusal(codec.inspect('image', bomb));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toContain('4,000,000 pixels');
  });

  it('refuses animations and other formats', async () => {
    const gif = await sharp({ create: { width: 10, height: 10, channels: 3, background: '#000' } }).gif().toBuffer();
    expect((await refusal(codec.inspect('image', gif))).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    // Every still image is one frame; a codec allowing none shows the frame check at work.
    const noFrames = createSharpImageCodec({ maxPixels: 4_000_000, maxFrames: 0 });
    const error = await refusal(noFrames.inspect('image', await solid(10, 10, 'webp')));
    expect(error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(error.message).toContain('an animation of 1 frames');
  });

  it('fits a large image into 1024 px on its long side and never enlarges a small one', async () => {
    const fitted = await codec.fit('image', await solid(2000, 1000, 'jpeg'), 1024);
    expect([fitted.mimeType, fitted.width, fitted.height]).toEqual(['image/jpeg', 1024, 512]);
    expect((await codec.inspect('image', fitted.data)).width).toBe(1024);
    const small = await codec.fit('image', await solid(300, 600, 'webp'), 1024);
    expect([small.mimeType, small.width, small.height]).toEqual(['image/png', 300, 600]);
  });

  it('refuses a file cut short when decoding it whole', async () => {
    const whole = await sharp({ create: { width: 400, height: 400, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
    const cut = whole.subarray(0, Math.floor(whole.byteLength / 2));
    expect((await refusal(codec.fit('image', cut, 1024))).code).toBe('VALIDATION_FAILED');
  });
});
