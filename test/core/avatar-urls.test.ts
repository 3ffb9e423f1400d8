import { describe, expect, it } from 'vitest';
import { AvatarUrls, isPublicBaseUrl } from '../../src/avatar-urls.js';

const character = { id: 'c1', avatar: { key: 'file-1', mimeType: 'image/png' } };

describe('AvatarUrls', () => {
  const avatars = new AvatarUrls({ publicBaseUrl: 'https://likeness.example/', secret: 'a-signing-secret-of-some-length' });

  it('names the avatar file, unguessably and for good: no expiry, a new URL for a new file', () => {
    const url = avatars.urlOf(character)!;
    expect(url).toMatch(/^https:\/\/likeness\.example\/avatars\/c1\/[A-Za-z0-9_-]{43}\.png$/);
    expect(url).not.toContain('?');
    const fileName = url.split('/').at(-1)!;
    expect(avatars.matches(character, fileName)).toBe(true);
    expect(avatars.matches({ ...character, avatar: { key: 'file-2', mimeType: 'image/png' } }, fileName)).toBe(false);
    expect(avatars.matches({ ...character, id: 'c2' }, fileName)).toBe(false);
    expect(avatars.matches(character, fileName.replace('.png', '.jpg'))).toBe(false);
    expect(new AvatarUrls({ publicBaseUrl: 'https://likeness.example', secret: 'another-secret-entirely' }).matches(character, fileName)).toBe(false);
    expect(avatars.urlOf({ ...character, avatar: { key: 'file-3', mimeType: 'image/jpeg' } })).toMatch(/\.jpg$/);
  });

  it('has no URL for a character without an avatar or with a type it does not serve', () => {
    expect(avatars.urlOf({ id: 'c1', avatar: null })).toBeUndefined();
    expect(avatars.urlOf({ id: 'c1', avatar: { key: 'k', mimeType: 'image/svg+xml' } })).toBeUndefined();
  });
});

describe('isPublicBaseUrl', () => {
  it('refuses bases Discord could not fetch from', () => {
    for (const url of ['http://localhost:8080', 'http://app.localhost', 'http://127.0.0.1:3000', 'http://10.1.2.3', 'http://172.20.0.1', 'http://192.168.1.10',
      'http://169.254.1.1', 'http://100.64.0.1', 'http://0.0.0.0', 'http://[::1]:8080', 'http://[fd00::1]', 'http://[fe80::1]', 'http://[::ffff:127.0.0.1]',
      'http://likeness', 'http://box.local', 'not a url']) {
      expect(isPublicBaseUrl(url), url).toBe(false);
    }
  });

  it('takes public names and addresses', () => {
    for (const url of ['https://likeness.example', 'https://bot.example.com/base', 'http://8.8.8.8', 'http://172.32.0.1', 'http://[2001:db8::1]']) {
      expect(isPublicBaseUrl(url), url).toBe(true);
    }
  });
});
