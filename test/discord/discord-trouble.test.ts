import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/main.js';
import { type FakeDiscord, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.js';
import { onFreePort } from '../support/ports.js';

const adminKey = 'discord-trouble-admin-key';

interface Started {
  service: RunningService;
  discord: FakeDiscord;
  url: string;
  /** Parsed log lines. */
  logs: Array<Record<string, unknown>>;
}

describe('Discord trouble does not take the API down', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function start(token: (discord: FakeDiscord) => string, prepare: (discord: FakeDiscord) => void = () => {}): Promise<Started> {
    const discord = await startFakeDiscord();
    const llm: FakeOpenAI = await startFakeOpenAI({ script: { reply: 'hi' } });
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'likeness-discord-trouble-'));
    cleanups.push(() => discord.close(), () => llm.close(), () => rm(dataDir, { recursive: true, force: true }));
    prepare(discord);
    const logs: Array<Record<string, unknown>> = [];
    const logger = createLogger('info', { write: (line: string) => void logs.push(JSON.parse(line)) });
    const service = await onFreePort((port) =>
      startService(
        parseConfig({ PORT: String(port), DATA_DIR: dataDir, ADMIN_API_KEY: adminKey, LLM_BASE_URL: llm.baseURL, DISCORD_TOKEN: token(discord), DISCORD_API_BASE: discord.apiBase }),
        logger,
      ),
    );
    cleanups.push(() => service.stop());
    return { service, discord, url: service.url, logs };
  }

  const json = async (url: string) => {
    const response = await fetch(url);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const gatewayRequests = (discord: FakeDiscord) => discord.requests.filter((request) => request.route === 'GET /gateway/bot').length;

  it('keeps serving with an invalid token, says so once, and does not retry in a loop', async () => {
    const { url, discord, logs } = await start((fake) => `${fake.token}x`);
    await expect.poll(async () => (await json(`${url}/healthz`)).body, { timeout: 60_000 }).toEqual({ status: 'ok', discord: 'failed' });
    const ready = await json(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ notReady: ['discord'], store: 'ok', discord: 'failed' });
    const created = await fetch(`${url}/api/v0/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'still-served' }),
    });
    expect(created.status).toBe(201);
    const asked = gatewayRequests(discord);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(gatewayRequests(discord)).toBe(asked);
    const refusals = logs.filter((line) => String(line.msg).includes('Discord refused the bot token'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]!.level).toBe(50);
    expect(JSON.stringify(logs)).not.toContain(discord.token);
  });

  it('retries with backoff while /gateway/bot answers 503, and becomes ready when Discord recovers', async () => {
    // @discordjs/rest tries each request four times: the first login fails, the second succeeds.
    const { url, discord, service, logs } = await start(
      (fake) => fake.token,
      (fake) => fake.forceServerError({ route: 'GET /gateway/bot', status: 503, count: 6 }),
    );
    const first = await json(`${url}/healthz`);
    expect(first.body).toEqual({ status: 'ok', discord: 'connecting' });
    expect((await json(`${url}/readyz`)).status).toBe(503);
    await service.discordReady();
    expect((await json(`${url}/healthz`)).body).toEqual({ status: 'ok', discord: 'ready' });
    expect(await json(`${url}/readyz`)).toEqual({ status: 200, body: { status: 'ready', notReady: [], store: 'ok', discord: 'ready', chatModel: { ready: true, engine: 'openai-compatible', model: 'llama3.2' } } });
    expect(gatewayRequests(discord)).toBe(7);
    expect(logs.filter((line) => line.msg === 'Discord bot could not start; retrying')).toHaveLength(1);
  });

  it('gives up with one error line when the gateway refuses the token at start-up (close 4004)', async () => {
    const { url, discord, logs } = await start(
      (fake) => fake.token,
      (fake) => fake.refuseGatewayLogins(true),
    );
    await expect.poll(async () => (await json(`${url}/healthz`)).body, { timeout: 60_000 }).toEqual({ status: 'ok', discord: 'failed' });
    const asked = gatewayRequests(discord);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(gatewayRequests(discord)).toBe(asked);
    expect(logs.filter((line) => String(line.msg).includes('Discord refused the bot token'))).toHaveLength(1);
    expect((await json(`${url}/readyz`)).status).toBe(503);
  });

  it('reports a gateway Discord closes for good (4004) as failed', async () => {
    const { url, discord, service } = await start((fake) => fake.token);
    await service.discordReady();
    discord.dropGatewayConnections({ code: 4004 });
    await expect.poll(async () => (await json(`${url}/healthz`)).body, { timeout: 60_000 }).toEqual({ status: 'ok', discord: 'failed' });
    expect((await json(`${url}/readyz`)).status).toBe(503);
  });
});
