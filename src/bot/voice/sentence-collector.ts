import { splitSentences } from '../../engines/speech/speech-text.js';

/**
 * Collects a reply that arrives in pieces into whole sentences, so each can be spoken as
 * soon as it is complete. The last sentence is held until more text (or the end) shows it
 * is finished.
 */
export class SentenceCollector {
  #text = '';
  #handedOut = false;

  /** Takes the next piece; returns the sentences it completed. */
  push(piece: string): string[] {
    this.#text += piece;
    // Until the first sentence is out, nothing is playing and every token's wait is heard: it
    // goes out on the first word of the next, not once 12 characters of that are written (three
    // tokens or more). Later ones wait, so a short last sentence joins the one before it.
    const sentences = splitSentences(this.#text, undefined, { keepShortTail: !this.#handedOut });
    if (sentences.length < 2) return [];
    const complete = sentences.slice(0, -1);
    // Keep what follows the last complete sentence, exactly as written.
    const last = sentences.at(-1)!;
    this.#text = this.#text.slice(this.#text.lastIndexOf(last));
    this.#handedOut = true;
    return complete;
  }

  /** The reply ended: whatever is left. */
  end(): string[] {
    const rest = splitSentences(this.#text);
    this.#text = '';
    return rest;
  }
}
