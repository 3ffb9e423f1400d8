import { describe, expect, it } from 'vitest';
import { type CharacterCard, cardV2Json, cardV3Json, readCard, writeCardJson, writeCardPng, writeCharx } from '../../src/cards/index.js';
import { readPngChunks, readPngText } from '../../src/cards/png-chunks.js';
import { charx, oddBookExtensions, oddEntryExtensions, oddExtensions, smallPng, v1Json, v2Png, v3Json, v3Png } from './card-fixtures.js';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** The character a card gives, without the container's bytes. */
function character(card: CharacterCard) {
  const { avatar: _avatar, specVersion: _specVersion, ...rest } = card;
  return rest;
}

const sources: [string, () => Promise<CharacterCard>][] = [
  ['V1 JSON', () => readCard(utf8(v1Json), 'application/json')],
  ['V2 PNG', () => readCard(v2Png(), 'image/png')],
  ['V3 PNG', () => readCard(v3Png(), 'image/png')],
  ['V3 JSON', () => readCard(utf8(v3Json), 'application/json')],
  ['CHARX', () => readCard(charx(), 'application/zip')],
];

describe('import, export, import gives the same character', () => {
  for (const [source, read] of sources) {
    it(`${source} through JSON, PNG and CHARX`, async () => {
      const first = await read();
      const avatar = first.avatar ?? { bytes: smallPng(), mimeType: 'image/png' as const };
      const json = await readCard(writeCardJson(first), 'application/json');
      const png = await readCard(writeCardPng(first, avatar.bytes), 'image/png');
      const zip = await readCard(writeCharx(first, avatar), 'application/zip');
      for (const again of [json, png, zip]) {
        expect(character(again)).toEqual(character(first));
        expect(again.specVersion).toBe('3.0');
      }
      expect(Buffer.from(zip.avatar!.bytes).equals(Buffer.from(avatar.bytes))).toBe(true);
      // And once more: what we write from what we read back is the very same file.
      expect(cardV3Json(json)).toBe(cardV3Json(first));
    });
  }

  it('the chara backfill read alone (a V2 reader) gives the same character but V3’s own fields, without decorators', async () => {
    const first = await readCard(v3Png(), 'image/png');
    const v2 = await readCard(utf8(cardV2Json(first)), 'application/json');
    expect(v2.specVersion).toBe('2.0');
    expect(v2.definition.groupOnlyGreetings).toEqual([]);
    expect(v2.definition.nickname).toBe('');
    expect(v2.lorebook!.entries.map((entry) => entry.content)).toEqual(['The north is cold.', 'Seas are wide.']);
    // SillyTavern's keys carry the at-depth entry where V2 has no decorators.
    expect(v2.lorebook!.entries[0]).toMatchObject({ position: 'at_depth', depth: 0, role: 'assistant' });
  });
});

describe('writing', () => {
  it('puts V3 in ccv3 and V2 in chara, replacing old card chunks, before IEND', async () => {
    const first = await readCard(v3Png(), 'image/png');
    const png = writeCardPng(first, v3Png());
    const chunks = readPngChunks(png);
    const texts = chunks.map((chunk) => readPngText(chunk, 1e7)).filter((text) => text !== undefined);
    expect(texts.map((text) => text.keyword)).toEqual(['ccv3', 'chara']);
    expect(chunks.at(-1)!.type).toBe('IEND');
    const [v3, v2] = texts.map((text) => JSON.parse(Buffer.from(text.text, 'base64').toString('utf8')));
    expect(v3).toMatchObject({ spec: 'chara_card_v3', spec_version: '3.0' });
    expect(v2).toMatchObject({ spec: 'chara_card_v2', spec_version: '2.0' });
    // V3's data carries every V2 field.
    expect(Object.keys(v3.data)).toEqual(expect.arrayContaining(Object.keys(v2.data)));
    expect(v3.data.assets[0]).toEqual({ type: 'icon', uri: 'ccdefault:', name: 'main', ext: 'png' });
  });

  it('writes a CHARX whose main icon is embeded://assets/icon/image/main.png', async () => {
    const first = await readCard(v2Png(), 'image/png');
    const { unzipSync } = await import('fflate');
    const files = unzipSync(writeCharx(first, first.avatar));
    expect(Object.keys(files).sort()).toEqual(['assets/icon/image/main.png', 'card.json']);
    const card = JSON.parse(Buffer.from(files['card.json']!).toString('utf8'));
    expect(card.data.assets[0]).toEqual({ type: 'icon', uri: 'embeded://assets/icon/image/main.png', name: 'main', ext: 'png' });
  });

  it('keeps unknown extensions byte for byte at the card, book and entry levels', async () => {
    const first = await readCard(v2Png(), 'image/png');
    const text = Buffer.from(writeCardJson(first)).toString('utf8');
    expect(text).toContain(`"extensions":${oddExtensions}`);
    expect(text).toContain(`"extensions":${oddBookExtensions}`);
    // Every key of the entry's extensions is SillyTavern's or unknown, and all of them agree with the fields.
    expect(text).toContain(`"extensions":${oddEntryExtensions}`);
    expect(text).toContain('12345678901234567890');
    expect(text).toContain('"\\u00e9"');
  });

  it('rewrites only the members our fields changed, the rest as read', async () => {
    const first = await readCard(v2Png(), 'image/png');
    const entry = first.lorebook!.entries[0]!;
    const changed = { ...first, lorebook: { ...first.lorebook!, entries: [{ ...entry, depth: 7, position: 'before_character' as const }] } };
    const text = Buffer.from(writeCardJson(changed)).toString('utf8');
    expect(text).toContain('"extensions":{"weight" : 1.50, "position": 0, "depth": 7, "role": 1, "selectiveLogic": 3, "match_whole_words": false, "prevent_recursion": true, "x_tool": [1, 2 ,3]}');
    const again = await readCard(utf8(text), 'application/json');
    expect(again.lorebook!.entries[0]).toMatchObject({ depth: 7, position: 'before_character' });
  });

  it('a share of the context goes out as tokens of an 8,192-token context, and exactly under likeness when tokens cannot say it', async () => {
    const first = await readCard(v2Png(), 'image/png');
    const settings = { ...first.lorebook!.settings, tokenBudgetShare: 0.3, maxRecursionSteps: 5 };
    const changed = { ...first, lorebook: { ...first.lorebook!, settings } };
    const written = JSON.parse(Buffer.from(writeCardJson(changed)).toString('utf8'));
    expect(written.data.character_book.token_budget).toBe(2458);
    expect(written.data.character_book.extensions).toEqual({ world_id: 'w-7', n: 100, likeness: { token_budget_share: 0.3, max_recursion_steps: 5 } });
    const again = await readCard(writeCardJson(changed), 'application/json');
    expect(again.lorebook!.settings).toMatchObject({ tokenBudgetShare: 0.3, maxRecursionSteps: 5 });
    expect(cardV3Json(again)).toBe(cardV3Json(changed));
  });
});
