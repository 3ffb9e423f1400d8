import type { HttpBindings } from '@hono/node-server';
import type { Actor } from '../core/actor.js';
import type { AvatarUrls } from '../avatar-urls.js';
import type { Core } from '../core/core.js';
import type { Logger } from '../core/ports.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RateLimits } from '../rate-limits.js';
import type { HealthProbes } from './routes/health.js';
import type { Serializers } from './serializers.js';
import type { UrlSigner } from './signed-urls.js';

/** What every route may use; built once by `createApp`. */
export interface HttpDependencies {
  core: Core;
  signer: UrlSigner;
  /** Non-expiring avatar URLs (personas on Discord); without it `/avatars` is not served. */
  avatars?: AvatarUrls;
  logger: Logger;
  /** Chat requests allowed per account per minute. */
  rateLimitPerMinute: number;
  /** Where limits are counted: shared by every process on a PostgreSQL store; in memory by default. */
  rateLimits?: RateLimits;
  /** How long `POST /images` with `synchronous: true` waits for the images. */
  synchronousImageWaitMs: number;
  /** State of the parts for /healthz and /readyz; without it the bot counts as disabled and the store as up. */
  health?: HealthProbes;
  /** False in a process without the api role: only /healthz and /readyz are served. Default true. */
  api?: boolean;
  /** Request counts and latency by route, when metrics are on; with `metricsToken`, /metrics is served here too. */
  metrics?: Metrics | undefined;
  metricsToken?: string | undefined;
}

export interface RouteDependencies extends HttpDependencies {
  serializers: Serializers;
  rateLimits: RateLimits;
}

export interface HttpEnv {
  Bindings: HttpBindings;
  Variables: { actor: Actor };
}
