import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * How a chat engine call ended. A closed set, so the label never grows: `canceled` is the
 * caller's own abort (a user pressed stop, a shutdown), kept apart so it is not read as a failure.
 */
export type ChatOutcome = 'ok' | 'failed' | 'timeout' | 'context_exceeded' | 'canceled';

/** One row of the jobs table summarised: how many jobs of a type are in a state. */
export interface JobCount {
  /** The job type (`IMAGE_INFERENCE`, `FACE_MODEL_TRAINING`): a closed set, never an id. */
  type: string;
  /** The job state (`CREATED`, `IN_PROGRESS`, `SUCCESS`, `FAILED`, `CANCELED`). */
  state: string;
  count: number;
}

/** What the jobs store reports when Prometheus scrapes. */
export interface JobSnapshot {
  counts: readonly JobCount[];
  /** Jobs waiting for a worker (created, not yet claimed). */
  queueDepth: number;
}

/** The figures of one gateway shard, read when Prometheus scrapes. */
export interface ShardSnapshot {
  id: number;
  /** discord.js `Status` enum value (0 = Ready … 8 = WaitingForGuilds). */
  status: number;
  /** Last heartbeat round trip in milliseconds; negative while none was measured. */
  pingMs: number;
}

export interface MetricsOptions {
  /** Collect Node's process metrics (CPU, memory, event loop lag, GC). Default true. */
  processMetrics?: boolean;
  /** Labels added to every series, e.g. `{ role: 'bot', shard: '0-1' }`. Keep them few. */
  defaultLabels?: Record<string, string>;
}

/** Seconds buckets for HTTP requests: cached reads take a millisecond, streams many seconds. */
const httpBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds buckets for a chat engine's first token: local models on CPU take seconds. */
const firstTokenBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
const rateBuckets = [1, 2, 5, 10, 20, 40, 80, 160, 320, 640, 1280];

/** The HTTP status class label (`2xx` … `5xx`): five values, where raw codes would be dozens. */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}

/** Discord's three scopes; anything else (a proxy's 429 without the header) is `unknown`. */
function rateLimitScope(scope: string | undefined): string {
  return scope === 'user' || scope === 'global' || scope === 'shared' ? scope : 'unknown';
}

/**
 * All of one process's instruments on a registry of its own (never prom-client's global one, so
 * tests and embedded servers can hold several side by side). Front ends call the typed handles;
 * figures that live elsewhere (jobs in the database, shards in discord.js) are read by callbacks
 * only when Prometheus scrapes.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly #httpRequests = new Counter({
    name: 'likeness_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status class.',
    labelNames: ['method', 'route', 'status_class'] as const,
    registers: [this.registry],
  });
  readonly #httpDuration = new Histogram({
    name: 'likeness_http_request_duration_seconds',
    help: 'Time from receiving an HTTP request to its response headers, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: httpBuckets,
    registers: [this.registry],
  });
  readonly #chatRequests = new Counter({
    name: 'likeness_chat_requests_total',
    help: 'Chat engine calls by provider and outcome (ok, failed, timeout, context_exceeded, canceled).',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly #chatFirstToken = new Histogram({
    name: 'likeness_chat_time_to_first_token_seconds',
    help: 'Time from sending a chat request to the first text of the answer.',
    labelNames: ['provider'] as const,
    buckets: firstTokenBuckets,
    registers: [this.registry],
  });
  readonly #chatTokensPerSecond = new Histogram({
    name: 'likeness_chat_output_tokens_per_second',
    help: 'Answer tokens per second after the first token, when the engine reports usage.',
    labelNames: ['provider'] as const,
    buckets: rateBuckets,
    registers: [this.registry],
  });
  readonly #chatCharactersPerSecond = new Histogram({
    name: 'likeness_chat_output_characters_per_second',
    help: 'Answer characters per second after the first token; measured for every engine.',
    labelNames: ['provider'] as const,
    buckets: rateBuckets.map((bucket) => bucket * 4),
    registers: [this.registry],
  });
  #readJobs: (() => Promise<JobSnapshot>) | undefined;
  #pendingJobs: Promise<JobSnapshot | undefined> | undefined;
  #readShards: (() => readonly ShardSnapshot[]) | undefined;
  #readVoice: (() => Iterable<string>) | undefined;

  /**
   * One read of the jobs table per scrape, shared by both job gauges (prom-client collects all
   * metrics of a scrape at once). A failed read drops the job series from that scrape instead
   * of failing it: the other figures matter most when the database is down.
   */
  #jobSnapshot(): Promise<JobSnapshot | undefined> {
    const read = this.#readJobs;
    if (!read) return Promise.resolve(undefined);
    return (this.#pendingJobs ??= read()
      .catch(() => {
        this.#collectErrors.inc({ source: 'jobs' });
        return undefined;
      })
      .finally(() => (this.#pendingJobs = undefined)));
  }

  readonly #jobs: Gauge<'type' | 'state'> = new Gauge({
    name: 'likeness_jobs',
    help: 'Jobs in the shared jobs table by type and state, read at scrape time.',
    labelNames: ['type', 'state'] as const,
    registers: [this.registry],
    collect: async () => {
      const snapshot = await this.#jobSnapshot();
      this.#jobs.reset();
      if (!snapshot) return;
      for (const { type, state, count } of snapshot.counts) this.#jobs.set({ type, state }, count);
    },
  });
  readonly #queueDepth: Gauge = new Gauge({
    name: 'likeness_jobs_queue_depth',
    help: 'Jobs waiting for a worker, read at scrape time.',
    registers: [this.registry],
    collect: async () => {
      const snapshot = await this.#jobSnapshot();
      this.#queueDepth.reset();
      if (snapshot) this.#queueDepth.set(snapshot.queueDepth);
    },
  });
  readonly #collectErrors = new Counter({
    name: 'likeness_metrics_collect_errors_total',
    help: 'Scrape-time reads that failed (e.g. the jobs table while the database is down); their series are left out of that scrape.',
    labelNames: ['source'] as const,
    registers: [this.registry],
    // Registered after the job gauges, whose reads are then under way: wait for them, so a
    // failure shows in the very scrape it left incomplete.
    collect: async () => {
      await this.#pendingJobs;
    },
  });

  readonly #restRequests = new Counter({
    name: 'likeness_discord_rest_requests_total',
    help: 'Discord REST responses by method, route bucket and status class.',
    labelNames: ['method', 'route', 'status_class'] as const,
    registers: [this.registry],
  });
  readonly #rest429s = new Counter({
    name: 'likeness_discord_rest_429_total',
    help: 'Discord REST answers of 429 Too Many Requests, by method, route bucket and X-RateLimit-Scope (user, global, shared).',
    labelNames: ['method', 'route', 'scope'] as const,
    registers: [this.registry],
  });
  readonly #restWaits = new Counter({
    name: 'likeness_discord_rest_rate_limit_waits_total',
    help: 'Requests discord.js held back because a bucket (or the global limit) was spent, by method, route bucket and whether global.',
    labelNames: ['method', 'route', 'global'] as const,
    registers: [this.registry],
  });
  readonly #shardStatus: Gauge<'shard'> = new Gauge({
    name: 'likeness_discord_shard_status',
    help: 'Gateway shard status as the discord.js Status enum (0 Ready, 1 Connecting, 2 Reconnecting, 3 Idle, 4 Nearly, 5 Disconnected, 6 WaitingForGuilds, 7 Identifying, 8 Resuming).',
    labelNames: ['shard'] as const,
    registers: [this.registry],
    collect: () => {
      if (!this.#readShards) return;
      this.#shardStatus.reset();
      for (const shard of this.#readShards()) this.#shardStatus.set({ shard: String(shard.id) }, shard.status);
    },
  });
  readonly #shardLatency: Gauge<'shard'> = new Gauge({
    name: 'likeness_discord_shard_heartbeat_latency_seconds',
    help: 'Last gateway heartbeat round trip per shard (absent until one was measured).',
    labelNames: ['shard'] as const,
    registers: [this.registry],
    collect: () => {
      if (!this.#readShards) return;
      this.#shardLatency.reset();
      for (const shard of this.#readShards()) {
        if (shard.pingMs >= 0) this.#shardLatency.set({ shard: String(shard.id) }, shard.pingMs / 1000);
      }
    },
  });
  readonly #voiceConnections: Gauge<'status'> = new Gauge({
    name: 'likeness_discord_voice_connections',
    help: 'Discord voice connections held by this process, by connection status.',
    labelNames: ['status'] as const,
    registers: [this.registry],
    collect: () => {
      if (!this.#readVoice) return;
      this.#voiceConnections.reset();
      for (const status of this.#readVoice()) this.#voiceConnections.inc({ status });
    },
  });

  constructor(options: MetricsOptions = {}) {
    if (options.defaultLabels) this.registry.setDefaultLabels(options.defaultLabels);
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'likeness_' });
  }

  /** The exposition text Prometheus reads, and its content type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  readonly http = {
    /** One answered request. `route` must be the pattern (`/api/v0/characters/:id`), never the raw path. */
    observe: (route: string, method: string, status: number, seconds: number): void => {
      this.#httpRequests.inc({ method, route, status_class: statusClass(status) });
      this.#httpDuration.observe({ method, route }, seconds);
    },
  };

  readonly chat = {
    /** The first text of an answer arrived `seconds` after the request was sent. */
    firstToken: (provider: string, seconds: number): void => this.#chatFirstToken.observe({ provider }, seconds),
    /** Output speed of a finished answer; tokens when the engine reported them. */
    throughput: (provider: string, figures: { seconds: number; characters: number; tokens?: number | undefined }): void => {
      if (figures.seconds <= 0) return;
      this.#chatCharactersPerSecond.observe({ provider }, figures.characters / figures.seconds);
      if (figures.tokens !== undefined) this.#chatTokensPerSecond.observe({ provider }, figures.tokens / figures.seconds);
    },
    /** One call ended. */
    outcome: (provider: string, outcome: ChatOutcome): void => this.#chatRequests.inc({ provider, outcome }),
  };

  readonly jobs = {
    /** Reads the jobs table when scraped, and only then: `read` is the caller's query. */
    collectWith: (read: () => Promise<JobSnapshot>): void => {
      this.#readJobs = read;
    },
  };

  readonly discord = {
    /**
     * One REST response from Discord. `route` is discord.js's bucket route (`/channels/:id/messages`);
     * `scope` is the 429's `X-RateLimit-Scope`, read only when `status` is 429.
     */
    restResponse: (method: string, route: string, status: number, scope?: string): void => {
      this.#restRequests.inc({ method, route, status_class: statusClass(status) });
      if (status === 429) this.#rest429s.inc({ method, route, scope: rateLimitScope(scope) });
    },
    /** discord.js held a request back until a spent bucket (or the global limit) resets. */
    rateLimitWait: (method: string, route: string, global: boolean): void =>
      this.#restWaits.inc({ method, route, global: String(global) }),
    /** Reads the shards when scraped. Shards that went away disappear from the series. */
    collectShardsWith: (read: () => readonly ShardSnapshot[]): void => {
      this.#readShards = read;
    },
    /** Reads voice connection statuses (e.g. from `@discordjs/voice`'s `getVoiceConnections()`) when scraped. */
    collectVoiceWith: (read: () => Iterable<string>): void => {
      this.#readVoice = read;
    },
  };
}
