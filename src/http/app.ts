import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { AppError } from '../core/errors.js';
import { httpMetrics } from '../metrics/http-metrics.js';
import { metricsRoutes } from '../metrics/metrics-server.js';
import { memoryRateLimits } from '../rate-limits.js';
import { authenticate } from './auth.js';
import type { HttpDependencies, HttpEnv } from './context.js';
import { handleError } from './errors.js';
import { accountRoutes } from './routes/accounts.js';
import { avatarRoutes } from './routes/avatars.js';
import { memoryRoutes, proposedMemoryRoutes } from './routes/memories.js';
import { characterRoutes } from './routes/characters.js';
import { lorebookRoutes } from './routes/lorebooks.js';
import { conversationRoutes } from './routes/conversations.js';
import { fileRoutes } from './routes/files.js';
import { healthRoutes } from './routes/health.js';
import { imageRoutes } from './routes/images.js';
import { openApiRoutes } from './routes/openapi.js';
import { voiceRoutes } from './routes/voices.js';
import { Serializers } from './serializers.js';

/** Largest request body: a chat message may carry a 10 MB image as base64. */
export const maxBodyBytes = 15 * 1024 * 1024;

/** Largest upload of face photos for a training (up to 30 photos). */
export const maxTrainingBodyBytes = 110 * 1024 * 1024;

const trainingPath = /\/characters\/[^/]+\/images\/models\/?$/;

/** The HTTP front end: the spec's `/api/v0` JSON API, signed files, avatars and a health check. */
export function createApp(dependencies: HttpDependencies) {
  const routes = { ...dependencies, serializers: new Serializers(dependencies.signer), rateLimits: dependencies.rateLimits ?? memoryRateLimits() };
  const app = new Hono<HttpEnv>();

  const onError = handleError(dependencies.logger);
  app.onError(onError);
  app.notFound((context) =>
    onError(new AppError('NOT_FOUND', `There is no endpoint ${context.req.method} ${context.req.path}.`), context),
  );

  if (dependencies.metrics) {
    app.use(httpMetrics(dependencies.metrics));
    if (dependencies.metricsToken) app.route('/', metricsRoutes(dependencies.metrics, { token: dependencies.metricsToken }));
  }
  app.use(async (context, next) => {
    const started = performance.now();
    await next();
    dependencies.logger.debug(
      { method: context.req.method, path: context.req.path, status: context.res.status, durationMs: Math.round(performance.now() - started) },
      'request',
    );
  });

  app.route('/', healthRoutes(dependencies.health ?? { discord: () => 'disabled', storeReachable: async () => true }));
  if (dependencies.api === false) return app;
  app.route('/files', fileRoutes(dependencies.core, dependencies.signer));
  if (dependencies.avatars) app.route('/avatars', avatarRoutes(dependencies.core, dependencies.avatars));
  // Before the API's key check, which these two must not pass through.
  app.route('/api/v0', openApiRoutes());

  const api = new Hono<HttpEnv>();
  const limitBody = (maxSize: number) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw new AppError('PAYLOAD_TOO_LARGE', `The request body is larger than ${maxSize / 1024 / 1024} MB.`);
      },
    });
  const limitOrdinary = limitBody(maxBodyBytes);
  const limitTraining = limitBody(maxTrainingBodyBytes);
  // Only requests that may carry a body: the limit wraps the body stream, and building that
  // stream for every GET costs more than the rest of a cached conversation read.
  api.use((context, next) => {
    if (context.req.method === 'GET' || context.req.method === 'HEAD') return next();
    // Node hands bodies over as sent; nothing here inflates them, so a compressed body could
    // only be misread. Refusing it plainly also keeps gzip bombs out should that ever change.
    const encoding = context.req.header('content-encoding')?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Request bodies are taken uncompressed; this one is ${encoding}. Send it without Content-Encoding.`);
    }
    return (trainingPath.test(context.req.path) ? limitTraining : limitOrdinary)(context, next);
  });
  api.use(authenticate(dependencies.core));
  api.route('/conversations', conversationRoutes(routes));
  api.route('/accounts', accountRoutes(routes));
  api.route('/characters', characterRoutes(routes));
  api.route('/characters', proposedMemoryRoutes(routes));
  api.route('/characters', lorebookRoutes(routes));
  api.route('/memories', memoryRoutes(routes));
  api.route('/voices', voiceRoutes(routes));
  api.route('/', imageRoutes(routes));
  app.route('/api/v0', api);
  return app;
}
