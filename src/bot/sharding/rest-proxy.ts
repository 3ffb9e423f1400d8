import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buffer } from 'node:stream/consumers';
import { populateErrorResponse } from '@discordjs/proxy';
import { REST, type RequestMethod, type RouteLike } from '@discordjs/rest';
import type { Logger } from '../../core/ports.js';
import { sentRequestsPerSecond } from '../pacing/channel-pacer.js';
import { globalWindows, withGlobalWindows } from '../pacing/global-window.js';

/** What the proxy passes to Discord a second: the bot's whole budget (see `sentRequestsPerSecond`). */
export const proxyRequestsPerSecond = sentRequestsPerSecond;

export interface RestProxy {
  /** What shard processes use as DISCORD_API_BASE (up to `/api`). */
  url: string;
  close(): Promise<void>;
}

/**
 * A REST proxy on loopback in the manner of @discordjs/proxy: every shard process sends its
 * REST requests through one `REST`, so the per-route buckets and the global limit of the bot
 * token are kept once, as Discord counts them, instead of once per process.
 */
export async function startRestProxy(options: { upstream: string | undefined; token: string; logger: Logger }): Promise<RestProxy> {
  // Requests carry the shard's own Authorization header; this REST adds none. The token's
  // requests and the token-less ones (webhooks) each have their own window, as in one process,
  // and a webhook request goes with the token when the address's window is the busier.
  const rest = new REST({
    version: '10',
    globalRequestsPerSecond: 2 * proxyRequestsPerSecond,
    makeRequest: withGlobalWindows(globalWindows(proxyRequestsPerSecond, { token: () => options.token })),
    ...(options.upstream ? { api: options.upstream } : {}),
  });
  const server: Server = createServer((request, response) => {
    forward(rest, request, response).catch((error: unknown) => {
      options.logger.warn({ err: error, method: request.method }, 'the Discord REST proxy could not forward a request');
      if (!response.headersSent) response.statusCode = 502;
      response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * @discordjs/proxy's `proxyRequests`, with two differences. The body is read whole before the
 * request is queued: `proxyRequests` hands REST the request stream itself, so a request REST
 * sends again (after a 429, a 5xx or a timeout) goes out with an empty body, and Discord takes
 * an empty PATCH as an edit that changes nothing: the final text of a reply was lost that way.
 * And Discord's `X-RateLimit-*` headers come back to the shard, whose pacer follows each
 * channel's bucket by them (a channel belongs to one shard, so its view of the bucket is whole).
 */
async function forward(rest: REST, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://proxy');
  const body = await buffer(request);
  const headers: Record<string, string> = {};
  if (request.headers['content-type']) headers['Content-Type'] = request.headers['content-type'];
  if (request.headers.authorization) headers.authorization = request.headers.authorization;
  const reason = request.headers['x-audit-log-reason'];
  if (typeof reason === 'string') headers['X-Audit-Log-Reason'] = reason;
  // A shard that gave up waiting (its own REST timed out and will send again) wants no answer.
  const abandoned = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) abandoned.abort();
  });
  try {
    const answer = await rest.queueRequest({
      fullRoute: url.pathname.replace(/^\/api(\/v\d+)?/, '') as RouteLike,
      // An unknown method goes on for Discord to refuse, as with @discordjs/proxy.
      method: request.method as RequestMethod,
      ...(body.length > 0 ? { body, passThroughBody: true } : {}),
      query: url.searchParams,
      headers,
      auth: false,
      signal: abandoned.signal,
    });
    response.statusCode = answer.status;
    for (const [name, value] of answer.headers) response.setHeader(name, value);
    if (answer.body) response.write(Buffer.from(await answer.arrayBuffer()));
  } catch (error) {
    if (!populateErrorResponse(response, error)) throw error;
  } finally {
    response.end();
  }
}
