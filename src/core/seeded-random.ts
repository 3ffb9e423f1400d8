/**
 * Random numbers that follow from a text: the same seed gives the same sequence in every
 * process, so a `{{pick}}` in a card stays what it was for the whole conversation.
 */

/** A 32-bit FNV-1a hash of `text`. */
export function hashText(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Numbers in [0, 1) from `seed` (mulberry32: small, fast, and good enough for choosing among a few). */
export function seededRandom(seed: string): () => number {
  let state = hashText(seed);
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}
