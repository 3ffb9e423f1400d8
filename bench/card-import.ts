/**
 * Issue 22's card import target: a 2 MB PNG card read in under 200 ms. The card is made here:
 * a 256 × 256 image of noise (which does not compress) carrying a V3 card and its V2 backfill
 * with a lorebook of entries (a quarter with regular-expression keys) grown until the file
 * passes 2 MB. Each import is the whole of `readCard`: chunks walked and checked, both texts'
 * base64 and JSON, the lorebook and its extensions, the avatar without its card chunks.
 *
 * `npx tsx bench/card-import.ts` prints the figures; `measureCardImport()` returns them for
 * `npm run bench` (the lorebook benchmark reports it beside the prompt's).
 */
import { randomBytes } from 'node:crypto';
import { PNG } from 'pngjs';
import { type CardContents, readCard, writeCardPng } from '../src/cards/index.js';
import { defaultLorebookSettings, type LorebookEntry } from '../src/core/lorebook/lorebook.js';
import { emptyCharacterDefinition } from '../src/core/records.js';
import { percentile, round } from './stats.js';

export interface CardImportFigures {
  cardBytes: number;
  entries: number;
  imports: number;
  p50Ms: number;
  p99Ms: number;
}

function entry(index: number): LorebookEntry {
  const regex = index % 4 === 0;
  return {
    id: String(index),
    name: `Entry ${index}`,
    keys: regex ? [`/place\\s*${index}\\b/i`] : [`place${index}`, `landmark ${index}`],
    secondaryKeys: index % 5 === 0 ? ['night'] : [],
    secondaryLogic: 'and_any',
    content: `Place ${index}: ${'an old stone road winds past the harbour and the market square. '.repeat(12)}`,
    enabled: true,
    constant: index % 50 === 0,
    caseSensitive: null,
    matchWholeWords: null,
    insertionOrder: index,
    priority: 10,
    position: index % 7 === 0 ? 'at_depth' : 'after_character',
    depth: 4,
    role: 'system',
    excludeRecursion: false,
    preventRecursion: false,
    scanDepth: null,
    extensionsJson: `{"x_tool":{"id":${index},"weight":1.50}}`,
  };
}

/**
 * A PNG card of at least `targetBytes`, or of `maxEntries` entries when they come first;
 * `avatarSide` is the side of the image of noise.
 */
export function makePngCard(targetBytes = 2 * 1024 * 1024, options: { avatarSide?: number; maxEntries?: number } = {}): { png: Uint8Array; entries: number } {
  const { avatarSide = 256, maxEntries = Number.POSITIVE_INFINITY } = options;
  const image = new PNG({ width: avatarSide, height: avatarSide });
  randomBytes(image.data.byteLength).copy(image.data);
  const avatar = PNG.sync.write(image);
  const card = (count: number): CardContents => ({
    name: 'Benchmark',
    description: 'A character whose card is large.',
    personality: 'patient',
    definition: { ...emptyCharacterDefinition, firstMessage: 'Hello, {{user}}.', extensionsJson: '{"depth_prompt":{"prompt":"","depth":4,"role":"system"}}' },
    lorebook: { settings: { ...defaultLorebookSettings, scanDepth: 4 }, entries: Array.from({ length: count }, (_, index) => entry(index)) },
  });
  // Each entry adds about 3 KB to the file (V3 and V2, each in base64); start below and grow.
  let count = Math.min(maxEntries, Math.max(1, Math.floor((targetBytes - avatar.byteLength) / 3_500)));
  let png = writeCardPng(card(count), avatar);
  while (png.byteLength < targetBytes && count < maxEntries) {
    count = Math.min(maxEntries, count + Math.max(1, Math.ceil((targetBytes - png.byteLength) / 3_500)));
    png = writeCardPng(card(count), avatar);
  }
  return { png, entries: count };
}

export async function measureCardImport(options: { imports?: number; warmUp?: number } = {}): Promise<CardImportFigures> {
  const { imports = 100, warmUp = 10 } = options;
  const { png, entries } = makePngCard();
  for (let index = 0; index < warmUp; index += 1) await readCard(png, 'image/png');
  const samples: number[] = [];
  for (let index = 0; index < imports; index += 1) {
    const started = performance.now();
    await readCard(png, 'image/png');
    samples.push(performance.now() - started);
  }
  return { cardBytes: png.byteLength, entries, imports, p50Ms: round(percentile(samples, 0.5)), p99Ms: round(percentile(samples, 0.99)) };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await measureCardImport());
