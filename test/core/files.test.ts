import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Files } from '../../src/core/files.js';
import { DiskFileStore } from '../../src/store/file-store.js';

describe('Files', () => {
  let directory: string;
  let files: Files;
  let store: DiskFileStore;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-files-'));
    store = new DiskFileStore(path.join(directory, 'files'));
    files = new Files(store);
  });
  afterEach(() => rm(directory, { recursive: true, force: true }));

  it('reads a stored file with the type its key names', async () => {
    const stored = await store.put(Buffer.from('ID3 not really an mp3'), 'audio/mpeg');
    expect(await files.read(stored.key)).toEqual({ bytes: Buffer.from('ID3 not really an mp3'), mimeType: 'audio/mpeg' });
  });

  it('answers NOT_FOUND for a key it never made or no longer holds, without touching the disk for foreign keys', async () => {
    await expect(files.read('../../etc/passwd')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(files.read(`${'ab'.repeat(32)}.png`)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
