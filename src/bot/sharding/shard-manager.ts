/**
 * DISCORD_SHARDS: the bot role becomes a manager that forks one process per shard (discord.js's
 * ShardingManager, mode 'process'), each running this service with ROLES=bot. The manager asks
 * Discord for the recommended count and `max_concurrency`, starts shards in identify buckets
 * (shards whose `id % max_concurrency` differ start together, one bucket period apart), puts its
 * REST proxy between the shards and Discord, starts a shard that dies again in its identify
 * bucket (so shards that die together never identify too close), and reports the shards'
 * states for /healthz and /readyz.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Shard, ShardingManager } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { DiscordStatus } from '../bot-supervisor.js';
import { ReadyWaiters } from '../ready-waiters.js';
import { type RestProxy, startRestProxy } from './rest-proxy.js';

export interface ShardManagerOptions {
  token: string;
  /** A count, or `auto` for the count Discord recommends. */
  shards: number | 'auto';
  /** Where REST goes beyond the proxy (up to `/api`); Discord's by default. */
  apiBase: string | undefined;
  /** The script each shard runs and the node options it runs with (this process's own). */
  entry: string;
  execArgv: readonly string[];
  /** This service's public URL: links a shard signs (files, avatars) point here, not at the shard's own port. */
  publicBaseUrl: string;
  logger: Logger;
  /** Time from one shard's READY to the next identify in its bucket; Discord's 5 s between identifies. */
  identifyIntervalMs?: number;
  /** How long a shard may take to log in before the next bucket starts anyway. */
  readyTimeoutMs?: number;
}

const discordApi = 'https://discord.com/api';
const stopWaitMs = 40_000;
const retryMs = { initial: 1_000, max: 60_000 };

/** What `GET /gateway/bot` says of sharding. */
interface GatewayBot {
  shards: number;
  maxConcurrency: number;
}

export class ShardManager {
  readonly #states = new Map<number, DiscordStatus>();
  readonly #waiters = new ReadyWaiters();
  #refused = false;
  /** Aborted by `stop()`: ends the waits of start-up at once. */
  readonly #stopping = new AbortController();
  #manager: ShardingManager | undefined;
  #buckets: IdentifyBuckets | undefined;
  #proxy: RestProxy | undefined;
  readonly #started: Promise<void>;

  constructor(private readonly options: ShardManagerOptions) {
    this.#started = this.#start().catch((error: unknown) => {
      if (!this.#stopped) options.logger.error({ err: error }, 'the shard manager failed');
    });
  }

  get #stopped(): boolean {
    return this.#stopping.signal.aborted;
  }

  /** `ready` when every shard is; `failed` when Discord refused the token or a shard for good. */
  get status(): DiscordStatus {
    if (this.#refused) return 'failed';
    const states = [...this.#states.values()];
    if (states.length === 0) return 'connecting';
    if (states.includes('failed')) return 'failed';
    return states.every((state) => state === 'ready') ? 'ready' : 'connecting';
  }

  /** Each shard's state by id. */
  get shards(): Record<number, DiscordStatus> {
    return Object.fromEntries(this.#states);
  }

  whenReady(): Promise<void> {
    return this.#waiters.wait(this.status);
  }

  /** Stops every shard the way SIGTERM stops a service (its bot leaves voice channels), then the proxy. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#started;
    const manager = this.#manager;
    if (manager) {
      manager.respawn = false;
      await Promise.all([...manager.shards.values()].map((shard) => shard.process && stopChild(shard.process)));
    }
    await this.#proxy?.close();
    this.#waiters.settle(new Error('the Discord bot was stopped'));
  }

  async #start(): Promise<void> {
    const { options } = this;
    const gateway = await this.#askGateway();
    if (!gateway || this.#stopped) return;
    const count = options.shards === 'auto' ? gateway.shards : options.shards;
    this.#proxy = await startRestProxy({ upstream: options.apiBase, token: options.token, logger: options.logger });
    // Respawns are ours (below), so a shard that dies waits for its identify bucket like at start.
    const manager = new ShardingManager(options.entry, { totalShards: count, token: options.token, mode: 'process', respawn: false, execArgv: [...options.execArgv] });
    this.#buckets = new IdentifyBuckets(gateway.maxConcurrency, options.identifyIntervalMs ?? 5_000);
    this.#manager = manager;
    for (let id = 0; id < count; id += 1) this.#states.set(id, 'connecting');
    const shardEnvironment = {
      ROLES: 'bot',
      // A shard serves only its health, on a port of its own choosing; the metrics port stays the manager's.
      PORT: '0',
      PUBLIC_BASE_URL: options.publicBaseUrl,
      METRICS_PORT: '',
      DISCORD_SHARDS: '',
      DISCORD_API_BASE: this.#proxy.url,
    };
    manager.on('shardCreate', (shard) => {
      Object.assign(shard.env as NodeJS.ProcessEnv, shardEnvironment);
      this.#watch(shard);
    });
    options.logger.info({ shards: count, maxConcurrency: gateway.maxConcurrency, proxy: this.#proxy.url }, 'starting Discord shards');
    for (let first = 0; first < count && !this.#stopped; first += gateway.maxConcurrency) {
      const bucket = Array.from({ length: Math.min(gateway.maxConcurrency, count - first) }, (_, index) => first + index);
      await Promise.all(bucket.map((id) => this.#buckets!.run(id, this.#stopping.signal, () => this.#spawn(manager, id))));
    }
  }

  async #spawn(manager: ShardingManager, id: number): Promise<void> {
    if (this.#stopped) return;
    const ready = manager.createShard(id).spawn(this.options.readyTimeoutMs ?? 60_000);
    const stopped = new Promise((resolve) => this.#stopping.signal.addEventListener('abort', resolve, { once: true }));
    await Promise.race([ready, stopped]).catch((error: unknown) => {
      if (!this.#stopped) this.options.logger.warn({ err: error, shardId: id }, 'a shard was not ready in time; the next ones start anyway');
    });
  }

  /** Starts a dead shard again once its identify bucket is free (shards that die together queue). */
  async #respawn(shard: Shard): Promise<void> {
    await this.#buckets!.run(shard.id, this.#stopping.signal, async () => {
      if (this.#stopped) return;
      await shard.spawn(this.options.readyTimeoutMs ?? 60_000).then(
        () => undefined,
        (error: unknown) => {
          if (!this.#stopped) this.options.logger.warn({ err: error, shardId: shard.id }, 'a restarted shard was not ready in time');
        },
      );
    });
  }

  #watch(shard: Shard): void {
    const set = (state: DiscordStatus) => () => {
      this.#states.set(shard.id, state);
      if (this.status === 'ready') this.#waiters.settle();
      if (this.status === 'failed') this.#waiters.settle(new Error('a Discord shard failed for good'));
    };
    shard.on('ready', set('ready'));
    shard.on('resume', set('ready'));
    shard.on('reconnecting', set('connecting'));
    shard.on('disconnect', set('failed'));
    shard.on('spawn', set('connecting'));
    shard.on('death', () => {
      if (this.#stopped) return;
      this.options.logger.warn({ shardId: shard.id }, 'a shard process ended; it is started again in its identify bucket');
      set('connecting')();
      this.#respawn(shard).catch((error: unknown) => {
        if (!this.#stopped) this.options.logger.error({ err: error, shardId: shard.id }, 'a shard could not be started again');
      });
    });
    shard.on('error', (error) => this.options.logger.error({ err: error, shardId: shard.id }, 'shard error'));
  }

  /** The recommended count and identify concurrency, asked until Discord answers; undefined once it refuses the token. */
  async #askGateway(): Promise<GatewayBot | undefined> {
    const url = `${this.options.apiBase ?? discordApi}/v10/gateway/bot`;
    for (let delay = retryMs.initial; !this.#stopped; delay = Math.min(delay * 2, retryMs.max)) {
      try {
        const signal = AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(15_000)]);
        const response = await fetch(url, { headers: { Authorization: `Bot ${this.options.token}` }, signal });
        if (response.status === 401) {
          this.#refused = true;
          this.#waiters.settle(new Error('Discord refused the bot token'));
          this.options.logger.error({ status: response.status }, 'Discord refused the bot token (DISCORD_TOKEN); the shards stay off until the configuration is fixed and the service restarted');
          return undefined;
        }
        if (!response.ok) throw new Error(`GET /gateway/bot answered ${response.status}`);
        const body = (await response.json()) as { shards?: number; session_start_limit?: { max_concurrency?: number } };
        return { shards: Math.max(1, body.shards ?? 1), maxConcurrency: Math.max(1, body.session_start_limit?.max_concurrency ?? 1) };
      } catch (error) {
        if (this.#stopped) return undefined;
        this.options.logger.warn({ err: error, retryInMs: delay }, 'could not ask Discord how to shard; retrying');
        await sleep(delay, undefined, { signal: this.#stopping.signal }).catch(() => undefined);
      }
    }
    return undefined;
  }
}

/**
 * Discord's identify buckets: shards whose `id % max_concurrency` agree share one, which takes
 * one identify per period. Starts in one bucket run one after another: each waits for the
 * period to pass since the one before it was ready (its READY follows its identify), so a shard
 * that boots slowly never brings the next identify closer than the period.
 */
class IdentifyBuckets {
  readonly #freeAt = new Map<number, number>();
  readonly #queues = new Map<number, Promise<void>>();

  constructor(
    private readonly maxConcurrency: number,
    private readonly periodMs: number,
  ) {}

  /** Runs `start` (resolving once the shard is ready, or has given up) in the shard's bucket. */
  run(shardId: number, signal: AbortSignal, start: () => Promise<void>): Promise<void> {
    const bucket = shardId % this.maxConcurrency;
    const turn = (this.#queues.get(bucket) ?? Promise.resolve()).then(async () => {
      const wait = (this.#freeAt.get(bucket) ?? 0) - Date.now();
      if (wait > 0) await sleep(wait, undefined, { signal });
      try {
        await start();
      } finally {
        this.#freeAt.set(bucket, Date.now() + this.periodMs);
      }
    });
    this.#queues.set(bucket, turn.catch(() => undefined));
    return turn;
  }
}

/** SIGTERM, then SIGKILL if the child has not stopped in time. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), stopWaitMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
