import { describe, expect, it } from 'vitest';
import { speakableText } from '../../src/core/speakable-text.js';

describe('speakableText', () => {
  it('leaves out actions, links, code and Discord markup, and keeps the words of emphasis', () => {
    expect(speakableText('*waves* Hi there! See <https://example.com/x>.')).toBe('Hi there! See.');
    expect(speakableText('I **really** like __this__ and ~~that~~, ||secret||.')).toBe('I really like this and that, secret.');
    expect(speakableText('Run `npm test` first:\n```sh\nnpm test\n```\nThen wait.')).toBe('Run npm test first:\n\nThen wait.');
    expect(speakableText('<@123456789012345678> look at <:blob:123456789012345678> and <#123456789012345678>')).toBe('look at and');
    expect(speakableText('Read [the guide](https://example.com/guide) now.')).toBe('Read the guide now.');
    expect(speakableText('# Title\n> quoted line\n- a point\n-# small print')).toBe('Title\nquoted line\na point\nsmall print');
    expect(speakableText('snake_case_name stays, _soft_ goes soft')).toBe('snake_case_name stays, soft goes soft');
  });

  it('is empty when nothing is to be said aloud', () => {
    expect(speakableText('*nods slowly*')).toBe('');
    expect(speakableText('https://example.com')).toBe('');
    expect(speakableText('Plain words stay as they are.')).toBe('Plain words stay as they are.');
  });
});
