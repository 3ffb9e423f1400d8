import { randomBytes } from 'node:crypto';
import { zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { type ZipLimits, readZip } from '../../../src/core/archives/read-zip.js';
import { AppError } from '../../../src/core/errors.js';
import { zipOfZeros } from '../../support/zip-bomb.js';

const limits: ZipLimits = { maxEntries: 50, maxEntryBytes: 10 * 1024 * 1024, maxTotalBytes: 100 * 1024 * 1024, maxRatio: 50, ratioAllowanceBytes: 1024 * 1024 };

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('readZip', () => {
  it('returns the entries, leaving out folders, resource forks and hidden files', async () => {
    const archive = zipSync({
      'a.png': new Uint8Array([1, 2, 3]),
      'folder/b.jpg': new Uint8Array(2000).fill(7),
      '__MACOSX/._a.png': new Uint8Array([0]),
      '.DS_Store': new Uint8Array([0]),
    });
    const entries = await readZip('photos', archive, limits);
    expect(entries.map((entry) => [entry.name, entry.data.byteLength])).toEqual([
      ['a.png', 3],
      ['folder/b.jpg', 2000],
    ]);
  });

  it('refuses a gigabyte of zeros by its declared size before inflating any of it', async () => {
    const error = await refusal(readZip('photos', zipOfZeros(1024), limits));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses a gigabyte of zeros with no declared size by its ratio, after a few megabytes', async () => {
    const error = await refusal(readZip('photos', zipOfZeros(1024, { declareSizes: false }), limits));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toContain('zip bomb');
    // One 4 KB piece of archive inflates to at most ~4 MB; the cap is checked after each.
    expect((error.details as { inflatedBytes: number }).inflatedBytes).toBeLessThan(6 * 1024 * 1024);
  });

  it('stops at the byte cap when the ratio is allowed', async () => {
    const error = await refusal(readZip('photos', zipOfZeros(64, { declareSizes: false }), { ...limits, maxRatio: 10_000, maxEntryBytes: 1024 ** 3, maxTotalBytes: 8 * 1024 * 1024 }));
    expect(error.message).toContain('more than 8 MB');
    expect((error.details as { inflatedBytes: number }).inflatedBytes).toBeLessThan(13 * 1024 * 1024);
  });

  it('stops at the entry cap', async () => {
    const many = Object.fromEntries(Array.from({ length: 60 }, (_, index) => [`${index}.png`, new Uint8Array([index])]));
    const error = await refusal(readZip('photos', zipSync(many), limits));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toContain('more than 50 entries');
  });

  it('names an unreadable zip as a field error', async () => {
    const archive = zipSync({ 'a.png': randomBytes(5000) });
    const error = await refusal(readZip('photos', archive.subarray(0, 1000), limits));
    expect(error.code).toBe('VALIDATION_FAILED');
  });

  it('inflates only the entries accepted, and an accept that throws refuses the archive', async () => {
    const archive = zipSync({ 'card.json': new Uint8Array([1]), 'assets/big.png': new Uint8Array(5000) });
    const entries = await readZip('card', archive, limits, { accept: (name) => name === 'card.json' });
    expect(entries.map((entry) => entry.name)).toEqual(['card.json']);
    const refused = await refusal(
      readZip('card', archive, limits, {
        accept: (name) => {
          if (name.startsWith('assets/')) throw new AppError('VALIDATION_FAILED', `refused ${name}`);
          return true;
        },
      }),
    );
    expect(refused.message).toBe('refused assets/big.png');
  });
});
