/**
 * A PNG's chunks, walked without decoding a pixel: the card's text chunks read, the image's
 * size read from IHDR, and text chunks swapped before IEND. Every chunk's CRC is checked (as
 * png-chunks-extract, which SillyTavern reads cards with, does), so a damaged file is named.
 */
import { crc32, inflateSync } from 'node:zlib';
import { cardDamaged, cardTooLarge } from './card-errors.js';

const signature = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export interface PngChunk {
  type: string;
  /** Offset of the chunk's length field in the file; the chunk spans `start` to `end`. */
  start: number;
  end: number;
  data: Uint8Array;
}

export function isPng(bytes: Uint8Array): boolean {
  return bytes.byteLength >= signature.byteLength && signature.every((byte, index) => bytes[index] === byte);
}

/**
 * Every chunk up to and including IEND; the data are views into `bytes`, not copies. Past
 * `maxChunks` the walk stops and the file is refused: 9 MB of empty chunks are 750,000 of
 * them, each a checksum and an object, where a real image has a few dozen.
 */
export function readPngChunks(bytes: Uint8Array, maxChunks = Number.POSITIVE_INFINITY): PngChunk[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: PngChunk[] = [];
  let offset = signature.byteLength;
  while (offset < bytes.byteLength) {
    if (chunks.length >= maxChunks) {
      throw cardTooLarge(`The card's PNG has more than ${maxChunks.toLocaleString('en-US')} chunks, where an image has a few dozen`, 'pngChunks', maxChunks);
    }
    if (offset + 12 > bytes.byteLength) throw cardDamaged('the PNG is cut short');
    const length = view.getUint32(offset);
    const end = offset + 12 + length;
    if (end > bytes.byteLength) throw cardDamaged('the PNG is cut short');
    const type = String.fromCharCode(...bytes.subarray(offset + 4, offset + 8));
    if (crc32(bytes.subarray(offset + 4, end - 4)) !== view.getUint32(end - 4)) throw cardDamaged(`the PNG's ${type} chunk fails its checksum`);
    chunks.push({ type, start: offset, end, data: bytes.subarray(offset + 8, end - 4) });
    offset = end;
    if (type === 'IEND') return chunks;
  }
  throw cardDamaged('the PNG has no end chunk');
}

/** Width and height from IHDR, which a PNG must start with. */
export function pngSize(chunks: readonly PngChunk[]): { width: number; height: number } {
  const header = chunks[0];
  if (header?.type !== 'IHDR' || header.data.byteLength < 8) throw cardDamaged('the PNG does not start with its header chunk');
  const view = new DataView(header.data.buffer, header.data.byteOffset, header.data.byteLength);
  return { width: view.getUint32(0), height: view.getUint32(4) };
}

export interface PngText {
  keyword: string;
  text: string;
}

/**
 * A text chunk's keyword and text: `tEXt` (Latin-1), `zTXt` (deflated Latin-1) or `iTXt`
 * (UTF-8, maybe deflated). Undefined for other chunks. Deflated text inflates to at most
 * `maxTextBytes`, so a compressed chunk cannot be a bomb either.
 */
export function readPngText(chunk: PngChunk, maxTextBytes: number): PngText | undefined {
  if (chunk.type !== 'tEXt' && chunk.type !== 'zTXt' && chunk.type !== 'iTXt') return undefined;
  const data = Buffer.from(chunk.data.buffer, chunk.data.byteOffset, chunk.data.byteLength);
  const separator = data.indexOf(0);
  if (separator < 0) return undefined;
  const keyword = data.toString('latin1', 0, separator);
  const inflate = (compressed: Buffer) => {
    try {
      return inflateSync(compressed, { maxOutputLength: maxTextBytes });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw cardTooLarge(`The PNG's ${keyword} text inflates to more than ${maxTextBytes} bytes`, 'jsonBytes', maxTextBytes, error);
      }
      throw cardDamaged(`the PNG's ${keyword} text does not inflate`, error);
    }
  };
  if (chunk.type === 'tEXt') return { keyword, text: data.toString('latin1', separator + 1) };
  if (chunk.type === 'zTXt') return { keyword, text: inflate(data.subarray(separator + 2)).toString('latin1') };
  // iTXt: keyword, compression flag and method, language tag, translated keyword, then the text.
  const compressed = data[separator + 1] === 1;
  const languageEnd = data.indexOf(0, separator + 3);
  const translatedEnd = languageEnd < 0 ? -1 : data.indexOf(0, languageEnd + 1);
  if (translatedEnd < 0) return undefined;
  const text = data.subarray(translatedEnd + 1);
  return { keyword, text: (compressed ? inflate(text) : text).toString('utf8') };
}

/** A `tEXt` chunk; the text must be Latin-1 (cards put base64 there). */
export function textChunk(keyword: string, text: string): Uint8Array {
  const data = Buffer.concat([Buffer.from(keyword, 'latin1'), Buffer.from([0]), Buffer.from(text, 'latin1')]);
  const chunk = Buffer.alloc(data.byteLength + 12);
  chunk.writeUInt32BE(data.byteLength, 0);
  chunk.write('tEXt', 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + data.byteLength)), 8 + data.byteLength);
  return chunk;
}

/**
 * The PNG with every text chunk whose keyword is in `replaced` removed and `added` chunks
 * inserted before IEND; other chunks are copied as they are. `chunks` are the PNG's, when they
 * were already walked (a file is walked once).
 */
export function replacePngTexts(bytes: Uint8Array, replaced: ReadonlySet<string>, added: readonly Uint8Array[], chunks = readPngChunks(bytes)): Uint8Array {
  const parts: Uint8Array[] = [bytes.subarray(0, signature.byteLength)];
  for (const chunk of chunks) {
    if (chunk.type === 'IEND') parts.push(...added);
    const text = chunk.type === 'IEND' ? undefined : readPngTextKeyword(chunk);
    if (text !== undefined && replaced.has(text)) continue;
    parts.push(bytes.subarray(chunk.start, chunk.end));
  }
  return Buffer.concat(parts);
}

/** A text chunk's keyword without reading (or inflating) its text. */
export function readPngTextKeyword(chunk: PngChunk): string | undefined {
  if (chunk.type !== 'tEXt' && chunk.type !== 'zTXt' && chunk.type !== 'iTXt') return undefined;
  const separator = chunk.data.indexOf(0);
  return separator < 0 ? undefined : Buffer.from(chunk.data.subarray(0, separator)).toString('latin1');
}
