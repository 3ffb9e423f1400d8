/**
 * Text a card puts into the history rather than the system prompt: lorebook entries at a depth
 * (0 = after the newest message) with a role, and the post-history instructions after it all.
 * Turns of one role that end up side by side are merged, as the history's own are, because
 * several chat templates reject two user turns in a row. For the same reason a `system`
 * insertion goes as user text: Gemma's and Mistral's templates refuse a system message after the
 * first, and the reply would fail every time.
 */
import type { ChatContentPart, ChatMessage } from './ports.js';

export interface HistoryInsertion {
  /** How many turns from the end (0 = after the newest); deeper than the history, right after the system prompt. */
  depth: number;
  role: 'system' | 'user' | 'assistant';
  text: string;
}

/**
 * `turns` (oldest first, after the system prompt) with `insertions` placed; several at one depth
 * keep the order given. The first turn is left alone when it is the system prompt.
 */
export function insertIntoHistory(turns: readonly ChatMessage[], insertions: readonly HistoryInsertion[]): ChatMessage[] {
  const leading = turns[0]?.role === 'system' ? 1 : 0;
  const history = turns.slice(leading);
  const before = new Map<number, HistoryInsertion[]>();
  for (const insertion of insertions) {
    if (insertion.text.trim() === '') continue;
    const index = Math.max(0, history.length - Math.max(0, Math.floor(insertion.depth)));
    before.set(index, [...(before.get(index) ?? []), insertion]);
  }
  const placed: ChatMessage[] = [];
  for (let index = 0; index <= history.length; index++) {
    for (const insertion of before.get(index) ?? []) placed.push({ role: insertion.role === 'assistant' ? 'assistant' : 'user', content: insertion.text });
    const turn = history[index];
    if (turn) placed.push(turn);
  }
  return [...turns.slice(0, leading), ...mergeRoles(placed)];
}

function mergeRoles(turns: readonly ChatMessage[]): ChatMessage[] {
  const merged: ChatMessage[] = [];
  for (const turn of turns) {
    const previous = merged.at(-1);
    if (previous && previous.role === turn.role) merged[merged.length - 1] = { role: turn.role, content: join(previous.content, turn.content) };
    else merged.push(turn);
  }
  return merged;
}

function join(left: ChatMessage['content'], right: ChatMessage['content']): ChatMessage['content'] {
  if (typeof left === 'string' && typeof right === 'string') return `${left}\n\n${right}`;
  return [...asParts(left), { type: 'text', text: '\n\n' }, ...asParts(right)];
}

function asParts(content: ChatMessage['content']): ChatContentPart[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}
