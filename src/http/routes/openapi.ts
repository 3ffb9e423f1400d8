import { Hono } from 'hono';
import { openApiDocument } from '../openapi/document.js';
import { referencePage } from '../openapi/reference-page.js';

/**
 * `GET /api/v0/openapi.json` and `GET /api/v0/docs`, without a key: the document is public
 * knowledge, and a client needs it before it has a key. Both are built once, on first ask.
 */
export function openApiRoutes() {
  const app = new Hono();
  let built: { json: string; html: string } | undefined;
  const build = () => {
    if (!built) {
      const document = openApiDocument();
      built = { json: JSON.stringify(document), html: referencePage(document) };
    }
    return built;
  };
  app.get('/openapi.json', (context) => context.body(build().json, 200, { 'Content-Type': 'application/json; charset=utf-8' }));
  // The policy says what the page promises: nothing is fetched from anywhere, not even here.
  app.get('/docs', (context) => context.html(build().html, 200, { 'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'" }));
  return app;
}
