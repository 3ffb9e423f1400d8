/**
 * Where values sit in a JSON text, so other apps' `extensions` go back out as the very text
 * read: no re-serialising can promise that (key order, spacing, `\u00e9` escapes and numbers
 * past 2^53 all change). The text must already have passed `JSON.parse`; these walk it one
 * level at a time and never build the values.
 */

/** A value's text is `text.slice(start, end)`. */
export interface Span {
  start: number;
  end: number;
}

const quote = 0x22;
const backslash = 0x5c;

function skipWhitespace(text: string, index: number): number {
  let at = index;
  while (at < text.length) {
    const code = text.charCodeAt(at);
    if (code !== 0x20 && code !== 0x0a && code !== 0x0d && code !== 0x09) break;
    at += 1;
  }
  return at;
}

/** The index after the string starting at `index` (its opening quote). */
function skipString(text: string, index: number): number {
  let at = index + 1;
  for (;;) {
    const close = text.indexOf('"', at);
    if (close < 0) throw new Error(`unterminated string at ${index}`);
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === backslash) backslashes += 1;
    if (backslashes % 2 === 0) return close + 1;
    at = close + 1;
  }
}

/** The index after the value starting at `index`. */
export function skipValue(text: string, index: number): number {
  const first = text.charCodeAt(index);
  if (first === quote) return skipString(text, index);
  if (first !== 0x7b && first !== 0x5b) {
    let at = index;
    while (at < text.length && !',}] \n\r\t'.includes(text.charAt(at))) at += 1;
    return at;
  }
  let depth = 0;
  let at = index;
  while (at < text.length) {
    const code = text.charCodeAt(at);
    if (code === quote) {
      at = skipString(text, at);
      continue;
    }
    if (code === 0x7b || code === 0x5b) depth += 1;
    else if (code === 0x7d || code === 0x5d) {
      depth -= 1;
      if (depth === 0) return at + 1;
    }
    at += 1;
  }
  throw new Error(`unterminated value at ${index}`);
}

export interface Member {
  key: string;
  /** The key's opening quote, for removing or replacing the whole member. */
  keyStart: number;
  value: Span;
}

/** The members of the object starting at `index`, in text order (a repeated key appears twice; the last wins, as in `JSON.parse`). */
export function objectMembers(text: string, index: number): Member[] {
  const members: Member[] = [];
  let at = skipWhitespace(text, index + 1);
  if (text.charCodeAt(at) === 0x7d) return members;
  for (;;) {
    const keyStart = at;
    const keyEnd = skipString(text, keyStart);
    const rawKey = text.slice(keyStart + 1, keyEnd - 1);
    const key = rawKey.includes('\\') ? (JSON.parse(text.slice(keyStart, keyEnd)) as string) : rawKey;
    const valueStart = skipWhitespace(text, skipWhitespace(text, keyEnd) + 1);
    const valueEnd = skipValue(text, valueStart);
    members.push({ key, keyStart, value: { start: valueStart, end: valueEnd } });
    at = skipWhitespace(text, valueEnd);
    if (text.charCodeAt(at) === 0x7d) return members;
    at = skipWhitespace(text, at + 1);
  }
}

/** The span of `key` in the object at `index` (the last if repeated), if it is there. */
export function memberSpan(text: string, index: number, key: string): Span | undefined {
  return objectMembers(text, index).findLast((member) => member.key === key)?.value;
}

/** The elements of the array starting at `index`. */
export function arrayElements(text: string, index: number): Span[] {
  const elements: Span[] = [];
  let at = skipWhitespace(text, index + 1);
  if (text.charCodeAt(at) === 0x5d) return elements;
  for (;;) {
    const end = skipValue(text, at);
    elements.push({ start: at, end });
    at = skipWhitespace(text, end);
    if (text.charCodeAt(at) === 0x5d) return elements;
    at = skipWhitespace(text, at + 1);
  }
}

/** The text of an object-valued span, or `{}` when the value is absent or not an object. */
export function objectText(text: string, span: Span | undefined): string {
  if (span === undefined || text.charCodeAt(span.start) !== 0x7b) return '{}';
  return text.slice(span.start, span.end);
}
