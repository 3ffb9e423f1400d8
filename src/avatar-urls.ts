import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

/** Image types an avatar URL serves, and the extension each is named with. */
const extensions: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

/** A character as far as its avatar URL goes. */
export interface AvatarOwner {
  id: string;
  avatar: { key: string; mimeType: string } | null;
}

export interface AvatarUrlsOptions {
  publicBaseUrl: string;
  /** The URL signing secret (`loadSigningSecret`). */
  secret: string;
}

/**
 * Character avatars at public URLs that never expire, for Discord, which fetches a webhook
 * message's `avatar_url` each time the message is shown:
 * `<PUBLIC_BASE_URL>/avatars/<characterId>/<HMAC of the avatar's file key>.<ext>`. The HMAC makes
 * the URL unguessable and binds it to the file: a new avatar gets a new URL, and the old one
 * answers 404 from then on (old messages show Discord's cached copy, or none).
 */
export class AvatarUrls {
  readonly #secret: Buffer;
  readonly #base: string;

  constructor(options: AvatarUrlsOptions) {
    this.#secret = Buffer.from(options.secret);
    this.#base = options.publicBaseUrl.replace(/\/+$/, '');
  }

  /** The avatar's URL; undefined without an avatar or for a type not served. */
  urlOf(character: AvatarOwner): string | undefined {
    const extension = character.avatar ? extensions[character.avatar.mimeType] : undefined;
    if (!character.avatar || extension === undefined) return undefined;
    return `${this.#base}/avatars/${encodeURIComponent(character.id)}/${this.#signature(character.id, character.avatar.key)}.${extension}`;
  }

  /** Whether `fileName` (`<signature>.<ext>`) names this character's current avatar. */
  matches(character: AvatarOwner, fileName: string): boolean {
    const extension = character.avatar ? extensions[character.avatar.mimeType] : undefined;
    if (!character.avatar || extension === undefined) return false;
    const expected = Buffer.from(`${this.#signature(character.id, character.avatar.key)}.${extension}`);
    const given = Buffer.from(fileName);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** Whether Discord could fetch these URLs: not when the base is loopback, private or local. */
  isPublic(): boolean {
    return isPublicBaseUrl(this.#base);
  }

  #signature(characterId: string, avatarKey: string): string {
    return createHmac('sha256', this.#secret).update(`avatar\n${characterId}\n${avatarKey}`).digest('base64url');
  }
}

/** Whether a URL's host is reachable from the internet as far as its name tells: not localhost, loopback, private or link-local. */
export function isPublicBaseUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  } catch {
    return false;
  }
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal') || (!host.includes('.') && isIP(host) === 0)) return false;
  if (isIP(host) === 4) {
    const [a = 0, b = 0] = host.split('.').map(Number);
    return !(a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127));
  }
  if (isIP(host) === 6) {
    // IPv4-mapped addresses, which URL writes in hex (::ffff:7f00:1 for 127.0.0.1).
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
    if (mapped) {
      const [high, low] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
      return isPublicBaseUrl(`http://${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
    }
    return !(host === '::1' || host === '::' || /^f[cd]/.test(host) || /^fe[89ab]/.test(host));
  }
  return true;
}
