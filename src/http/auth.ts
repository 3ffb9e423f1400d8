import { createMiddleware } from 'hono/factory';
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import type { Actor } from '../core/actor.js';
import type { Core } from '../core/core.js';
import { AppError } from '../core/errors.js';
import type { HttpEnv } from './context.js';

/** Every /api/v0 request carries `Authorization: Bearer <key>`: the admin key or an account's key. */
export function authenticate(core: Core) {
  return createMiddleware<HttpEnv>(async (context, next) => {
    const header = context.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) {
      throw new AppError('UNAUTHORIZED', 'Send your API key as "Authorization: Bearer <key>".');
    }
    context.set('actor', await core.accounts.authenticate(match[1]!));
    await next();
  });
}

/** Limits costly requests (chats, images) per actor, answering 429 with Retry-After past the limit. */
export function rateLimit(limiter: RateLimiterAbstract, perMinute: number) {
  return createMiddleware<HttpEnv>(async (context, next) => {
    try {
      await limiter.consume(actorKey(context.get('actor')));
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfterSeconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new AppError('RATE_LIMITED', `Too many requests: at most ${perMinute} a minute. Try again in ${retryAfterSeconds} s.`, {
        details: { retryAfterSeconds },
      });
    }
    await next();
  });
}

function actorKey(actor: Actor): string {
  return actor.type === 'admin' ? 'admin' : actor.accountId;
}
