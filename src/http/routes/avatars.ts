import { Hono } from 'hono';
import type { AvatarUrls } from '../../avatar-urls.js';
import { adminActor } from '../../core/actor.js';
import type { Core } from '../../core/core.js';
import { AppError } from '../../core/errors.js';
import { isImageMimeType } from '../../core/media.js';

/** A year: the URL names the file's content, so what it serves never changes. */
const maxAgeSeconds = 365 * 24 * 60 * 60;

/**
 * Character avatars at URLs that do not expire (`GET /avatars/<characterId>/<signature>.<ext>`),
 * for Discord to fetch a persona's picture whenever it shows the message. Anything that is not
 * the character's current avatar, signed, answers 404 alike: nothing tells whether the character
 * exists, is private or was deleted.
 */
export function avatarRoutes(core: Core, avatars: AvatarUrls) {
  const app = new Hono();
  app.get('/:characterId/:fileName', async (context) => {
    const gone = new AppError('NOT_FOUND', 'There is no such avatar.');
    const character = await core.characters.get(adminActor, context.req.param('characterId')).catch((error: unknown) => {
      // A deleted character is gone like one that never was: its 410 would name it.
      if (error instanceof AppError && (error.code === 'NOT_FOUND' || error.code === 'CHARACTER_DELETED')) throw gone;
      throw error;
    });
    if (!avatars.matches(character, context.req.param('fileName')) || !character.avatar) throw gone;
    const file = await core.files.read(character.avatar.key);
    if (!isImageMimeType(file.mimeType)) throw gone;
    return context.body(new Uint8Array(file.bytes), 200, {
      'Content-Type': file.mimeType,
      'Cache-Control': `public, max-age=${maxAgeSeconds}, immutable`,
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': "default-src 'none'",
    });
  });
  return app;
}
