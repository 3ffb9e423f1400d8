/**
 * The Discord watchers on real discord.js objects: a REST client against a loopback server
 * answering with Discord's rate-limit headers, a Client logged in to the fake Discord gateway,
 * and @discordjs/voice's own connection registry.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { joinVoiceChannel } from '@discordjs/voice';
import { REST, Status } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchDiscordRest, watchGateway } from '../../src/metrics/discord-metrics.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { startMetricsServer, type RunningMetricsServer } from '../../src/metrics/metrics-server.js';
import { watchVoiceConnections } from '../../src/metrics/voice-metrics.js';
import { startWithClient } from '../fake-discord/harness.js';
import { scrape, valueOf } from './exposition.js';

const channelId = '222222222222222222';

/**
 * Answers message posts as Discord does for a bucket of 2 per 0.2 s: the first post gets a 429
 * (scope user, as for a limit another process spent), the rest 200s counting the bucket down.
 */
async function startRateLimitedDiscord(): Promise<{ url: string; posts: () => number; close(): Promise<void> }> {
  let posts = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    posts += 1;
    const bucket = { 'x-ratelimit-limit': '2', 'x-ratelimit-bucket': 'abcd1234', 'x-ratelimit-reset': String(Date.now() / 1000 + 0.2) };
    if (posts === 1) {
      response.writeHead(429, {
        ...bucket,
        'content-type': 'application/json',
        'retry-after': '0.1',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset-after': '0.1',
        'x-ratelimit-scope': 'user',
      });
      response.end(JSON.stringify({ message: 'You are being rate limited.', retry_after: 0.1, global: false }));
      return;
    }
    response.writeHead(200, { ...bucket, 'content-type': 'application/json', 'x-ratelimit-remaining': posts === 2 ? '0' : '1', 'x-ratelimit-reset-after': '0.2' });
    response.end(JSON.stringify({ id: `33333333333333333${posts}`, channel_id: channelId, content: 'hi' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api`,
    posts: () => posts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('Discord metrics', () => {
  const servers: Array<{ close(): Promise<void> }> = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it('counts REST responses and 429s by route bucket, and the waits discord.js chose', async () => {
    const discord = await startRateLimitedDiscord();
    const metrics = new Metrics({ processMetrics: false });
    const metricsServer = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
    servers.push(discord, metricsServer);
    const rest = new REST({ api: discord.url, retries: 1, offset: 0 }).setToken('bot-token');
    const detach = watchDiscordRest(rest, metrics);

    await rest.post(`/channels/${channelId}/messages`, { body: { content: 'one' } });
    await rest.post(`/channels/${channelId}/messages`, { body: { content: 'two' } });
    detach();
    await rest.post(`/channels/${channelId}/messages`, { body: { content: 'not counted' } });
    expect(discord.posts()).toBe(4);

    const exposition = await scrape(metricsServer.url);
    const route = '/channels/:id/messages';
    expect(valueOf(exposition, 'likeness_discord_rest_requests_total', { method: 'POST', route, status_class: '2xx' })).toBe(2);
    expect(valueOf(exposition, 'likeness_discord_rest_requests_total', { method: 'POST', route, status_class: '4xx' })).toBe(1);
    expect(valueOf(exposition, 'likeness_discord_rest_429_total', { method: 'POST', route, scope: 'user' })).toBe(1);
    // The second post found the bucket spent (remaining 0) and was held back, not sent into a
    // 429. Under a full suite on two busy cores discord.js was seen to report two waits (its
    // 0.2 s windows then pass while requests are still queued), so at least one, at most two.
    const waits = valueOf(exposition, 'likeness_discord_rest_rate_limit_waits_total', { method: 'POST', route, global: 'false' });
    expect(waits).toBeGreaterThanOrEqual(1);
    expect(waits).toBeLessThanOrEqual(2);
  });

  it('reads shard status and heartbeat latency from a client on the fake gateway', async () => {
    const discord = await startWithClient({ heartbeatIntervalMs: 100 });
    servers.push({ close: () => discord.stop() });
    const metrics = new Metrics({ processMetrics: false });
    const metricsServer = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
    servers.push(metricsServer);
    watchGateway(discord.client, metrics);

    await discord.fake.waitFor((state) => state.gatewayStats.heartbeats >= 2, 5_000);
    const ready = await scrape(metricsServer.url);
    expect(valueOf(ready, 'likeness_discord_shard_status', { shard: '0' })).toBe(Status.Ready);
    expect(valueOf(ready, 'likeness_discord_shard_heartbeat_latency_seconds', { shard: '0' })).toBeGreaterThanOrEqual(0);

    // Whatever discord.js then says of the shard is what operators see: no longer Ready.
    await discord.client.destroy();
    const destroyed = await scrape(metricsServer.url);
    expect(valueOf(destroyed, 'likeness_discord_shard_status', { shard: '0' })).not.toBe(Status.Ready);
  });

  it('counts voice connections by status from @discordjs/voice', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const metricsServer = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
    servers.push(metricsServer);
    watchVoiceConnections(metrics);
    expect(valueOf(await scrape(metricsServer.url), 'likeness_discord_voice_connections', { status: 'signalling' })).toBeUndefined();

    // No voice wire is needed to hold a connection: one whose gateway adapter sends nothing
    // stays `signalling`, as a real one does until Discord answers the voice state update.
    const connection = joinVoiceChannel({
      guildId: '444444444444444444',
      channelId: '555555555555555555',
      adapterCreator: () => ({ sendPayload: () => true, destroy: () => undefined }),
    });
    try {
      expect(valueOf(await scrape(metricsServer.url), 'likeness_discord_voice_connections', { status: 'signalling' })).toBe(1);
    } finally {
      connection.destroy();
    }
    expect(valueOf(await scrape(metricsServer.url), 'likeness_discord_voice_connections', { status: 'signalling' })).toBeUndefined();
  });
});
