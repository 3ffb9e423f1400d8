import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCard } from '../../src/cards/index.js';
import { charx, oddExtensions, smallPng, v1Json, v2Png, v3Json, v3Png, withTexts, base64 } from '../cards/card-fixtures.js';
import { type Harness, startHarness } from './harness.js';

type Person = { id: string; characterId: string; key: string };

const asBody = (bytes: Uint8Array | string, mimeType: string) => ({ data: Buffer.from(bytes).toString('base64'), mimeType });

describe('character cards over HTTP', () => {
  let api: Harness;
  let person: Person;
  let other: Person;
  beforeAll(async () => {
    api = await startHarness();
    [person, other] = await Promise.all([api.account('card-bringer'), api.account('card-other')]);
  });
  afterAll(async () => {
    await api.close();
  });

  const importCard = (body: unknown, key = person.key) => api.call('POST', '/api/v0/characters/import', { key, body });
  const exportCard = async (id: string, format: string, key = person.key) => {
    const response = await fetch(`${api.url}/api/v0/characters/${id}/card?format=${format}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: response.status, type: response.headers.get('content-type'), disposition: response.headers.get('content-disposition'), bytes: new Uint8Array(await response.arrayBuffer()) };
  };

  it('makes a character from each kind of card, with every field, its lorebook and its image', async () => {
    const v2 = await importCard(asBody(v2Png(), 'image/png'));
    expect(v2.status).toBe(201);
    expect(v2.body.character).toMatchObject({
      name: 'Bram', description: 'A lighthouse keeper.', personality_summary: 'gruff', scenario: 'A storm.', first_message: 'Who goes there?',
      alternate_greetings: ['Another ship lost.', 'Tea?'], system_prompt: '{{original}} Speak like a sailor.', post_history_instructions: 'Stay terse.',
      creator_notes: 'Best with slow burns.', tags: ['sea', 'mystery'], creator: 'someone', character_version: '1.2', account_id: person.id, is_public: false,
    });
    expect(v2.body.character.extensions).toMatchObject({ zeta: 1, depth_prompt: { depth: 4 } });
    const book = await api.call('GET', `/api/v0/characters/${v2.body.character.id}/lorebook`, { key: person.key });
    expect(book.body.settings).toMatchObject({ name: 'Coast', scan_depth: 4, recursive_scanning: true });
    expect(book.body.entries.map((entry: { keys: string[] }) => entry.keys)).toEqual([['lighthouse', '/lamp\\s+room/i'], ['ghost']]);
    // The PNG itself became the avatar, without the card's chunks.
    const avatar = new Uint8Array(await (await fetch(v2.body.character.avatar_url)).arrayBuffer());
    expect(Buffer.from(avatar).includes(Buffer.from('chara'))).toBe(false);
    expect(avatar.byteLength).toBeGreaterThan(0);

    for (const [bytes, mimeType, name] of [
      [v3Png(), 'image/png', 'Cleo'],
      [v3Json, 'application/json', 'Cleo'],
      [v1Json, 'application/json', JSON.parse(v1Json).name],
      [charx({ icon: smallPng(6, 6, 40) }), 'application/zip', 'Cleo'],
    ] as const) {
      const made = await importCard(asBody(bytes, mimeType));
      expect(made.status, `${mimeType} ${name}`).toBe(201);
      expect(made.body.character.name).toBe(name);
    }
  });

  it('exports V3 with V2 alongside as PNG, JSON and CHARX; import, export, import gives the same character', async () => {
    const first = (await importCard(asBody(v3Png(), 'image/png'))).body.character;
    for (const [format, type] of [['png', 'image/png'], ['json', 'application/json'], ['charx', 'application/zip']] as const) {
      const file = await exportCard(first.id, format);
      expect(file.status).toBe(200);
      expect(file.type).toContain(type);
      expect(file.disposition).toMatch(new RegExp(`attachment; filename="Cleo\\.${format}"`));
      const again = await importCard(asBody(file.bytes, type));
      expect(again.status).toBe(201);
      const { id, created, updated, avatar_url, ...fields } = again.body.character;
      const { id: _id, created: _created, updated: _updated, avatar_url: _avatar, ...expected } = first;
      expect(fields).toEqual(expected);
      const books = await Promise.all([first.id, id].map((each: string) => api.call('GET', `/api/v0/characters/${each}/lorebook`, { key: person.key })));
      const strip = (entries: Array<{ id: string }>) => entries.map(({ id: _entryId, ...entry }) => entry);
      expect(strip(books[1]!.body.entries)).toEqual(strip(books[0]!.body.entries));
      expect(books[1]!.body.settings).toEqual(books[0]!.body.settings);
      await api.call('DELETE', `/api/v0/characters/${id}`, { key: person.key });
    }
    // The PNG carries both chunks, readable by any card reader; the extensions as written.
    const png = await exportCard(first.id, 'png');
    const text = Buffer.from(png.bytes).toString('latin1');
    expect(text).toContain('ccv3');
    expect(text).toContain('chara');
    expect((await readCard(png.bytes, 'image/png')).specVersion).toBe('3.0');
  });

  it('keeps unknown extensions byte for byte through the API', async () => {
    const card = `{"spec":"chara_card_v2","spec_version":"2.0","data":{"name":"Odd","description":"","personality":"","scenario":"","first_mes":"","mes_example":"","creator_notes":"","system_prompt":"","post_history_instructions":"","alternate_greetings":[],"tags":[],"creator":"","character_version":"","extensions":${oddExtensions}}}`;
    const made = await importCard(asBody(card, 'application/json'));
    expect(made.status).toBe(201);
    const exported = Buffer.from((await exportCard(made.body.character.id, 'json')).bytes).toString('utf8');
    expect(exported).toContain(oddExtensions.slice(0, 20));
    expect(exported).toContain('12345678901234567890');
  });

  it('takes a card whose book has keyless and @@activate entries, and exports a name in any script', async () => {
    const card = JSON.stringify({
      spec: 'chara_card_v3', spec_version: '3.0',
      data: {
        name: 'アリス Amélie', description: '', personality: '', scenario: '', first_mes: '', mes_example: '', creator_notes: '', system_prompt: '', post_history_instructions: '',
        alternate_greetings: [], group_only_greetings: [], tags: [], creator: '', character_version: '', extensions: {},
        character_book: {
          extensions: {},
          entries: [
            { keys: [], content: 'A new entry, keys not written yet.', extensions: {}, enabled: true, insertion_order: 1, use_regex: false },
            { keys: [], content: '@@activate\nAlways remembered.', extensions: {}, enabled: true, insertion_order: 2, use_regex: false },
          ],
        },
      },
    });
    const made = await importCard(asBody(card, 'application/json'));
    expect(made.status).toBe(201);
    const book = await api.call('GET', `/api/v0/characters/${made.body.character.id}/lorebook`, { key: person.key });
    expect(book.body.entries).toHaveLength(2);
    // Written by a person through the API, a keyless entry is still refused.
    const keyless = await api.call('POST', `/api/v0/characters/${made.body.character.id}/lorebook/entries`, { key: person.key, body: { content: 'No keys.' } });
    expect(keyless.status).toBe(400);

    const exported = await exportCard(made.body.character.id, 'json');
    expect(exported.status).toBe(200);
    expect(exported.disposition).toBe(`attachment; filename="Amelie.json"; filename*=UTF-8''${encodeURIComponent('アリス-Amélie.json')}`);
  });

  it('stores no file for a card refused by the account limit', async () => {
    const full = await api.account('card-full');
    const files = async () => (await readdir(path.join(api.dataDir, 'files'), { recursive: true })).filter((name) => name.endsWith('.png')).length;
    // The account's own character and 19 more fill it (MAX_CHARACTERS_PER_ACCOUNT is 20).
    for (let index = 0; index < 19; index++) expect((await api.call('POST', '/api/v0/characters', { key: full.key, body: { name: `Filler ${index}` } })).status).toBe(201);
    const before = await files();
    const refused = await importCard(asBody(withTexts(smallPng(9, 9, 77), { chara: base64(v1Json) }), 'image/png'), full.key);
    expect(refused.body.error.code).toBe('CHARACTER_LIMIT_REACHED');
    expect(await files()).toBe(before);
  });

  it('lets anyone export a public character, and no one else a private one', async () => {
    const made = (await importCard({ ...asBody(v3Json, 'application/json'), is_public: true })).body.character;
    expect(made.is_public).toBe(true);
    expect((await exportCard(made.id, 'json', other.key)).status).toBe(200);
    const hidden = (await importCard(asBody(v3Json, 'application/json'))).body.character;
    expect((await exportCard(hidden.id, 'json', other.key)).status).toBe(404);
    expect((await exportCard(hidden.id, 'yaml')).status).toBe(400);
  });

  it('refuses every bad card with a clear 4xx and creates nothing', async () => {
    const count = async () => (await api.call('GET', '/api/v0/characters?limit=200', { key: other.key })).body.characters.length;
    const before = await count();
    // A card.json that inflates to 40 MB of spaces from a few tens of kilobytes: only card.json and the icon are ever inflated.
    const bomb = new TextEncoder().encode(v3Json + ' '.repeat(40 * 1024 * 1024));
    const cases: Array<[unknown, number, string]> = [
      [asBody('{"hello": "world"}', 'application/json'), 422, 'NOT_A_CHARACTER_CARD'],
      [asBody(smallPng(), 'image/png'), 422, 'NOT_A_CHARACTER_CARD'],
      [asBody('{"spec":"chara_card_v4","spec_version":"4.0","data":{"name":"x"}}', 'application/json'), 422, 'CARD_VERSION_UNSUPPORTED'],
      [asBody('{"spec": "chara_card_v2", ', 'application/json'), 400, 'INVALID_JSON'],
      [asBody(withTexts(smallPng(), { chara: base64('{not json') }), 'image/png'), 400, 'INVALID_JSON'],
      [asBody(zipSync({ 'card.json': bomb }, { level: 9 }), 'application/zip'), 413, 'CARD_TOO_LARGE'],
      [asBody(zipSync({ 'card.json': new TextEncoder().encode(v3Json), '../escape.png': smallPng() }), 'application/zip'), 422, 'CARD_UNSAFE_PATH'],
      [{ data: 'not base64 !', mimeType: 'image/png' }, 400, 'VALIDATION_FAILED'],
      [{ ...asBody(v3Json, 'application/json'), mimeType: 'text/yaml' }, 400, 'VALIDATION_FAILED'],
    ];
    for (const [body, status, code] of cases) {
      const answer = await importCard(body, other.key);
      expect([answer.status, answer.body.error?.code], code).toEqual([status, code]);
      expect(answer.body.error.message.length).toBeGreaterThan(10);
    }
    const tooLarge = await importCard({ data: 'A'.repeat(14 * 1024 * 1024 + 100), mimeType: 'image/png' }, other.key);
    expect(tooLarge.status).toBe(413);
    expect(await count()).toBe(before);
  });
});
