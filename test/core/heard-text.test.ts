import { describe, expect, it } from 'vitest';
import { heardText } from '../../src/core/heard-text.js';

const sentences = [
  { text: 'The tide is coming in.', durationMs: 1000 },
  { text: 'We should move the boats, all of them, before dark.', durationMs: 2000 },
  { text: 'Then we eat.', durationMs: 600 },
];

describe('heard text', () => {
  it('keeps the sentences played to the end and the words of the one cut off, in proportion to its time', () => {
    expect(heardText(sentences, 1000)).toBe('The tide is coming in.');
    expect(heardText(sentences, 2000)).toBe('The tide is coming in. We should move the boats…');
    expect(heardText(sentences, 2450)).toBe('The tide is coming in. We should move the boats, all of…');
    expect(heardText(sentences, 10_000)).toBe('The tide is coming in. We should move the boats, all of them, before dark. Then we eat.');
  });

  it('hears nothing before the first word has played, and never cuts inside a word', () => {
    expect(heardText(sentences, 0)).toBe('');
    expect(heardText(sentences, 50)).toBe('');
    expect(heardText(sentences, 1020)).toBe('The tide is coming in.');
    expect(heardText(sentences, 1100)).toBe('The tide is coming in. We…');
    expect(heardText([], 500)).toBe('');
  });
});
