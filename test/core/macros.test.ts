import { describe, expect, it } from 'vitest';
import { characterMacroName, defaultUserName, expandMacros, type MacroValues } from '../../src/core/macros.js';
import { rollDice } from '../../src/core/macro-dice.js';
import { seededRandom } from '../../src/core/seeded-random.js';

const names: MacroValues = { character: 'Ada', user: 'Sam' };
/** A random source that returns the given numbers in turn. */
const sequence = (...numbers: number[]) => {
  let index = 0;
  return () => numbers[index++ % numbers.length]!;
};

describe('expandMacros', () => {
  it('puts in the names, whatever the case, in both the braces and the angle forms', () => {
    expect(expandMacros('{{char}} greets {{user}}. {{CHAR}}/{{User}}', names)).toBe('Ada greets Sam. Ada/Sam');
    expect(expandMacros('<BOT> and <USER>; <bot>, <user>, <char>', names)).toBe('Ada and Sam; Ada, Sam, Ada');
  });

  it('uses the nickname for the character when it has one', () => {
    expect(characterMacroName({ name: 'Ada Lovelace', definition: { nickname: 'Ada' } })).toBe('Ada');
    expect(characterMacroName({ name: 'Ada Lovelace', definition: { nickname: ' ' } })).toBe('Ada Lovelace');
    expect(characterMacroName({ name: 'Ada Lovelace' })).toBe('Ada Lovelace');
    expect(defaultUserName).toBe('User');
  });

  it('leaves unknown macros, unclosed braces and other angle brackets as written', () => {
    expect(expandMacros('{{weather}} {{char:x}} {{random}} <b>bold</b> a < b', names)).toBe('{{weather}} {{char:x}} {{random}} <b>bold</b> a < b');
    expect(expandMacros('open {{char', names)).toBe('open {{char');
    expect(expandMacros('{{unknown {{char}}}}', names)).toBe('{{unknown Ada}}');
  });

  it('never reads a value put in as macros', () => {
    expect(expandMacros('Hi {{user}}', { character: 'Ada', user: '{{char}} <BOT> {{roll:d6}}' })).toBe('Hi {{char}} <BOT> {{roll:d6}}');
  });

  it('puts the original text only where the caller gives one, and only once', () => {
    expect(expandMacros('{{original}}', names)).toBe('{{original}}');
    expect(expandMacros('Before. {{original}} After. {{original}}', { ...names, original: 'Ours.' })).toBe('Before. Ours. After. ');
    expect(expandMacros('{{original}}', { ...names, original: '' })).toBe('');
  });

  it('chooses among comma or double-colon choices with the random source given', () => {
    expect(expandMacros('{{random:red,green,blue}}', { ...names, random: () => 0 })).toBe('red');
    expect(expandMacros('{{random:red, green ,blue}}', { ...names, random: () => 0.5 })).toBe('green');
    expect(expandMacros('{{random::a, b::c}}', { ...names, random: () => 0 })).toBe('a, b');
    expect(expandMacros('{{random: x\\,y , z}}', { ...names, random: () => 0 })).toBe('x,y');
    expect(expandMacros('{{RANDOM:a,b}}{{random:a,b}}', { ...names, random: sequence(0, 0.99) })).toBe('ab');
    expect(expandMacros('{{random:{{char}},{{user}}}}', { ...names, random: () => 0.9 })).toBe('Sam');
  });

  it('picks the same choice for the same seed every time, and may pick otherwise for another seed', () => {
    const text = 'The weather is {{pick:sunny,rainy,foggy,snowy,windy,stormy}}.';
    const first = expandMacros(text, { ...names, pickSeed: 'conversation-1' });
    for (let run = 0; run < 5; run++) expect(expandMacros(text, { ...names, pickSeed: 'conversation-1', random: Math.random })).toBe(first);
    const others = new Set(Array.from({ length: 30 }, (_, index) => expandMacros(text, { ...names, pickSeed: `conversation-${index}` })));
    expect(others.size).toBeGreaterThan(1);
    expect(expandMacros('{{pick::a::b}}', { ...names, pickSeed: 's' })).toMatch(/^[ab]$/);
  });

  it('rolls dice with the random source given', () => {
    expect(expandMacros('{{roll:d20}}', { ...names, random: () => 0.999 })).toBe('20');
    expect(expandMacros('{{roll:20}}', { ...names, random: () => 0 })).toBe('1');
    expect(expandMacros('{{roll 2d6}}', { ...names, random: sequence(0, 0.5) })).toBe('5');
    expect(expandMacros('{{roll:2d6+3}}', { ...names, random: () => 0 })).toBe('5');
    expect(expandMacros('{{roll:banana}} {{roll:0d6}} {{roll:}}', names)).toBe('{{roll:banana}} {{roll:0d6}} {{roll:}}');
  });

  it('removes comments, even over several lines, and writes newlines', () => {
    expect(expandMacros('a{{// note for editors}}b{{//\nline two}}c', names)).toBe('abc');
    expect(expandMacros('one{{newline}}two{{NewLine}}', names)).toBe('one\ntwo\n');
  });

  it('trims the newlines around {{trim}}', () => {
    expect(expandMacros('one\n\n{{trim}}\ntwo', names)).toBe('onetwo');
    expect(expandMacros('{{trim}}\r\nend', names)).toBe('end');
  });

  it('keeps a deep nesting of braces as text instead of exhausting the stack', () => {
    const deep = `${'{{'.repeat(20_000)}char${'}}'.repeat(20_000)}`;
    expect(() => expandMacros(deep, names)).not.toThrow();
  });

  it('returns text without macros as it is', () => {
    const plain = 'Nothing to do here.';
    expect(expandMacros(plain, names)).toBe(plain);
  });
});

describe('rollDice and seededRandom', () => {
  it('keeps every die within its sides, and refuses absurd rolls', () => {
    expect(rollDice('3d6', () => 0.999999)).toBe('18');
    expect(rollDice('d6-1', () => 0)).toBe('0');
    expect(rollDice('101d6', () => 0)).toBeUndefined();
    expect(rollDice('d0', () => 0)).toBeUndefined();
  });

  it('gives the same sequence for the same seed', () => {
    const left = seededRandom('x');
    const right = seededRandom('x');
    const numbers = Array.from({ length: 5 }, () => left());
    expect(numbers).toEqual(Array.from({ length: 5 }, () => right()));
    expect(numbers.every((number) => number >= 0 && number < 1)).toBe(true);
  });
});
