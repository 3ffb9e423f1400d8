/**
 * Card fixtures written from the specs (Character Card V2, V3 and SillyTavern's extensions),
 * built in memory: a V1 JSON, a V2 PNG with only `chara`, a V3 PNG with both chunks, a V3 JSON
 * and a CHARX with an icon asset and an unknown extension.
 */
import { strToU8, zipSync } from 'fflate';
import { PNG } from 'pngjs';
import { textChunk } from '../../src/cards/png-chunks.js';

/** A real PNG of `width` × `height` pixels, decodable by any reader. */
export function smallPng(width = 4, height = 4, shade = 128): Uint8Array {
  const png = new PNG({ width, height });
  png.data.fill(shade);
  return PNG.sync.write(png);
}

/** `png` with text chunks inserted before IEND (the last 12 bytes), as card writers do. */
export function withTexts(png: Uint8Array, texts: Record<string, string>): Uint8Array {
  const chunks = Object.entries(texts).map(([keyword, text]) => textChunk(keyword, text));
  return Buffer.concat([png.subarray(0, png.byteLength - 12), ...chunks, png.subarray(png.byteLength - 12)]);
}

export function base64(json: string): string {
  return Buffer.from(json, 'utf8').toString('base64');
}

export const v1Json = JSON.stringify({
  name: 'Ada',
  description: '{{char}} is a mathematician.',
  personality: 'curious, precise',
  scenario: 'A salon in London, 1843.',
  first_mes: 'Good evening, {{user}}.',
  mes_example: '<START>\n{{user}}: What is an engine?\n{{char}}: A machine that weaves numbers.',
});

/** Unknown extensions written with odd spacing, key order, an escape and a number past 2^53. */
export const oddExtensions = '{ "zeta" :1,"alpha":  {"é":"\\u00e9", "big": 12345678901234567890 } ,\n "depth_prompt": {"prompt":"Stay in 1843.","depth":4,"role":"system"} }';
export const oddEntryExtensions = '{"weight" : 1.50, "position": 4, "depth": 2, "role": 1, "selectiveLogic": 3, "match_whole_words": false, "prevent_recursion": true, "x_tool": [1, 2 ,3]}';
export const oddBookExtensions = '{"world_id":   "w-7", "n": 1e2}';

/** A V2 card, from the V2 spec, with a book using SillyTavern's entry extensions. */
export const v2Json = `{"spec":"chara_card_v2","spec_version":"2.0","data":{"name":"Bram","description":"A lighthouse keeper.","personality":"gruff","scenario":"A storm.","first_mes":"Who goes there?","mes_example":"<START>\\n{{char}}: Mind the rocks.","creator_notes":"Best with slow burns.","system_prompt":"{{original}} Speak like a sailor.","post_history_instructions":"Stay terse.","alternate_greetings":["Another ship lost.","Tea?"],"tags":["sea","mystery"],"creator":"someone","character_version":"1.2","extensions":${oddExtensions},"character_book":{"name":"Coast","description":"Places.","scan_depth":4,"token_budget":1024,"recursive_scanning":true,"extensions":${oddBookExtensions},"entries":[{"keys":["lighthouse","/lamp\\\\s+room/i"],"content":"The lamp room is at the top.","extensions":${oddEntryExtensions},"enabled":true,"insertion_order":10,"case_sensitive":true,"name":"Lamp","priority":5,"id":1,"comment":"Lamp","selective":true,"secondary_keys":["night"],"constant":false,"position":"before_char"},{"keys":["ghost"],"content":"Nobody speaks of the ghost.","extensions":{},"enabled":false,"insertion_order":20,"selective":false,"secondary_keys":["unused"],"constant":true,"position":"after_char"}]}}}`;

/** A V3 card, from the V3 spec: nickname, group-only greetings, decorators, use_regex. */
export function v3Object(): Record<string, unknown> {
  return {
    spec: 'chara_card_v3',
    spec_version: '3.0',
    data: {
      name: 'Cleo',
      nickname: 'Cle',
      description: 'A cartographer.',
      personality: 'warm',
      scenario: 'A map room.',
      first_mes: 'Lost again, {{user}}?',
      mes_example: '',
      creator_notes: 'Notes.',
      creator_notes_multilingual: { fr: 'Notes en français.' },
      system_prompt: '',
      post_history_instructions: '',
      alternate_greetings: ['Welcome.'],
      group_only_greetings: ['Everyone, gather round.'],
      tags: ['maps'],
      creator: 'cc',
      character_version: '3',
      source: ['https://example.org/cleo'],
      creation_date: 1700000000,
      modification_date: 1700000500,
      assets: [
        { type: 'icon', uri: 'ccdefault:', name: 'main', ext: 'png' },
        { type: 'background', uri: 'https://example.org/bg.png', name: 'bg', ext: 'png' },
      ],
      extensions: { risuai: { utilityBot: false } },
      character_book: {
        name: 'Atlas',
        scan_depth: 3,
        recursive_scanning: false,
        extensions: {},
        entries: [
          { keys: ['north'], content: '@@depth 0\n@@role assistant\n@@activate_only_after 2\nThe north is cold.', extensions: {}, enabled: true, insertion_order: 1, use_regex: false },
          { keys: ['sea\\w+'], content: '@@position before_desc\n@@scan_depth 5\nSeas are wide.', extensions: {}, enabled: true, insertion_order: 2, use_regex: true, constant: true },
        ],
      },
    },
  };
}

export const v3Json = JSON.stringify(v3Object());

/** The V2 backfill a V3 PNG carries beside it. */
export const v3BackfillJson = JSON.stringify({ spec: 'chara_card_v2', spec_version: '2.0', data: { ...(v3Object().data as object), name: 'Cleo (V2)' } });

export const v2Png = () => withTexts(smallPng(), { chara: base64(v2Json) });
export const v3Png = () => withTexts(smallPng(), { chara: base64(v3BackfillJson), ccv3: base64(v3Json) });

/** A CHARX with its main icon at a path of its choosing and an unknown extension. */
export function charx(options: { icon?: Uint8Array; extra?: Record<string, Uint8Array> } = {}): Uint8Array {
  const icon = options.icon ?? smallPng(2, 2, 200);
  const card = v3Object();
  const data = card.data as Record<string, unknown>;
  data.assets = [
    { type: 'icon', uri: 'embeded://assets/icon/images/other.png', name: 'other', ext: 'png' },
    { type: 'icon', uri: 'embeded://assets/icon/images/main.png', name: 'main', ext: 'png' },
    { type: 'emotion', uri: 'embeded://assets/emotion/happy.png', name: 'happy', ext: 'png' },
  ];
  const json = JSON.stringify(card).replace('"extensions":{"risuai":{"utilityBot":false}}', `"extensions":${oddExtensions}`);
  return zipSync({
    'card.json': strToU8(json),
    'assets/icon/images/main.png': icon,
    'assets/icon/images/other.png': smallPng(3, 3, 10),
    'assets/emotion/happy.png': smallPng(5, 5, 90),
    ...options.extra,
  });
}
