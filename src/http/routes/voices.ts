import { Hono } from 'hono';
import { AppError } from '../../core/errors.js';
import type { HttpEnv, RouteDependencies } from '../context.js';

/** `GET /api/v0/voices`: what the speech engine offers a character. */
export function voiceRoutes({ core }: RouteDependencies) {
  const app = new Hono<HttpEnv>();
  app.get('/', async (context) => {
    if (!core.speech) throw new AppError('NOT_CONFIGURED', 'No speech engine is configured; set TTS_ENGINE.');
    const voices = await core.speech.voices();
    return context.json({ success: true, engine: core.speech.provider, maxTextLength: core.speech.maxTextLength, voices });
  });
  return app;
}
