import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Metrics } from './metrics.js';

/**
 * Hono middleware counting requests and their duration by the matched route pattern
 * (`/api/v0/characters/:characterId`), so ids never become labels. Mount it first with
 * `app.use(httpMetrics(metrics))`: it then sees errors already turned into responses by
 * `onError`, and a request no endpoint matched is labelled `unmatched` rather than by its path.
 */
export function httpMetrics(metrics: Metrics): MiddlewareHandler {
  return async (context, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      // Read after next(): Hono leaves the route index on the last handler that ran, the one
      // that answered. A 404 answered past a wildcard middleware (`/api/v0/*`) means no
      // endpoint took the request, and its path must not become a label.
      const pattern = routePath(context);
      const route = pattern.endsWith('*') && context.res.status === 404 ? 'unmatched' : pattern;
      metrics.http.observe(route, context.req.method, context.res.status, (performance.now() - started) / 1000);
    }
  };
}
