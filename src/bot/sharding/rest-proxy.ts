import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { proxyRequests } from '@discordjs/proxy';
import { REST } from '@discordjs/rest';
import type { Logger } from '../../core/ports.js';

export interface RestProxy {
  /** What shard processes use as DISCORD_API_BASE (up to `/api`). */
  url: string;
  close(): Promise<void>;
}

/**
 * @discordjs/proxy on loopback: every shard process sends its REST requests through one
 * `REST`, so the per-route buckets and the global limit of the bot token are kept once,
 * as Discord counts them, instead of once per process.
 */
export async function startRestProxy(options: { upstream: string | undefined; logger: Logger }): Promise<RestProxy> {
  // Requests carry the shard's own Authorization header; this REST adds none.
  const rest = new REST({ version: '10', ...(options.upstream ? { api: options.upstream } : {}) });
  const forward = proxyRequests(rest);
  const server: Server = createServer((request, response) => {
    Promise.resolve(forward(request, response)).catch((error: unknown) => {
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
