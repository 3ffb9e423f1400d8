import { describe, expect, it } from 'vitest';
import { readCard } from '../../src/cards/index.js';
import { readPngChunks } from '../../src/cards/png-chunks.js';
import { charx, oddBookExtensions, oddExtensions, smallPng, v1Json, v2Json, v2Png, v3Json, v3Png } from './card-fixtures.js';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

describe('readCard', () => {
  it('reads a V1 JSON card from its flat fields', async () => {
    const card = await readCard(utf8(v1Json), 'application/json');
    expect(card).toMatchObject({ name: 'Ada', description: '{{char}} is a mathematician.', personality: 'curious, precise', specVersion: '1.0', lorebook: null, avatar: null });
    expect(card.definition).toMatchObject({ scenario: 'A salon in London, 1843.', firstMessage: 'Good evening, {{user}}.', exampleDialogue: expect.stringContaining('<START>'), extensionsJson: '{}' });
  });

  it('reads a V2 PNG with only chara: every field, the book with SillyTavern’s extensions, the PNG as avatar without its card', async () => {
    const card = await readCard(v2Png(), 'image/png');
    expect(card.specVersion).toBe('2.0');
    expect(card).toMatchObject({ name: 'Bram', description: 'A lighthouse keeper.', personality: 'gruff' });
    expect(card.definition).toMatchObject({
      scenario: 'A storm.',
      firstMessage: 'Who goes there?',
      alternateGreetings: ['Another ship lost.', 'Tea?'],
      exampleDialogue: '<START>\n{{char}}: Mind the rocks.',
      systemPrompt: '{{original}} Speak like a sailor.',
      postHistoryInstructions: 'Stay terse.',
      creatorNotes: 'Best with slow burns.',
      tags: ['sea', 'mystery'],
      creator: 'someone',
      characterVersion: '1.2',
      extensionsJson: oddExtensions,
    });
    const book = card.lorebook!;
    expect(book.settings).toMatchObject({ name: 'Coast', description: 'Places.', scanDepth: 4, tokenBudgetShare: 1024 / 8192, recursiveScanning: true, extensionsJson: oddBookExtensions });
    expect(book.entries[0]).toMatchObject({
      id: '1',
      name: 'Lamp',
      keys: ['lighthouse', '/lamp\\s+room/i'],
      secondaryKeys: ['night'],
      secondaryLogic: 'and_all',
      caseSensitive: true,
      matchWholeWords: false,
      insertionOrder: 10,
      priority: 5,
      position: 'at_depth',
      depth: 2,
      role: 'user',
      preventRecursion: true,
      excludeRecursion: false,
    });
    // selective: false leaves the secondary keys unused, kept aside to go back out.
    // The second entry has no id: it takes the next number after the highest, never a taken one.
    expect(book.entries[1]).toMatchObject({ id: '2', enabled: false, constant: true, secondaryKeys: [], position: 'after_character', caseSensitive: null });
    expect(JSON.parse(book.entries[1]!.extensionsJson)).toEqual({ likeness: { inactive_secondary_keys: ['unused'] } });
    expect(card.avatar?.mimeType).toBe('image/png');
    expect(readPngChunks(card.avatar!.bytes).map((chunk) => chunk.type)).not.toContain('tEXt');
  });

  it('prefers ccv3 in a PNG with both chunks and reads V3’s fields, decorators and use_regex', async () => {
    const card = await readCard(v3Png(), 'image/png');
    expect(card.name).toBe('Cleo');
    expect(card.specVersion).toBe('3.0');
    expect(card.definition).toMatchObject({ nickname: 'Cle', groupOnlyGreetings: ['Everyone, gather round.'] });
    const likeness = JSON.parse(card.definition.extensionsJson).likeness;
    expect(likeness).toEqual({
      creator_notes_multilingual: { fr: 'Notes en français.' },
      source: ['https://example.org/cleo'],
      creation_date: 1700000000,
      modification_date: 1700000500,
      assets: [{ type: 'background', uri: 'https://example.org/bg.png', name: 'bg', ext: 'png' }],
    });
    const [north, sea] = card.lorebook!.entries;
    expect(north).toMatchObject({ position: 'at_depth', depth: 0, role: 'assistant', content: '@@activate_only_after 2\nThe north is cold.' });
    expect(sea).toMatchObject({ position: 'before_character', scanDepth: 5, keys: ['/sea\\w+/i'], constant: true, content: 'Seas are wide.' });
  });

  it('keeps use_regex keys case-insensitive unless the entry is case-sensitive, as SillyTavern reads them', async () => {
    const sensitive = v3Json.replace('"use_regex":true', '"use_regex":true,"case_sensitive":true');
    expect(sensitive).not.toBe(v3Json);
    const [, sea] = (await readCard(utf8(sensitive), 'application/json')).lorebook!.entries;
    expect(sea).toMatchObject({ keys: ['/sea\\w+/'], caseSensitive: true });
  });

  it('falls back to the chara backfill when ccv3 is of a later version', async () => {
    const { base64, withTexts } = await import('./card-fixtures.js');
    const png = withTexts(smallPng(), { ccv3: base64(v3Json.replace('"3.0"', '"4.0"')), chara: base64(v2Json) });
    expect((await readCard(png, 'image/png')).name).toBe('Bram');
  });

  it('reads a V3 JSON card', async () => {
    const card = await readCard(utf8(v3Json), 'application/json');
    expect(card).toMatchObject({ name: 'Cleo', avatar: null, specVersion: '3.0' });
  });

  it('reads a CHARX: card.json, the main icon of its assets, unknown extensions as written', async () => {
    const icon = smallPng(2, 2, 200);
    const card = await readCard(charx({ icon }), 'application/zip');
    expect(card.name).toBe('Cleo');
    expect(card.avatar?.mimeType).toBe('image/png');
    expect(Buffer.from(card.avatar!.bytes).equals(icon)).toBe(true);
    // Ours go in after the last member; every byte of the card's own stays as it was.
    const likeness = JSON.stringify(JSON.parse(card.definition.extensionsJson).likeness);
    expect(card.definition.extensionsJson).toBe(`${oddExtensions.slice(0, -2)},"likeness":${likeness} }`);
  });
});

describe('readCard text chunks', () => {
  it('reads a card from an iTXt or a zTXt chunk as from tEXt', async () => {
    const { deflateSync, crc32 } = await import('node:zlib');
    const { base64 } = await import('./card-fixtures.js');
    const chunk = (type: string, data: Buffer) => {
      const out = Buffer.alloc(data.byteLength + 12);
      out.writeUInt32BE(data.byteLength, 0);
      out.write(type, 4, 'latin1');
      data.copy(out, 8);
      out.writeUInt32BE(crc32(out.subarray(4, out.byteLength - 4)), out.byteLength - 4);
      return out;
    };
    const png = smallPng();
    const insert = (extra: Buffer) => Buffer.concat([png.subarray(0, png.byteLength - 12), extra, png.subarray(png.byteLength - 12)]);
    const international = chunk('iTXt', Buffer.concat([Buffer.from('chara\0\x01\0en\0\0', 'latin1'), deflateSync(Buffer.from(base64(v2Json)))]));
    const compressed = chunk('zTXt', Buffer.concat([Buffer.from('ccv3\0\0', 'latin1'), deflateSync(Buffer.from(base64(v3Json)))]));
    expect((await readCard(insert(international), 'image/png')).name).toBe('Bram');
    expect((await readCard(insert(compressed), 'image/png')).name).toBe('Cleo');
  });
});
