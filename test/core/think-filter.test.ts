import { describe, expect, it } from 'vitest';
import { ThinkFilter } from '../../src/core/think-filter.js';

function run(pieces: string[]): string {
  const filter = new ThinkFilter();
  return pieces.map((piece) => filter.push(piece)).join('') + filter.end();
}

describe('ThinkFilter', () => {
  it('removes a reasoning block given whole', () => {
    expect(run(['<think>plan the answer</think>Hello there'])).toBe('Hello there');
  });

  it('removes a block whose tags are split across pieces', () => {
    expect(run(['<th', 'ink>secret ', 'plan</thi', 'nk>Vis', 'ible'])).toBe('Visible');
  });

  it('keeps text that only looks like the start of a tag', () => {
    expect(run(['a <', 'b and <thin', 'g'])).toBe('a <b and <thing');
    expect(run(['ends with <th'])).toBe('ends with <th');
  });

  it('drops an unterminated block at the end', () => {
    expect(run(['before<think>never closed'])).toBe('before');
  });

  it('handles several blocks, one character at a time', () => {
    const text = 'A<think>x</think>B<think>y</think>C';
    expect(run([...text])).toBe('ABC');
  });
});
