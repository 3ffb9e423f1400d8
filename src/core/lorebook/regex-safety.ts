/**
 * A regular-expression key comes from whoever wrote the card, and JavaScript's engine backtracks:
 * `(a+)+$` on thirty letters runs for minutes and would stall every chat on the process. Keys with
 * a repetition inside a repeated group (the pattern behind nearly all such blow-ups) are refused;
 * what is left can still be slow in proportion to a power of the text's length, which the
 * scanned text's bound (scan-text.ts) keeps small.
 */

const refusal = 'a repetition inside a repeated group can take exponential time (as (a+)+ does); write it without the nesting';

/** Why `pattern` is refused, or undefined when it has no nested repetition. */
export function repetitionProblem(pattern: string): string | undefined {
  // One flag per open group: whether something inside it repeats without a small bound.
  const groups: boolean[] = [false];
  for (let index = 0; index < pattern.length; index++) {
    const character = pattern[index];
    if (character === '\\') {
      index++;
      continue;
    }
    if (character === '[') {
      index = endOfClass(pattern, index);
      continue;
    }
    if (character === '(') {
      groups.push(false);
      continue;
    }
    if (character === ')') {
      const repeatsInside = groups.length > 1 ? groups.pop()! : false;
      const repeated = repeatsAt(pattern, index + 1);
      if (repeated && repeatsInside) return refusal;
      if (repeated || repeatsInside) groups[groups.length - 1] = true;
      continue;
    }
    if (repeatsAt(pattern, index)) groups[groups.length - 1] = true;
  }
  return undefined;
}

/** Where the character class opened at `start` closes (its `]`), escapes and a leading `]` read as members. */
function endOfClass(pattern: string, start: number): number {
  let index = start + 1;
  if (pattern[index] === '^') index++;
  if (pattern[index] === ']') index++;
  while (index < pattern.length && pattern[index] !== ']') index += pattern[index] === '\\' ? 2 : 1;
  return index;
}

/** Whether a quantifier at `index` repeats without a small bound: `*`, `+`, `{n,}`, `{n,m}` beyond ten. */
function repeatsAt(pattern: string, index: number): boolean {
  const character = pattern[index];
  if (character === '*' || character === '+') return true;
  if (character !== '{') return false;
  const bounds = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(index, index + 24));
  if (!bounds) return false;
  if (bounds[2] === undefined) return Number(bounds[1]) > 10;
  return bounds[3] === '' || Number(bounds[3]) > 10;
}
