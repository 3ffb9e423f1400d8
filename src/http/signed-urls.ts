import { createHmac, timingSafeEqual } from 'node:crypto';

export interface UrlSignerOptions {
  publicBaseUrl: string;
  secret: string;
  ttlSeconds: number;
  now?: () => number;
}

/**
 * HMAC-signed, expiring URLs of stored files, served under `/files/<key>`. Expiry is
 * rounded up to a quarter of the lifetime, so one file keeps one URL for a while: clients
 * and Discord can cache it, and answers that embed it stay byte-identical.
 */
export class UrlSigner {
  readonly #secret: Buffer;
  readonly #base: string;
  readonly #ttl: number;
  readonly #step: number;
  readonly #now: () => number;

  constructor(options: UrlSignerOptions) {
    this.#secret = Buffer.from(options.secret);
    this.#base = options.publicBaseUrl.replace(/\/+$/, '');
    this.#ttl = options.ttlSeconds;
    this.#step = Math.max(1, Math.floor(options.ttlSeconds / 4));
    this.#now = options.now ?? Date.now;
  }

  /** A URL for `key` valid for at least the configured lifetime. */
  sign(key: string): string {
    const expires = this.expiry();
    return `${this.#base}/files/${encodeURIComponent(key)}?expires=${expires}&signature=${this.#signature(key, expires)}`;
  }

  /** The expiry (Unix seconds) URLs signed now carry; it changes a few times per lifetime. */
  expiry(): number {
    const nowSeconds = Math.floor(this.#now() / 1000);
    return Math.ceil((nowSeconds + this.#ttl) / this.#step) * this.#step;
  }

  /** Why a request for `key` is refused, or undefined when its signature and expiry hold. */
  refusal(key: string, expires: string | undefined, signature: string | undefined): string | undefined {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires)) return 'The link is not signed.';
    const expected = Buffer.from(this.#signature(key, Number(expires)));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'The link signature is not valid.';
    if (Number(expires) * 1000 < this.#now()) return 'The link has expired; ask the API for a fresh one.';
    return undefined;
  }

  #signature(key: string, expires: number): string {
    return createHmac('sha256', this.#secret).update(`${key}\n${expires}`).digest('base64url');
  }
}
