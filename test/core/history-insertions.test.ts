import { describe, expect, it } from 'vitest';
import { insertIntoHistory } from '../../src/core/history-insertions.js';
import type { ChatMessage } from '../../src/core/ports.js';

const turns: ChatMessage[] = [
  { role: 'system', content: 'You are Ada.' },
  { role: 'user', content: 'one' },
  { role: 'assistant', content: 'two' },
  { role: 'user', content: 'three' },
];

describe('insertIntoHistory', () => {
  it('puts depth 0 after the newest turn, merged into it when the role is the same', () => {
    expect(insertIntoHistory(turns, [{ depth: 0, role: 'user', text: 'note' }]).at(-1)).toEqual({ role: 'user', content: 'three\n\nnote' });
  });

  it('counts depth in turns from the end, with the role given', () => {
    const placed = insertIntoHistory(turns, [{ depth: 1, role: 'assistant', text: 'aside' }]);
    expect(placed.map((turn) => turn.content)).toEqual(['You are Ada.', 'one', 'two\n\naside', 'three']);
    const user = insertIntoHistory(turns, [{ depth: 2, role: 'user', text: 'hint' }]);
    expect(user.map((turn) => turn.content)).toEqual(['You are Ada.', 'one\n\nhint', 'two', 'three']);
  });

  it('sends a system insertion as user text, never a second system message', () => {
    const placed = insertIntoHistory(turns, [{ depth: 1, role: 'system', text: 'World note.' }]);
    expect(placed.filter((turn) => turn.role === 'system')).toHaveLength(1);
    expect(placed.map((turn) => turn.content)).toEqual(['You are Ada.', 'one', 'two', 'World note.\n\nthree']);
  });

  it('puts an insertion deeper than the history right after the system prompt, keeping the order given', () => {
    const placed = insertIntoHistory(turns, [
      { depth: 99, role: 'user', text: 'first' },
      { depth: 99, role: 'user', text: 'second' },
    ]);
    expect(placed.map((turn) => turn.content)).toEqual(['You are Ada.', 'first\n\nsecond\n\none', 'two', 'three']);
  });

  it('joins with image parts, and leaves out empty insertions', () => {
    const withImage: ChatMessage[] = [{ role: 'user', content: [{ type: 'image', mimeType: 'image/png', data: new Uint8Array([1]) }] }];
    const placed = insertIntoHistory(withImage, [
      { depth: 0, role: 'user', text: 'after' },
      { depth: 0, role: 'assistant', text: '  ' },
    ]);
    expect(placed).toHaveLength(1);
    expect(placed[0]!.content).toEqual([{ type: 'image', mimeType: 'image/png', data: new Uint8Array([1]) }, { type: 'text', text: '\n\n' }, { type: 'text', text: 'after' }]);
  });
});
