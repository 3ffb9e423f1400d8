import { RESTEvents, type Client, type REST, type RateLimitData, type ResponseLike } from 'discord.js';
import type { Metrics } from './metrics.js';

/** The part of the request discord.js hands to its `response` event that the metrics read. */
interface RequestFigures {
  method: string;
  /** discord.js's bucket route, ids already elided (`/channels/:id/messages/:id`). */
  route: string;
}

/**
 * Counts every Discord REST response by route bucket, the 429s among them, and the requests
 * discord.js held back on its own. Returns a function that detaches the listeners.
 *
 * The 429s come from the `response` event, not `rateLimited`: @discordjs/rest emits
 * `rateLimited` only when it waits for a bucket it knows is spent, and reports a 429 it
 * received only to `rejectOnRateLimit`. Both are counted, apart, since a climbing wait count
 * is normal pacing while any 429 is a limit we failed to respect.
 */
export function watchDiscordRest(rest: REST, metrics: Metrics): () => void {
  const onResponse = (request: RequestFigures, response: ResponseLike) =>
    metrics.discord.restResponse(request.method, request.route, response.status, response.headers.get('x-ratelimit-scope') ?? undefined);
  const onRateLimited = (info: RateLimitData) => metrics.discord.rateLimitWait(info.method, info.route, info.global);
  rest.on(RESTEvents.Response, onResponse);
  rest.on(RESTEvents.RateLimited, onRateLimited);
  return () => {
    rest.off(RESTEvents.Response, onResponse);
    rest.off(RESTEvents.RateLimited, onRateLimited);
  };
}

/**
 * Reads each gateway shard's status and heartbeat latency from the client when Prometheus
 * scrapes: the figures are those discord.js already keeps, so nothing listens on the gateway.
 * In a sharded process this reports the shards that process holds.
 */
export function watchGateway(client: Client, metrics: Metrics): void {
  metrics.discord.collectShardsWith(() => client.ws.shards.map((shard) => ({ id: shard.id, status: shard.status, pingMs: shard.ping })));
}
