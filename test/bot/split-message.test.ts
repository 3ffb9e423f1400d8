import { describe, expect, it } from 'vitest';
import { continuationAfter, cutMarker, splitMessage, splitWithin } from '../../src/bot/replies/split-message.js';

function sentences(count: number, seed = 1): string {
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const words = ['the', 'character', 'remembers', 'a', 'quiet', 'harbour', 'where', 'boats', 'rest', 'at', 'dawn'];
  return Array.from({ length: count }, () => {
    const length = 5 + Math.floor(random() * 12);
    const sentence = Array.from({ length }, () => words[Math.floor(random() * words.length)]).join(' ');
    return `${sentence[0]!.toUpperCase()}${sentence.slice(1)}.`;
  }).join(random() < 0.2 ? '\n\n' : ' ');
}

describe('splitMessage', () => {
  it('leaves a short reply whole', () => {
    expect(splitMessage('Hello there.')).toEqual(['Hello there.']);
  });

  it('splits at paragraph breaks first', () => {
    const paragraph = (letter: string) => `${letter.repeat(40)} `.repeat(22).trim();
    const text = [paragraph('a'), paragraph('b'), paragraph('c')].join('\n\n');
    expect(splitMessage(text)).toEqual([`${paragraph('a')}\n\n${paragraph('b')}`, paragraph('c')]);
  });

  it('ends messages at sentence ends inside a long paragraph', () => {
    const text = sentences(200).replace(/\n\n/g, ' ');
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts.slice(0, -1)) {
      expect(part.length).toBeLessThanOrEqual(2000);
      expect(part.endsWith('.')).toBe(true);
    }
    expect(parts.join(' ')).toBe(text);
  });

  it('closes and reopens a code block cut in two, keeping its language', () => {
    const code = Array.from({ length: 150 }, (_, index) => `const value${index} = compute(${index}); // step ${index}`).join('\n');
    const text = `Here is the program:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThat is all.`;
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(2);
    for (const [index, part] of parts.entries()) {
      expect(part.length).toBeLessThanOrEqual(2000);
      const fences = part.match(/^```/gm) ?? [];
      expect(fences.length % 2).toBe(0);
      if (index > 0) expect(part.startsWith('```ts\n')).toBe(true);
    }
    expect(parts.at(-1)!.endsWith('That is all.')).toBe(true);
    // Nothing of the code is lost or doubled.
    const lines = parts.join('\n').split('\n').filter((line) => line.startsWith('const value'));
    expect(lines).toEqual(code.split('\n'));
  });

  it('cuts a word only when there is no other place', () => {
    const parts = splitMessage('x'.repeat(4500));
    expect(parts.map((part) => part.length)).toEqual([1996, 1996, 508]);
  });

  it('never exceeds the limit and never changes messages already sent as the text grows', () => {
    for (let seed = 1; seed < 30; seed++) {
      const text = sentences(150, seed);
      const parts = splitMessage(text, 500);
      expect(parts.every((part) => part.length <= 500)).toBe(true);
      for (let length = 0; length < text.length; length += 97) {
        const earlier = splitMessage(text.slice(0, length), 500);
        expect(parts.slice(0, earlier.length - 1)).toEqual(earlier.slice(0, -1));
      }
    }
  });

  it('goes on after a point of the text as a message of its own: leading space dropped, an open code block opened again', () => {
    expect(continuationAfter('Once upon a time there', 11)).toBe('time there');
    const text = 'Look:\n```ts\nconst a = 1;\nconst b = 2;\n```\nDone.';
    expect(continuationAfter(text, text.indexOf('const b'))).toBe('```ts\nconst b = 2;\n```\nDone.');
    expect(continuationAfter(text, text.indexOf('Done.'))).toBe('Done.');
    expect(continuationAfter(text, text.length)).toBe('');
    expect(continuationAfter('Only this.  \n', 10)).toBe('');
  });
});

describe('splitWithin', () => {
  it('splits as splitMessage when the messages suffice, and otherwise cuts the last with the marker', () => {
    const text = sentences(150);
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(2);
    expect(splitWithin(text, parts.length)).toEqual(parts);
    const two = splitWithin(text, 2);
    expect(two).toHaveLength(2);
    expect(two[0]).toBe(parts[0]);
    expect(two[1]!.endsWith(cutMarker)).toBe(true);
    expect(two[1]!.length).toBeLessThanOrEqual(2000);
    expect(parts[1]!.startsWith(two[1]!.slice(0, -cutMarker.length))).toBe(true);
    // Within a shorter limit too, and never fewer than one message.
    expect(splitWithin(text, 0, 500)).toHaveLength(1);
    expect(splitWithin(text, 1, 500)[0]!.length).toBeLessThanOrEqual(500);
  });
});
