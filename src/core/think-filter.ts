const open = '<think>';
const close = '</think>';

/**
 * Removes `<think>…</think>` reasoning from a reply that arrives in pieces. Tags may be
 * split across pieces, so a possible tag start is held back until the next piece decides it.
 */
export class ThinkFilter {
  #inside = false;
  #pending = '';

  /** Takes the next piece of the reply; returns the part a person may see now. */
  push(piece: string): string {
    let text = this.#pending + piece;
    this.#pending = '';
    let visible = '';
    while (text.length > 0) {
      const tag = this.#inside ? close : open;
      const found = text.indexOf(tag);
      if (found >= 0) {
        if (!this.#inside) visible += text.slice(0, found);
        text = text.slice(found + tag.length);
        this.#inside = !this.#inside;
        continue;
      }
      const held = partialTagLength(text, tag);
      if (!this.#inside) visible += text.slice(0, text.length - held);
      this.#pending = text.slice(text.length - held);
      break;
    }
    return visible;
  }

  /** Ends the reply: returns text held back that turned out not to be a tag. */
  end(): string {
    const rest = this.#inside ? '' : this.#pending;
    this.#pending = '';
    return rest;
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagLength(text: string, tag: string): number {
  for (let length = Math.min(tag.length - 1, text.length); length > 0; length--) {
    if (text.endsWith(tag.slice(0, length))) return length;
  }
  return 0;
}
