/**
 * What of a written reply is said aloud. Characters write for a chat window: actions between
 * single asterisks (`*smiles*`), Markdown, links, code and Discord's mention and emoji markup.
 * A voice reads none of that as a person would, so it is left out (actions, code blocks, links,
 * markup) or reduced to its words (emphasis, spoilers, headings, quotes, inline code).
 */
const rules: ReadonlyArray<[RegExp, string]> = [
  // Fenced code blocks: nothing to say.
  [/```[\s\S]*?(?:```|$)/g, ' '],
  // Discord markup: custom emoji, user, role and channel mentions, timestamps.
  [/<a?:\w+:\d+>/g, ' '],
  [/<(?:@[!&]?|#)\d+>/g, ' '],
  [/<t:\d+(?::[a-zA-Z])?>/g, ' '],
  // Links: a Markdown link keeps its words, a bare or bracketed address goes.
  [/\[([^\]]+)\]\((?:<)?https?:\/\/[^)\s]+(?:>)?\)/g, '$1'],
  [/<https?:\/\/[^>\s]+>/g, ' '],
  [/https?:\/\/\S+/g, ' '],
  // Strong emphasis and underline keep their words (before single asterisks are read as actions).
  [/\*\*(.+?)\*\*/gs, '$1'],
  [/__(.+?)__/gs, '$1'],
  // An action between single asterisks is not said.
  [/\*[^*\n]+\*/g, ' '],
  [/(^|[\s(])_([^_\n]+)_(?=[\s.,!?;:)]|$)/g, '$1$2'],
  [/~~(.+?)~~/gs, '$1'],
  [/\|\|(.+?)\|\|/gs, '$1'],
  [/`([^`\n]+)`/g, '$1'],
  // Line markers: headings, quotes, list bullets, Discord's small text.
  [/^[ \t]*(?:#{1,6}|>{1,3}|-#|[-*+])[ \t]+/gm, ''],
  // Stray markup left over (an underscore inside a word, as in snake_case, stays).
  [/[*~`|]+/g, ' '],
  [/(?<![\p{L}\p{N}])_+|_+(?![\p{L}\p{N}])/gu, ' '],
];

/** `text` as a voice should say it; empty when nothing in it is to be said aloud. */
export function speakableText(text: string): string {
  let spoken = text;
  for (const [pattern, replacement] of rules) spoken = spoken.replace(pattern, replacement);
  return spoken
    .split('\n')
    .map((line) => line.replace(/[ \t]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/ +([.,!?;:])/g, '$1')
    .trim();
}
