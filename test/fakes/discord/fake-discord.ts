/**
 * A fake Discord on 127.0.0.1 that the real discord.js Client talks to unmodified: REST under
 * `/api/v10`, the gateway on `/gateway`, and a CDN for uploads. Tests drive it as users would
 * (slash commands, autocomplete, buttons, messages, DMs) and observe what the bot did (requests,
 * messages and every edit, interaction responses, typing, threads, rate-limit hits).
 *
 * ```ts
 * const fake = await startFakeDiscord();
 * const client = new Client({ intents, rest: fake.restOptions });
 * await client.login(fake.token);
 * ```
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIApplicationCommand, APIApplicationCommandOptionChoice, APIBaseVoiceState, APIChannel, APIUser } from 'discord-api-types/v10';
import { PermissionFlagsBits } from 'discord-api-types/v10';
import type { FakeContext, InteractionTimeLimits } from './context.js';
import { DiscordDriver, type ButtonPress, type FakeMessage, type ModalSubmission, type SentInteraction, type UserMessage } from './driver.js';
import { FakeGateway, type GatewayStats } from './gateway.js';
import { createHttpServer, type ForcedServerError, type RecordedRequest } from './http-server.js';
import type { CommandInvocation } from './interaction-payloads.js';
import { InteractionRegistry, type InteractionResponseRecord } from './interactions.js';
import { MessageService } from './messages.js';
import { RateLimiter, type BucketLimit, type BucketName, type ForcedRateLimit, type GlobalUsage, type RateLimitHits } from './rate-limiter.js';
import { Router } from './router.js';
import { applicationRoutes } from './routes/applications.js';
import { channelRoutes } from './routes/channels.js';
import { interactionRoutes } from './routes/interactions.js';
import { threadRoutes } from './routes/threads.js';
import { userRoutes } from './routes/users.js';
import { webhookRoutes } from './routes/webhooks.js';
import { channelObject, guildCreateObject } from './serialize.js';
import { ShardingRules, type ShardingOptions, type ShardingStats } from './sharding.js';
import { addTextChannel, joinGuild, makeGuild, makeToken, makeUser, type FakeGuild, type GuildSpec, type UserSpec } from './setup.js';
import { type CdnRequest, DiscordState, type MessageVersion, type WebhookRecord } from './state.js';
import { channelUpdated, createThread } from './threads.js';
import { waitForState } from './wait-for.js';

export interface StartFakeDiscordOptions {
  /** How many default guilds, or their specs. Default: one guild with `general` and a voice channel. */
  guilds?: number | GuildSpec[];
  /** The fake's clock (message timestamps, snowflakes, token expiry); default `Date.now`. Rate limits use real time. */
  now?: () => number;
  rateLimits?: { global?: BucketLimit | null; buckets?: Partial<Record<BucketName, BucketLimit>>; retryAfterHeader?: 'integer' | 'fractional' };
  /** Delay added before every REST answer. */
  latencyMs?: number;
  /** Gateway heartbeat interval sent in Hello; default Discord's 41,250 ms. */
  heartbeatIntervalMs?: number;
  interactionTimeLimits?: Partial<InteractionTimeLimits>;
  /** Keep every REST request in `requests` (default true); benchmarks may turn it off. */
  recordRequests?: boolean;
  botUsername?: string;
  /** Recommended shards, session start limit, identify buckets, guilds per shard; Discord's defaults. */
  sharding?: ShardingOptions;
}

/**
 * Voice, plugged in from `test/fakes/discord-voice`: the gateway hands it op 4 and GUILD_CREATE asks
 * it for `voice_states`, so this fake stays ignorant of voice servers, RTP and Opus.
 */
export interface VoiceExtension {
  voiceStateUpdate(data: Record<string, unknown>, gatewaySessionId: string): void;
  guildVoiceStates(guildId: string): APIBaseVoiceState[];
}

/** The running fake. */
export interface FakeDiscord {
  /** `http://127.0.0.1:PORT/api`, for `rest.api`. */
  readonly apiBase: string;
  /** `http://127.0.0.1:PORT/cdn`, for `rest.cdn`. */
  readonly cdnBase: string;
  readonly gatewayUrl: string;
  /** `{ api, cdn, version: '10' }`, ready for `new Client({ rest })`. */
  readonly restOptions: { api: string; cdn: string; version: '10' };
  readonly token: string;
  readonly applicationId: string;
  readonly botUser: APIUser;
  /** The first guild. */
  readonly guild: FakeGuild;
  readonly guilds: readonly FakeGuild[];
  readonly requests: readonly RecordedRequest[];
  readonly threads: APIChannel[];
  readonly commands: { global: APIApplicationCommand[]; guilds: Record<string, APIApplicationCommand[]> };
  readonly rateLimitHits: RateLimitHits;
  readonly gatewayStats: GatewayStats;
  /** Identifies per shard, and identifies refused for concurrency or the session start limit. */
  readonly shardingStats: ShardingStats;
  /** Authenticated REST requests per global window, summed over every client with the token. */
  readonly globalUsage: GlobalUsage;
  /** The same for requests without a token (webhooks), which Discord limits per IP address. */
  readonly unauthenticatedGlobalUsage: GlobalUsage;

  // Driving, as users would.
  /** Sends a chat-input INTERACTION_CREATE; `response` settles with the bot's callback, or null after 3 s without one. */
  sendSlashCommand(invocation: CommandInvocation): SentInteraction;
  /** Sends an autocomplete request with `focused` marked; resolves with the bot's choices. */
  sendAutocomplete(invocation: CommandInvocation & { focused: string }): Promise<APIApplicationCommandOptionChoice[]>;
  /** Presses a button (or picks from a select menu) on a message. */
  sendButton(press: ButtonPress): SentInteraction;
  /** Submits the modal the bot showed in answer to `modalFrom`. */
  submitModal(submission: ModalSubmission): SentInteraction;
  /** A user's message: MESSAGE_CREATE with `member` in guilds, without `guild_id` in DMs. */
  sendMessage(message: UserMessage): FakeMessage;
  /** The DM channel id between the bot and a user, made on first use. */
  openDm(user: string | { id: string }): string;

  // Setting the scene.
  createUser(spec: UserSpec): APIUser;
  createTextChannel(guildId: string, name: string): APIChannel;
  /** A thread made by someone other than the bot (default: the guild owner), e.g. to seed a benchmark. */
  createThread(parentId: string, spec: { name: string; type?: 11 | 12; ownerId?: string }): APIChannel;
  /** Sets the bot's permissions in a channel (threads follow their parent). */
  setBotPermissions(channelId: string, permissions: bigint): void;
  /**
   * Gives a member (joining them to the guild if needed) a new role granting `permissions`, e.g.
   * Manage Server; their interactions carry them from then on (no gateway event is sent).
   */
  grantMemberPermissions(userId: string, permissions: bigint, guildId?: string): void;
  /**
   * Grants or takes away the bot's MANAGE_WEBHOOKS in a channel (off by default, as for a bot
   * invited with text permissions), dispatching CHANNEL_UPDATE as an overwrite edit would.
   */
  setManageWebhooks(channelId: string, allowed: boolean): void;
  /** Moves the fake's clock forward (token expiry, message age). */
  advanceTime(milliseconds: number): void;
  /** Ends an interaction token's life now: its webhook routes answer 401/50027 from here on, as after 15 minutes. */
  expireInteractionToken(interactionId: string): void;
  /** Backdates (or postdates) a message's creation time, e.g. to test the one-hour webhook edit limit. */
  setMessageTimestamp(messageId: string, epochMilliseconds: number): void;
  forceRateLimit(rule: ForcedRateLimit): void;
  /**
   * Answers the next `count` requests of a route with a server error (e.g. 503 from `GET /gateway/bot`),
   * or every one until `clearServerErrors` without a count: 500 as Discord words it, 502/503/504 as Cloudflare does.
   */
  forceServerError(rule: ForcedServerError): void;
  /** Ends forced server errors: those of `route` (`METHOD /template`), or all. */
  clearServerErrors(route?: string): void;
  /** Plugs voice in (see `startFakeVoice`): `build` gets the fake's internals; returns what it built. One at a time. */
  installVoice<Extension extends VoiceExtension>(build: (context: FakeContext) => Extension): Extension;

  // Observing.
  /** Messages of a channel, oldest first, including ephemeral ones (flag 64), with `guild_id`. */
  messages(channelId: string): FakeMessage[];
  message(messageId: string): FakeMessage | undefined;
  /** A channel's webhooks, deleted ones included (flag `deleted`), oldest first. */
  webhooks(channelId: string): WebhookRecord[];
  /**
   * A webhook a person made in the channel's settings (not application-owned: its messages have
   * no `application_id`, and it may send only non-interactive components, with `with_components`).
   */
  createUserWebhook(channelId: string, name: string): WebhookRecord;
  /** Every version of a message: its creation and each edit, with timestamps. */
  messageHistory(messageId: string): MessageVersion[];
  interactionResponses(interactionId: string): InteractionResponseRecord[];
  /** Fake-clock times of the bot's typing requests in a channel. */
  typingEvents(channelId: string): number[];
  /** Every GET of the CDN, oldest first: which attachments (and avatars) the bot downloaded. */
  readonly cdnRequests: readonly CdnRequest[];
  /** Resolves with the predicate's first truthy value, re-checked after every change; rejects after `timeoutMs`. */
  waitFor<T>(predicate: (fake: FakeDiscord) => T | undefined | null | false, timeoutMs?: number): Promise<T>;

  // Gateway faults and shutdown.
  /** Closes every gateway socket (code 4000 by default, which discord.js resumes after). */
  dropGatewayConnections(options?: { code?: number; abrupt?: boolean; invalidateSessions?: boolean }): void;
  /** Sends op 7 Reconnect. */
  requestGatewayReconnect(): void;
  /** Refuses gateway identify and resume with close 4004 (authentication failed) while `refuse` is true. */
  refuseGatewayLogins(refuse: boolean): void;
  close(): Promise<void>;
}

export type { ButtonPress, CommandInvocation, FakeMessage, ModalSubmission, SentInteraction, UserMessage };
export type { FakeGuild, GuildSpec, UserSpec } from './setup.js';
export type { FakeFile, ModalFields, SlashOptionValue } from './interaction-payloads.js';
export type { InteractionCallbackRecord, InteractionResponseRecord } from './interactions.js';
export type { ForcedServerError, RecordedRequest } from './http-server.js';
export type { BucketLimit, BucketName, ForcedRateLimit, GlobalUsage, RateLimitHits } from './rate-limiter.js';
export { guildIdForShard, shardOf, type ShardingOptions, type ShardingStats } from './sharding.js';
export type { GatewayStats } from './gateway.js';
export type { CdnRequest, MessageVersion } from './state.js';

/** Starts the fake on an ephemeral loopback port. */
export async function startFakeDiscord(options: StartFakeDiscordOptions = {}): Promise<FakeDiscord> {
  let offset = 0;
  const baseClock = options.now ?? Date.now;
  const state = new DiscordState(() => baseClock() + offset);
  let origin = '';
  const bot = makeUser(state, { username: options.botUsername ?? 'FakeBot', bot: true });
  const owner = makeUser(state, { username: 'guild-owner' });
  const token = makeToken(bot.id);
  const specs = typeof options.guilds === 'number' ? Array.from({ length: options.guilds }, (): GuildSpec => ({})) : (options.guilds ?? [{}]);
  const guilds = specs.map((spec, index) => makeGuild(state, spec, index, bot.id, owner.id));
  const limits: InteractionTimeLimits = { callbackWindowMs: 3000, tokenLifetimeMs: 15 * 60_000, webhookEditWindowMs: 60 * 60_000, ...options.interactionTimeLimits };
  let voice: VoiceExtension | null = null;
  const sharding = new ShardingRules(options.sharding);
  const urls = { origin: () => origin, cdn: () => `${origin}/cdn`, gateway: () => `${origin.replace('http', 'ws')}/gateway` };

  const gateway = new FakeGateway({
    token,
    url: urls.gateway,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
    readyData: () => ({
      v: 10,
      user: { ...bot, verified: true, mfa_enabled: false, email: null },
      application: { id: bot.id, flags: 0 },
      user_settings: {},
      relationships: [],
      private_channels: [],
      presences: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: ['us-west'],
      session_type: 'normal',
      auth: {},
    }),
    guildCreates: () =>
      [...state.guilds.values()].map((guild) => ({ ...guildCreateObject(state, guild, bot.id), voice_states: voice?.guildVoiceStates(guild.id) ?? [] })),
    sharding,
    onChange: () => state.changed(),
    onVoiceStateUpdate: (data, sessionId) => voice?.voiceStateUpdate(data, sessionId),
  });
  const context: FakeContext = {
    state,
    gateway,
    messages: new MessageService(state, gateway, urls.cdn, bot.id),
    interactions: new InteractionRegistry(limits.callbackWindowMs),
    bot,
    applicationId: bot.id,
    token,
    limits,
    urls,
    sharding,
  };
  const limiter = new RateLimiter({
    global: options.rateLimits?.global === undefined ? { limit: 50, windowMs: 1000 } : options.rateLimits.global,
    buckets: options.rateLimits?.buckets ?? {},
    retryAfterHeader: options.rateLimits?.retryAfterHeader ?? 'integer',
  });
  const requests: RecordedRequest[] = [];
  const serverErrors: ForcedServerError[] = [];
  const server = createHttpServer({
    serverErrors,
    context,
    router: new Router([...channelRoutes, ...threadRoutes, ...interactionRoutes, ...userRoutes, ...applicationRoutes, ...webhookRoutes]),
    limiter,
    gateway,
    latencyMs: options.latencyMs ?? 0,
    record: (request) => {
      if (options.recordRequests !== false) requests.push(request);
      state.changed();
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const firstGuild = guilds[0];
  if (firstGuild === undefined) throw new Error('fake Discord: at least one guild is needed');
  const setVoice = (extension: VoiceExtension): void => void (voice = extension);
  return new RunningFakeDiscord({ context, server, gateway, limiter, serverErrors, requests, guilds, firstGuild, origin, ownerId: owner.id, moveClock: (milliseconds) => (offset += milliseconds), setVoice });
}

interface Parts {
  context: FakeContext;
  server: Server;
  gateway: FakeGateway;
  limiter: RateLimiter;
  serverErrors: ForcedServerError[];
  requests: RecordedRequest[];
  guilds: FakeGuild[];
  firstGuild: FakeGuild;
  origin: string;
  ownerId: string;
  moveClock(milliseconds: number): void;
  setVoice(extension: VoiceExtension): void;
}

class RunningFakeDiscord extends DiscordDriver implements FakeDiscord {
  readonly apiBase: string;
  readonly cdnBase: string;
  readonly gatewayUrl: string;
  readonly restOptions: { api: string; cdn: string; version: '10' };
  readonly token: string;
  readonly applicationId: string;
  readonly botUser: APIUser;
  readonly guild: FakeGuild;
  readonly guilds: readonly FakeGuild[];
  readonly requests: readonly RecordedRequest[];
  readonly #parts: Parts;

  constructor(parts: Parts) {
    super(parts.context);
    this.#parts = parts;
    this.apiBase = `${parts.origin}/api`;
    this.cdnBase = `${parts.origin}/cdn`;
    this.gatewayUrl = parts.context.urls.gateway();
    this.restOptions = { api: this.apiBase, cdn: this.cdnBase, version: '10' };
    this.token = parts.context.token;
    this.applicationId = parts.context.applicationId;
    this.botUser = parts.context.bot;
    this.guild = parts.firstGuild;
    this.guilds = parts.guilds;
    this.requests = parts.requests;
  }

  get threads(): APIChannel[] {
    const { state } = this.context;
    return [...state.channels.values()].filter((channel) => channel.thread !== null).map((channel) => channelObject(state, channel));
  }

  get commands(): { global: APIApplicationCommand[]; guilds: Record<string, APIApplicationCommand[]> } {
    const { state } = this.context;
    return { global: [...state.globalCommands], guilds: Object.fromEntries(state.guildCommands) };
  }

  get cdnRequests(): readonly CdnRequest[] {
    return this.context.state.cdnRequests;
  }

  get rateLimitHits(): RateLimitHits {
    return this.#parts.limiter.hits;
  }

  get gatewayStats(): GatewayStats {
    return this.#parts.gateway.stats;
  }

  get shardingStats(): ShardingStats {
    return this.context.sharding.stats;
  }

  get globalUsage(): GlobalUsage {
    return this.#parts.limiter.globalUsage('token');
  }

  get unauthenticatedGlobalUsage(): GlobalUsage {
    return this.#parts.limiter.globalUsage('ip');
  }

  createUser(spec: UserSpec): APIUser {
    const { state } = this.context;
    const user = makeUser(state, spec);
    for (const guildId of spec.guildIds ?? [...state.guilds.keys()]) {
      const guild = state.guilds.get(guildId);
      if (guild !== undefined) joinGuild(this.context, guild, user.id);
    }
    state.changed();
    return user;
  }

  createTextChannel(guildId: string, name: string): APIChannel {
    return addTextChannel(this.context, guildId, name);
  }

  createThread(parentId: string, spec: { name: string; type?: 11 | 12; ownerId?: string }): APIChannel {
    const { state } = this.context;
    const parent = state.channels.get(parentId);
    if (parent === undefined) throw new Error(`fake Discord: unknown channel ${parentId}`);
    const ownerId = spec.ownerId ?? state.guilds.get(parent.guildId ?? '')?.ownerId ?? this.#parts.ownerId;
    return channelObject(state, createThread(this.context, parent, { name: spec.name, type: spec.type ?? 11, ownerId }));
  }

  setBotPermissions(channelId: string, permissions: bigint): void {
    const channel = this.context.state.channels.get(channelId);
    if (channel === undefined) throw new Error(`fake Discord: unknown channel ${channelId}`);
    channel.botPermissions = permissions;
  }

  grantMemberPermissions(userId: string, permissions: bigint, guildId = this.guild.id): void {
    const guild = this.context.state.guilds.get(guildId);
    if (guild === undefined) throw new Error(`fake Discord: unknown guild ${guildId}`);
    const role = { id: this.context.state.ids.next(), name: `granted-${guild.roles.length}`, permissions: permissions.toString(), position: guild.roles.length, managed: false };
    guild.roles.push(role);
    const member = guild.members.get(userId) ?? { joinedAt: this.context.state.clock(), roleIds: [] };
    member.roleIds.push(role.id);
    guild.members.set(userId, member);
  }

  setManageWebhooks(channelId: string, allowed: boolean): void {
    const channel = this.context.state.channels.get(channelId);
    if (channel === undefined) throw new Error(`fake Discord: unknown channel ${channelId}`);
    const bit = PermissionFlagsBits.ManageWebhooks;
    channel.botPermissions = allowed ? channel.botPermissions | bit : channel.botPermissions & ~bit;
    // On Discord a permission is changed by editing the channel's overwrites (or a role), which clients see as an update.
    channelUpdated(this.context, channel);
  }

  createUserWebhook(channelId: string, name: string): WebhookRecord {
    const channel = this.context.state.channels.get(channelId);
    if (channel === undefined || channel.guildId === null) throw new Error(`fake Discord: no guild channel ${channelId}`);
    const webhook: WebhookRecord = {
      id: this.context.state.ids.next(),
      token: randomBytes(51).toString('base64url'),
      channelId,
      guildId: channel.guildId,
      name,
      avatar: null,
      creatorId: this.#parts.ownerId,
      applicationId: null,
      deleted: false,
    };
    this.context.state.webhooks.set(webhook.id, webhook);
    return webhook;
  }

  webhooks(channelId: string): WebhookRecord[] {
    return [...this.context.state.webhooks.values()].filter((webhook) => webhook.channelId === channelId);
  }

  advanceTime(milliseconds: number): void {
    this.#parts.moveClock(milliseconds);
    this.context.state.changed();
  }

  expireInteractionToken(interactionId: string): void {
    const interaction = this.context.interactions.byId(interactionId);
    if (interaction === undefined) throw new Error(`fake Discord: unknown interaction ${interactionId}`);
    interaction.tokenExpiresAt = this.context.state.clock() - 1;
    this.context.state.changed();
  }

  setMessageTimestamp(messageId: string, epochMilliseconds: number): void {
    const message = this.context.state.messages.get(messageId);
    if (message === undefined) throw new Error(`fake Discord: unknown message ${messageId}`);
    message.createdAt = epochMilliseconds;
  }

  forceRateLimit(rule: ForcedRateLimit): void {
    this.#parts.limiter.force(rule);
  }

  forceServerError(rule: ForcedServerError): void {
    this.#parts.serverErrors.push({ ...rule });
  }

  clearServerErrors(route?: string): void {
    const { serverErrors } = this.#parts;
    const kept = serverErrors.filter((rule) => route !== undefined && rule.route !== route);
    serverErrors.splice(0, serverErrors.length, ...kept);
  }

  installVoice<Extension extends VoiceExtension>(build: (context: FakeContext) => Extension): Extension {
    const extension = build(this.context);
    this.#parts.setVoice(extension);
    return extension;
  }

  messages(channelId: string): FakeMessage[] {
    return this.context.state.channelMessages(channelId).map((message) => this.messageWithGuild(message));
  }

  message(messageId: string): FakeMessage | undefined {
    const message = this.context.state.messages.get(messageId);
    return message === undefined || message.deleted ? undefined : this.messageWithGuild(message);
  }

  messageHistory(messageId: string): MessageVersion[] {
    return [...(this.context.state.messages.get(messageId)?.versions ?? [])];
  }

  interactionResponses(interactionId: string): InteractionResponseRecord[] {
    return [...(this.context.interactions.byId(interactionId)?.responses ?? [])];
  }

  typingEvents(channelId: string): number[] {
    return [...(this.context.state.typing.get(channelId) ?? [])];
  }

  waitFor<T>(predicate: (fake: FakeDiscord) => T | undefined | null | false, timeoutMs = 5000): Promise<T> {
    return waitForState(this.context.state, () => predicate(this), timeoutMs);
  }

  dropGatewayConnections(options?: { code?: number; abrupt?: boolean; invalidateSessions?: boolean }): void {
    this.#parts.gateway.dropConnections(options);
  }

  requestGatewayReconnect(): void {
    this.#parts.gateway.requestReconnect();
  }

  refuseGatewayLogins(refuse: boolean): void {
    this.#parts.gateway.refuseLogins = refuse;
  }

  async close(): Promise<void> {
    this.context.interactions.close();
    this.#parts.gateway.close();
    this.#parts.server.closeAllConnections();
    await new Promise<void>((resolve) => this.#parts.server.close(() => resolve()));
  }
}
