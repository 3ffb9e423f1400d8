import { Hono } from 'hono';
import type { HttpEnv } from '../context.js';

/** What the bot is doing: `disabled` without DISCORD_TOKEN, `failed` when Discord refused it for good. */
export type DiscordHealth = 'disabled' | 'connecting' | 'ready' | 'failed';

/** The parts of the service orchestration asks about. */
export interface HealthProbes {
  discord(): DiscordHealth;
  /** Each shard's state by shard id, where this process manages the bot's shards (DISCORD_SHARDS). */
  discordShards?(): Record<number, DiscordHealth>;
  /** Whether the store answers a read. */
  storeReachable(): Promise<boolean>;
  /** The chat engine's state: the embedded one is not ready until its model is fetched and loaded. */
  chatModel?(): ChatModelHealth | undefined;
}

/** What /readyz says of the chat model; `reason` says why it is not ready and what to do. */
export type ChatModelHealth = { ready: true; engine: string; model: string } | { ready: false; engine: string; model: string; state: string; reason: string; percent?: number };

const storeProbeTimeoutMs = 2_000;

/**
 * `/healthz`: the process serves (always 200 while it does), with the bot's state.
 * `/readyz`: 200 only when every configured part is up, else 503 naming the parts that are not.
 */
export function healthRoutes(probes: HealthProbes) {
  const app = new Hono<HttpEnv>();
  const shards = () => (probes.discordShards ? { shards: probes.discordShards() } : {});
  app.get('/healthz', (context) => context.json({ status: 'ok', discord: probes.discord(), ...shards() }));
  app.get('/readyz', async (context) => {
    const discord = probes.discord();
    const store = (await withTimeout(probes.storeReachable(), storeProbeTimeoutMs)) ? 'ok' : 'unreachable';
    const chatModel = probes.chatModel?.();
    const notReady = [
      ...(store === 'ok' ? [] : ['store']),
      ...(discord === 'ready' || discord === 'disabled' ? [] : ['discord']),
      ...(chatModel === undefined || chatModel.ready ? [] : ['chat_model']),
    ];
    const chat = chatModel === undefined ? {} : { chatModel };
    return context.json({ status: notReady.length === 0 ? 'ready' : 'not_ready', notReady, store, discord, ...chat, ...shards() }, notReady.length === 0 ? 200 : 503);
  });
  return app;
}

async function withTimeout(probe: Promise<boolean>, milliseconds: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), milliseconds);
  });
  try {
    return await Promise.race([probe.catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
