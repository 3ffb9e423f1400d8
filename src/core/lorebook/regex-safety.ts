/**
 * A regular-expression key comes from whoever wrote the card, and JavaScript's engine backtracks:
 * `(a+)+$` on thirty letters runs for minutes. Keys with a repetition inside a repeated group (the
 * pattern behind most such blow-ups) are refused before they run. The check is not sound (`(a|aa)*c`
 * and `a*a*a*a*c` pass it and are as slow), so it is no safeguard: that is the bound the
 * RegexKeyRunner port keeps on every pattern's time. It spares a process learning the commonest
 * case by running it, and tells a person writing a key why it is refused.
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

const backreferenceRefusal = 'a backreference (\\1, \\k<name>) can take exponential time whatever the rest of the pattern; write it without one';

/**
 * Why `pattern` is refused for holding a backreference, or undefined. Only said to a person
 * writing a key: a card's keys are taken as they are and bounded in time when they run.
 */
export function backreferenceProblem(pattern: string): string | undefined {
  for (let index = 0; index < pattern.length; index++) {
    const character = pattern[index];
    if (character === '[') index = endOfClass(pattern, index);
    else if (character === '\\') {
      const next = pattern[index + 1] ?? '';
      if (/[1-9]/.test(next) || (next === 'k' && pattern[index + 2] === '<')) return backreferenceRefusal;
      index++;
    }
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
