import { Hono } from 'hono';
import type { Core } from '../../core/core.js';
import { AppError } from '../../core/errors.js';
import type { UrlSigner } from '../signed-urls.js';

/** Stored files behind signed, expiring URLs (`GET /files/<key>?expires=…&signature=…`). */
export function fileRoutes(core: Core, signer: UrlSigner) {
  const app = new Hono();
  app.get('/:key', async (context) => {
    const key = context.req.param('key');
    const refusal = signer.refusal(key, context.req.query('expires'), context.req.query('signature'));
    if (refusal) throw new AppError('FORBIDDEN', refusal);
    const file = await core.files.read(key);
    const expiresInSeconds = Math.max(0, Number(context.req.query('expires')) - Math.floor(Date.now() / 1000));
    return context.body(new Uint8Array(file.bytes), 200, {
      'Content-Type': file.mimeType,
      'Cache-Control': `private, max-age=${expiresInSeconds}, immutable`,
      'X-Content-Type-Options': 'nosniff',
    });
  });
  return app;
}
