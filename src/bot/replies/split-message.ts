/** Discord's limit on a message's content. */
export const discordMessageLimit = 2000;

const fencePattern = /^ {0,3}(`{3,}|~{3,})([^\n`]*)$/gm;

/**
 * Splits a reply into messages of at most `limit` characters, each ending at a paragraph
 * break, else a line break, else a sentence end, else a space, and only as a last resort in
 * the middle of a word. A code block cut in two is closed at the end of one message and
 * reopened, with its language, at the start of the next, so each message renders on its own.
 *
 * Splitting is stable as the text grows: a message's boundary depends only on the text
 * before it, so messages already sent never change when more text arrives.
 */
export function splitMessage(text: string, limit = discordMessageLimit): string[] {
  const parts: string[] = [];
  let rest = text;
  let reopen = '';
  while (reopen.length + rest.length > limit) {
    const window = reopen + rest;
    // Leave room to close a code block left open at the cut.
    const cut = findCut(window, limit - 4, reopen.length);
    const head = window.slice(0, cut);
    const open = openFence(head);
    const closing = open ? `${head.endsWith('\n') ? '' : '\n'}${open.marker}` : '';
    parts.push((head + closing).trimEnd());
    rest = window.slice(cut).replace(/^\n+/, '');
    reopen = open ? `${open.marker}${open.info}\n` : '';
  }
  if (rest.trim().length > 0 || parts.length === 0) parts.push(reopen + rest);
  return parts;
}

/** Ends a reply cut to the messages it may take: says so, where "…" alone reads as the character trailing off. */
export const cutMarker = ' … *(cut: too long to show here)*';

/**
 * `splitMessage` into at most `maxParts` messages: when the text needs more, the last one shows
 * as much of its own part as fits before `cutMarker`, and the rest is not shown.
 */
export function splitWithin(text: string, maxParts: number, limit = discordMessageLimit): string[] {
  const parts = splitMessage(text, limit);
  if (parts.length <= maxParts) return parts;
  const kept = parts.slice(0, Math.max(1, maxParts));
  const last = kept.length - 1;
  const room = limit - cutMarker.length;
  kept[last] = (kept[last]!.length <= room ? kept[last]! : kept[last]!.slice(0, room).trimEnd()) + cutMarker;
  return kept;
}

/**
 * What follows `offset` of `text`, to go on in a message of its own after one that shows the
 * text up to there: leading space dropped, or, inside a code block, the block opened again with
 * its language, so the rest renders as it would have.
 */
export function continuationAfter(text: string, offset: number): string {
  const rest = text.slice(offset);
  if (rest.trim() === '') return '';
  const open = openFence(text.slice(0, offset));
  return open ? `${open.marker}${open.info}\n${rest.replace(/^\n+/, '')}` : rest.trimStart();
}

/** The best place at or before `limit` to end a message; never before `minimum`. */
function findCut(text: string, limit: number, minimum: number): number {
  const window = text.slice(0, limit);
  const lowest = Math.max(minimum + 1, Math.floor(limit / 2));
  const candidates = [
    window.lastIndexOf('\n\n'),
    window.lastIndexOf('\n'),
    Math.max(window.lastIndexOf('. '), window.lastIndexOf('! '), window.lastIndexOf('? '), window.lastIndexOf('.\n')) + 1,
    window.lastIndexOf(' '),
  ];
  for (const position of candidates) {
    if (position >= lowest) return position + 1;
  }
  return limit;
}

/** The code fence left open at the end of `text`, if any. */
function openFence(text: string): { marker: string; info: string } | undefined {
  let open: { marker: string; info: string } | undefined;
  for (const match of text.matchAll(fencePattern)) {
    const marker = match[1]!;
    if (!open) open = { marker, info: match[2]!.trim() };
    else if (marker[0] === open.marker[0] && marker.length >= open.marker.length && match[2]!.trim() === '') open = undefined;
  }
  return open;
}
