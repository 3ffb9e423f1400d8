/**
 * JSON.stringify with some values written as given JSON text: other apps' `extensions` go out
 * as read. A value to be written raw is replaced by a placeholder string that no card text can
 * hold (a NUL and a random nonce), and the placeholder's quoted form is swapped for the text.
 */
import { randomUUID } from 'node:crypto';

export class RawJsonWriter {
  private readonly nonce = randomUUID();
  private readonly texts: string[] = [];

  /** A stand-in for `json` (which must be valid JSON) in the value given to `stringify`. */
  raw(json: string): string {
    this.texts.push(json);
    return `\u0000raw:${this.nonce}:${this.texts.length - 1}`;
  }

  stringify(value: unknown): string {
    // JSON.stringify writes the NUL as the six characters \u0000.
    const placeholder = new RegExp(`"\\\\u0000raw:${this.nonce}:(\\d+)"`, 'g');
    return JSON.stringify(value).replace(placeholder, (_match, index: string) => this.texts[Number(index)]!);
  }
}
