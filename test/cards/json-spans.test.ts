import { describe, expect, it } from 'vitest';
import { readCard } from '../../src/cards/index.js';
import { arrayElements, memberSpan, objectMembers, objectText } from '../../src/cards/json-spans.js';
import { withManagedMembers } from '../../src/cards/managed-members.js';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** Extensions texts a re-serialiser would change: each must come back exactly. */
const awkward = [
  '{}',
  '{ }',
  '{\n\t"b" : 2 ,\r\n "a":1\n}',
  '{"s":"quote \\" brace } bracket ] backslash \\\\","t":"\\\\"}',
  '{"big":12345678901234567890,"tiny":1.0e-400,"neg":-0,"exp":1E+2}',
  '{"\\u00e9t\\u00e9":"\\ud83d\\ude00","raw":"été 😀"}',
  '{"dup":1,"dup":2}',
  '{"nested":{"extensions":{"x":[{"}":"{"}]}},"arr":[[],[{}],"]"]}',
];

describe('extensions are kept as the very text read', () => {
  for (const extensions of awkward) {
    it(`card and entry extensions ${JSON.stringify(extensions)}`, async () => {
      const json = `{"spec":"chara_card_v2","spec_version":"2.0","data":{"name":"N","extensions": ${extensions} ,"character_book":{"entries":[{"keys":["k"],"content":"c","extensions":${extensions}}],"extensions":${extensions}}}}`;
      const card = await readCard(utf8(json), 'application/json');
      expect(card.definition.extensionsJson).toBe(extensions);
      expect(card.lorebook!.settings.extensionsJson).toBe(extensions);
      expect(card.lorebook!.entries[0]!.extensionsJson).toBe(extensions);
    });
  }

  it('keeps extensions nested 100,000 deep (ours too) without walking them recursively', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const extensions = `{"deep":${deep},"likeness":{"x":${deep}}}`;
    const json = `{"spec":"chara_card_v3","spec_version":"3.0","data":{"name":"N","extensions":${extensions},"character_book":{"entries":[{"keys":[],"content":"","extensions":${extensions}}]}}}`;
    const card = await readCard(utf8(json), 'application/json');
    // Our namespace is made afresh from the fields: a card's own is replaced, the rest kept.
    expect(card.definition.extensionsJson).toBe(`{"deep":${deep},"likeness":{}}`);
    expect(card.lorebook!.entries[0]!.extensionsJson).toBe(`{"deep":${deep},"likeness":{}}`);
  });

  it('finds a key written with escapes, and the last of a repeated one, as JSON.parse does', () => {
    const text = '{"ext\\u0065nsions":{"a":1}, "x": {"extensions":0}, "extensions" : {"b":2}}';
    expect(objectText(text, memberSpan(text, 0, 'extensions'))).toBe('{"b":2}');
    expect(objectMembers(text, 0).map((member) => member.key)).toEqual(['extensions', 'x', 'extensions']);
  });

  it('splits arrays whose strings hold commas and brackets', () => {
    const text = '[ "a,]" , {"b":[1,2]},3 ,null]';
    expect(arrayElements(text, 0).map((span) => text.slice(span.start, span.end))).toEqual(['"a,]"', '{"b":[1,2]}', '3', 'null']);
  });

  it('a non-object extensions reads as {}', () => {
    expect(objectText('{"e":[1]}', memberSpan('{"e":[1]}', 0, 'e'))).toBe('{}');
  });
});

describe('withManagedMembers', () => {
  const member = (key: string, value: unknown, needed: boolean) => ({ key, value, needed, accepts: (existing: unknown) => existing === value });

  it('keeps a member that agrees, replaces one that does not, adds one only when needed', () => {
    const text = '{ "keep" : 1, "x": "\\u00e9", "change":  2 }';
    const result = withManagedMembers(text, [member('keep', 1, true), member('change', 3, true), member('add', true, true), member('skip', false, false)]);
    expect(result).toBe('{ "keep" : 1, "x": "\\u00e9", "change":  3,"add":true }');
    // Applying it again changes nothing.
    expect(withManagedMembers(result, [member('keep', 1, true), member('change', 3, true), member('add', true, true), member('skip', false, false)])).toBe(result);
  });

  it('adds into an empty object', () => {
    expect(withManagedMembers('{ }', [member('a', 1, true)])).toBe('{"a":1 }');
  });
});
