import { Hono } from 'hono';
import type { Core } from '../../core/core.js';
import { AppError } from '../../core/errors.js';
import { mimeTypeOfKey } from '../../store/file-store.js';
import type { UrlSigner } from '../signed-urls.js';

/** Stored files behind signed, expiring URLs (`GET /files/<key>?expires=…&signature=…`). */
export function fileRoutes(core: Core, signer: UrlSigner) {
  const app = new Hono();
  app.get('/:key', async (context) => {
    const key = context.req.param('key');
    const refusal = signer.refusal(key, context.req.query('expires'), context.req.query('signature'));
    if (refusal) throw new AppError('FORBIDDEN', refusal);
    const bytes = await core.files.read(key);
    if (!bytes) throw new AppError('NOT_FOUND', 'That file does not exist.');
    const expiresInSeconds = Math.max(0, Number(context.req.query('expires')) - Math.floor(Date.now() / 1000));
    return context.body(new Uint8Array(bytes), 200, {
      'Content-Type': mimeTypeOfKey(key) ?? 'application/octet-stream',
      'Cache-Control': `private, max-age=${expiresInSeconds}, immutable`,
      'X-Content-Type-Options': 'nosniff',
    });
  });
  return app;
}
