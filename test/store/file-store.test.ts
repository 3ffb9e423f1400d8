import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import { DiskFileStore, mimeTypeOfKey } from '../../src/store/file-store.js';

describe('DiskFileStore', () => {
  let directory: string;
  let files: DiskFileStore;

  beforeEach(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-files-'));
    files = new DiskFileStore(path.join(directory, 'files'));
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('keys files by content: the same bytes give the same key, other bytes another', async () => {
    const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3]);
    const first = await files.put(bytes, 'image/png');
    const second = await files.put(Buffer.from(bytes), 'image/png');
    const other = await files.put(new Uint8Array([9, 9, 9]), 'image/png');
    const hash = createHash('sha256').update(bytes).digest('hex');
    expect(first).toEqual({ key: `${hash}.png`, mimeType: 'image/png', size: 7 });
    expect(second).toEqual(first);
    expect(other.key).not.toBe(first.key);
    expect(await files.read(first.key)).toEqual(Buffer.from(bytes));
  });

  it('names the extension after the MIME type and keeps the key flat', async () => {
    const jpeg = await files.put(new Uint8Array([1]), 'image/jpeg');
    const mp3 = await files.put(new Uint8Array([2]), 'Audio/MPEG; bitrate=128');
    const wav = await files.put(new Uint8Array([3]), 'audio/x-wav');
    expect(jpeg.key).toMatch(/^[0-9a-f]{64}\.jpg$/);
    expect(mp3).toMatchObject({ mimeType: 'audio/mpeg', key: expect.stringMatching(/\.mp3$/) });
    expect(wav).toMatchObject({ mimeType: 'audio/wav', key: expect.stringMatching(/\.wav$/) });
    expect(mimeTypeOfKey(jpeg.key)).toBe('image/jpeg');
    // Stored under two fan-out levels named after the hash.
    const fanned = path.join(directory, 'files', jpeg.key.slice(0, 2), jpeg.key.slice(2, 4), jpeg.key);
    expect(await readdir(path.dirname(fanned))).toContain(jpeg.key);
  });

  it('refuses MIME types it cannot name', async () => {
    const refused = files.put(new Uint8Array([1]), 'application/x-msdownload');
    await expect(refused).rejects.toBeInstanceOf(AppError);
    await expect(refused).rejects.toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('answers undefined for unknown keys and for anything that is not a key', async () => {
    const stored = await files.put(new Uint8Array([5, 6]), 'image/webp');
    const unknown = `${'0'.repeat(64)}.webp`;
    const attempts = [
      unknown,
      '../../../../etc/passwd',
      `../${stored.key}`,
      `${stored.key.slice(0, 2)}/${stored.key.slice(2, 4)}/${stored.key}`,
      `${stored.key}/../${stored.key}`,
      stored.key.toUpperCase(),
      `${stored.key}\0`,
      `${stored.key.slice(0, -5)}.exe`,
      '',
    ];
    for (const key of attempts) {
      expect(await files.read(key), key).toBeUndefined();
    }
    expect(mimeTypeOfKey('../../etc/passwd')).toBeUndefined();
  });

  it('leaves no temporary files, even when the same bytes are stored concurrently', async () => {
    const bytes = new Uint8Array(256 * 1024).fill(7);
    const results = await Promise.all(Array.from({ length: 20 }, () => files.put(bytes, 'audio/ogg')));
    expect(new Set(results.map((result) => result.key)).size).toBe(1);
    const [result] = results;
    await Promise.all(Array.from({ length: 10 }, (_, index) => files.put(new Uint8Array([index]), 'image/gif')));
    const names = await readdir(path.join(directory, 'files'), { recursive: true });
    expect(names.filter((name) => name.endsWith('.tmp'))).toEqual([]);
    expect(names.filter((name) => /\.(ogg|gif)$/.test(name))).toHaveLength(11);
    expect((await files.read(result!.key))?.equals(Buffer.from(bytes))).toBe(true);
  });
});
