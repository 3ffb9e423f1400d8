import type { FieldIssue } from '../core/errors.js';

const nul = '\u0000';
const mostNamed = 10;
export const nulMessage = 'holds a NUL character (U+0000), which no text may contain; remove it and send again';

/**
 * The fields of a parsed JSON body or a query whose text (a value, or a member's name) holds a
 * NUL, at any depth, as dotted paths under `prefix`; the first few, found without recursion so
 * no nesting can overflow the stack. The stores would cut such text (SQLite) or fail on it
 * (PostgreSQL), so it is refused at the edge, named, before anything is read from it.
 */
export function nulFields(value: unknown, prefix: string, rootName: string): FieldIssue[] {
  const found: FieldIssue[] = [];
  const pending: Array<{ value: unknown; path: string[] }> = [{ value, path: [] }];
  const name = (path: string[]) => (path.length === 0 ? rootName : prefix + path.join('.'));
  while (pending.length > 0 && found.length < mostNamed) {
    const { value: next, path } = pending.pop()!;
    if (typeof next === 'string') {
      if (next.includes(nul)) found.push({ field: name(path), message: nulMessage });
    } else if (Array.isArray(next)) {
      for (let index = next.length - 1; index >= 0; index--) pending.push({ value: next[index], path: [...path, String(index)] });
    } else if (next !== null && typeof next === 'object') {
      const entries = Object.entries(next);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, member] = entries[index]!;
        // A name holding a NUL is named escaped, so the answer stays readable.
        const shown = key.includes(nul) ? key.replaceAll(nul, '\\u0000') : key;
        if (shown !== key) found.push({ field: name([...path, shown]), message: nulMessage });
        else pending.push({ value: member, path: [...path, key] });
      }
    }
  }
  return found.slice(0, mostNamed);
}
