import { crc32, deflateSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { type CardLimits, type CardMimeType, defaultCardLimits, readCard } from '../../src/cards/index.js';
import { AppError } from '../../src/core/errors.js';
import { statusByCode } from '../../src/http/errors.js';
import { zipOfZeros } from '../support/zip-bomb.js';
import { base64, charx, smallPng, v2Json, v3Json, withTexts } from './card-fixtures.js';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** The card is refused with `code`: an AppError, a 4xx, nothing returned. */
async function refused(bytes: Uint8Array, mimeType: CardMimeType, code: string, limits: CardLimits = defaultCardLimits): Promise<AppError> {
  const outcome = await readCard(bytes, mimeType, limits).then(
    (card) => card,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(AppError);
  const error = outcome as AppError;
  expect(error.code).toBe(code);
  expect(statusByCode[error.code]).toBeGreaterThanOrEqual(400);
  expect(statusByCode[error.code]).toBeLessThan(500);
  return error;
}

/** A PNG chunk with a right CRC. */
function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(data.byteLength + 12);
  out.writeUInt32BE(data.byteLength, 0);
  out.write(type, 4, 'latin1');
  Buffer.from(data).copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, out.byteLength - 4)), out.byteLength - 4);
  return out;
}

const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A PNG whose header declares `width` × `height` and holds a tiny (bogus) image: a decompression bomb's shape. */
function declaredPng(width: number, height: number, extra: Buffer[] = []): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.alloc(1024))), ...extra, chunk('IEND', new Uint8Array())]);
}

const small: CardLimits = { ...defaultCardLimits, maxFileBytes: 64 * 1024, maxJsonBytes: 8 * 1024 };

describe('refused cards', () => {
  it('a file over the byte cap, before reading it', async () => {
    const error = await refused(new Uint8Array(small.maxFileBytes + 1), 'application/json', 'CARD_TOO_LARGE', small);
    expect(error.details).toMatchObject({ limit: 'fileBytes' });
  });

  it('JSON over its cap, before parsing it (broken JSON is refused for its size, not its syntax)', async () => {
    const error = await refused(utf8(`{"name": "${'x'.repeat(small.maxJsonBytes)}`), 'application/json', 'CARD_TOO_LARGE', small);
    expect(error.details).toMatchObject({ limit: 'jsonBytes' });
  });

  it('a PNG chunk whose card is over the JSON cap, before decoding it', async () => {
    const png = withTexts(smallPng(), { chara: base64(`{"name":"${'x'.repeat(small.maxJsonBytes)}"}`) });
    await refused(png, 'image/png', 'CARD_TOO_LARGE', small);
  });

  it('a PNG decompression bomb, by the pixels its header declares', async () => {
    const png = declaredPng(100_000, 100_000, [chunk('tEXt', Buffer.from(`chara\0${base64(v2Json)}`, 'latin1'))]);
    const error = await refused(png, 'image/png', 'CARD_TOO_LARGE');
    expect(error.details).toMatchObject({ limit: 'pixels', maximum: defaultCardLimits.maxPixels });
  });

  it('a PNG of more chunks than the cap, by their count (a card of 750,000 empty chunks froze the service)', async () => {
    const empty = chunk('teXt', new Uint8Array());
    const card = chunk('tEXt', Buffer.from(`chara\0${base64(v2Json)}`, 'latin1'));
    const many = (count: number) => declaredPng(4, 4, [...Array.from({ length: count }, () => empty), card]);
    // IHDR, IDAT, the card and IEND are chunks too: 8,188 empty ones make 8,192 in all.
    await expect(readCard(many(defaultCardLimits.maxPngChunks - 4), 'image/png')).resolves.toMatchObject({ name: 'Bram' });
    const error = await refused(many(750_000), 'image/png', 'CARD_TOO_LARGE');
    expect(error.details).toMatchObject({ limit: 'pngChunks', maximum: 8192 });
    expect(error.message).toContain('8,192 chunks');
  });

  it('a zTXt card that inflates past the cap', async () => {
    const bomb = deflateSync(Buffer.alloc(4 * 1024 * 1024, 0x41));
    const png = declaredPng(4, 4, [chunk('zTXt', Buffer.concat([Buffer.from('chara\0\0', 'latin1'), bomb]))]);
    await refused(png, 'image/png', 'CARD_TOO_LARGE', small);
  });

  it('a CHARX zip bomb, by its declared size and, undeclared, by its ratio after a few megabytes', async () => {
    await refused(zipOfZeros(1024, { name: 'card.json' }), 'application/zip', 'CARD_TOO_LARGE');
    const error = await refused(zipOfZeros(1024, { name: 'card.json', declareSizes: false }), 'application/zip', 'CARD_TOO_LARGE');
    expect(error.message).toContain('zip bomb');
  });

  it('a CHARX listing too many entries', async () => {
    const many = Object.fromEntries(Array.from({ length: defaultCardLimits.zip.maxEntries + 1 }, (_, index) => [`assets/x/${index}.txt`, new Uint8Array([1])]));
    await refused(zipSync({ 'card.json': strToU8(v3Json), ...many }), 'application/zip', 'CARD_TOO_LARGE');
  });

  for (const path of ['../escape.png', 'assets/../../escape.png', '/etc/passwd', 'assets\\icon\\main.png', 'C:/windows/x.png']) {
    it(`a CHARX naming ${path}`, async () => {
      const error = await refused(charx({ extra: { [path]: new Uint8Array([1]) } }), 'application/zip', 'CARD_UNSAFE_PATH');
      expect(error.details).toMatchObject({ path });
    });
  }

  it('a CHARX whose icon asset points outside the root', async () => {
    const card = JSON.parse(v3Json);
    card.data.assets = [{ type: 'icon', uri: 'embeded://../../secret.png', name: 'main', ext: 'png' }];
    await refused(zipSync({ 'card.json': strToU8(JSON.stringify(card)) }), 'application/zip', 'CARD_UNSAFE_PATH');
  });

  it('invalid JSON, in a file and in a PNG chunk', async () => {
    await refused(utf8('{"spec": "chara_card_v2", "data": {'), 'application/json', 'INVALID_JSON');
    await refused(withTexts(smallPng(), { chara: base64('{not json') }), 'image/png', 'INVALID_JSON');
    await refused(zipSync({ 'card.json': strToU8('[1,') }), 'application/zip', 'INVALID_JSON');
  });

  it('an unsupported spec or spec version', async () => {
    await refused(utf8(JSON.stringify({ spec: 'chara_card_v4', spec_version: '4.0', data: { name: 'X' } })), 'application/json', 'CARD_VERSION_UNSUPPORTED');
    await refused(utf8(v3Json.replace('"3.0"', '"4.0"')), 'application/json', 'CARD_VERSION_UNSUPPORTED');
    await refused(withTexts(smallPng(), { ccv3: base64(v3Json.replace('"3.0"', '"4.0"')) }), 'image/png', 'CARD_VERSION_UNSUPPORTED');
  });

  it('files that are not cards', async () => {
    await refused(smallPng(), 'image/png', 'NOT_A_CHARACTER_CARD');
    await refused(utf8('%PDF-1.7'), 'image/png', 'NOT_A_CHARACTER_CARD');
    await refused(utf8('{"hello": "world"}'), 'application/json', 'NOT_A_CHARACTER_CARD');
    await refused(utf8('[1, 2]'), 'application/json', 'NOT_A_CHARACTER_CARD');
    await refused(utf8('{"spec": "lorebook_v3", "data": {"entries": []}}'), 'application/json', 'NOT_A_CHARACTER_CARD');
    await refused(utf8('{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "  "}}'), 'application/json', 'NOT_A_CHARACTER_CARD');
    await refused(zipSync({ 'readme.txt': strToU8('hi') }), 'application/zip', 'NOT_A_CHARACTER_CARD');
    await refused(utf8(v2Json), 'application/zip', 'NOT_A_CHARACTER_CARD');
  });

  it('damaged containers: a PNG failing its checksum or cut short, a zip cut short', async () => {
    const png = Buffer.from(withTexts(smallPng(), { chara: base64(v2Json) }));
    const flipped = Buffer.from(png);
    flipped[png.indexOf('chara') + 10]! ^= 1;
    await refused(flipped, 'image/png', 'CARD_DAMAGED');
    await refused(png.subarray(0, png.byteLength - 20), 'image/png', 'CARD_DAMAGED');
    const zip = charx();
    await refused(zip.subarray(0, 200), 'application/zip', 'CARD_DAMAGED');
  });
});
