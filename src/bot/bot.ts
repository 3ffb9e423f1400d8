import { Client, Events, GatewayIntentBits, Partials, RESTEvents, type User } from 'discord.js';
import { accountActor } from '../core/actor.js';
import type { AvatarUrls } from '../avatar-urls.js';
import type { Core } from '../core/core.js';
import type { Logger } from '../core/ports.js';
import type { RepositoryStore } from '../core/repositories.js';
import { ChannelPacer, ordinaryEditShare, sentRequestsPerSecond } from './pacing/channel-pacer.js';
import { keepForgettingOldMessageAuthors } from './personas/message-authors.js';
import type { BotContext, Command } from './command.js';
import { ConversationLinks } from './conversations/conversation-links.js';
import { ConversationRunner } from './conversations/conversation-runner.js';
import { DeliveryRecords } from './deliveries/delivery-records.js';
import { DiscordAccounts } from './discord-accounts.js';
import { JobDeliveries, webhookBucket } from './deliveries/job-deliveries.js';
import { globalWindows, withGlobalWindows } from './pacing/global-window.js';
import { Places } from './conversations/places.js';
import { PersonaReplies } from './personas/persona-replies.js';
import { WebhookPersonas } from './personas/webhook-personas.js';
import { shareOfShards } from './sharding/shard-of.js';
import { VoicePlayback } from './voice/voice-playback.js';
import { VoiceRules } from './voice/voice-rules.js';
import { announceCallEnd } from './voice/call-endings.js';
import { VoiceTalk } from './voice/voice-talk.js';
import { DEFAULT_TURN_OPTIONS, type TurnOptions } from '../audio/turn-detector.js';
import type { VoiceActivityAggressiveness } from '../audio/voice-activity.js';
import { watchDiscordRest, watchGateway } from '../metrics/discord-metrics.js';
import type { Metrics } from '../metrics/metrics.js';
import { watchVoiceConnections } from '../metrics/voice-metrics.js';
import { type RateLimits, memoryRateLimits } from '../rate-limits.js';
import { createInteractionHandler } from './interactions.js';
import { createMessageHandler } from './conversations/messages.js';

export interface BotOptions {
  token: string;
  /** REST base up to `/api` (default Discord's); the gateway URL comes from its `/gateway/bot`. */
  apiBase?: string | undefined;
  ownerIds: readonly string[];
  editIntervalMs: number;
  /** The most webhooks characters post through in one channel (default 5; Discord allows 15). */
  webhooksPerChannel?: number;
  messagesPerMinute: number;
  commandsPerMinute: number;
  /** Where those limits are counted: shared by every process on a PostgreSQL store; in memory by default. */
  rateLimits?: RateLimits;
  /** Prometheus figures of REST, the gateway and voice connections, when metrics are on. */
  metrics?: Metrics | undefined;
  /** Leave a voice channel after this long with nothing to say. */
  voiceIdleMs?: number;
  /** /voice talk's turn-taking (defaults in `DEFAULT_TURN_OPTIONS`) and VAD mode. */
  voiceTalk?: (Partial<Pick<TurnOptions, 'silenceMs' | 'minimumSpeechMs' | 'bargeInMs' | 'maximumTurnMs'>> & { aggressiveness?: VoiceActivityAggressiveness; language?: string | undefined; transcriptionTimeoutMs?: number | undefined }) | undefined;
  /** Least time between two progress edits of one /imagine reply (default 1 s). */
  jobEditIntervalMs?: number;
  /** Longest wait for the gateway's READY after logging in (default 60 s). */
  readyTimeoutMs?: number;
  /**
   * Character pictures for personas, at URLs under `PUBLIC_BASE_URL` that never expire; when
   * that base is loopback or private (Discord could not fetch it), personas have no picture.
   */
  avatars?: AvatarUrls | undefined;
}

/**
 * Discord closed the gateway with a code it will not recover from (4004: the token is wrong;
 * 4013/4014: intents): retrying cannot help until the configuration changes.
 */
export class GatewayRefused extends Error {
  override readonly name = 'GatewayRefused';
  constructor(readonly code: number) {
    super(code === 4004 ? 'Discord refused the bot token (gateway close 4004)' : `Discord closed the gateway for good (code ${code})`);
  }
}

export interface RunningBot {
  client: Client;
  stop(): Promise<void>;
}

const channelRoute = /^\/channels\/(\d+)\/messages/;
/**
 * Interaction webhooks (`@original` edits, follow-ups) and persona webhooks (execute, message
 * edits, every thread of the channel alike): Discord limits each webhook on its own.
 */
const webhookRoute = /^\/webhooks\/(\d+)\/([^/?]+)/;

/** Logs in to Discord and answers commands, thread messages and DMs until stopped. */
export async function startBot(core: Core, repositories: RepositoryStore, commands: readonly Command[], options: BotOptions, logger: Logger): Promise<RunningBot> {
  // The process's two global windows; the pacer keeps ordinary edits out of a crowded one, and
  // webhook requests go with the token when the address's window is the busier.
  const windows = globalWindows(sentRequestsPerSecond, { token: () => options.token });
  const client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
      GatewayIntentBits.DirectMessages,
      // Who is in which voice channel: /speak joins the caller's, and the bot leaves an empty one.
      GatewayIntentBits.GuildVoiceStates,
    ],
    // DM channels are not cached until used; without this their first message is dropped.
    partials: [Partials.Channel],
    // A margin under Discord's global 50 a second (see `sentRequestsPerSecond`), in any second,
    // for the token's requests and the webhooks' each: discord.js's own count takes both in one
    // fixed second, so it is set to the two together and the sliding windows hold each.
    rest: {
      globalRequestsPerSecond: 2 * sentRequestsPerSecond,
      makeRequest: withGlobalWindows(windows),
      ...(options.apiBase ? { api: options.apiBase } : {}),
    },
  });
  if (options.metrics) {
    watchDiscordRest(client.rest, options.metrics);
    watchGateway(client, options.metrics);
    watchVoiceConnections(options.metrics);
  }
  // A shard process reaches Discord through the manager's proxy, with the other shards: its
  // ordinary edits take their part of what the proxy passes, split by the shards it holds.
  const share = shareOfShards(client);
  const ordinaryEdits = ordinaryEditShare * sentRequestsPerSecond * share;
  const pacer = new ChannelPacer({ baseIntervalMs: options.editIntervalMs, maxIntervalMs: 15_000, globalPerSecond: ordinaryEdits, unauthenticatedPerSecond: ordinaryEdits, windows, windowShare: share });
  // Edit pacing follows what Discord says of each channel's bucket, answer by answer.
  client.rest.on(RESTEvents.Response, (request, response) => {
    const webhook = webhookRoute.exec(request.path);
    const key = webhook ? webhookBucket(webhook[1]!, webhook[2]!) : channelRoute.exec(request.path)?.[1];
    const remaining = response.headers.get('x-ratelimit-remaining');
    const resetAfter = response.headers.get('x-ratelimit-reset-after');
    if (key && remaining !== null && resetAfter !== null) {
      pacer.observe(key, { remaining: Number(remaining), resetAfterMs: Number(resetAfter) * 1000 });
    }
  });
  client.rest.on(RESTEvents.RateLimited, (info) => {
    logger.info({ route: info.route, retryAfterMs: info.retryAfter, scope: info.scope, global: info.global }, 'Discord rate limit');
    if (info.route.startsWith('/channels/')) pacer.rateLimited(info.majorParameter, info.retryAfter);
    // For webhooks the major parameter is `id/token` (the application's id for interaction webhooks).
    if (info.route.startsWith('/webhooks/')) {
      const [applicationId, token] = info.majorParameter.split('/');
      if (applicationId && token) pacer.rateLimited(webhookBucket(applicationId, token), info.retryAfter);
    }
  });

  const discordAccounts = new DiscordAccounts(repositories.discordLinks, core.accounts);
  const deliveries = new JobDeliveries(core, new DeliveryRecords(repositories.jobDeliveries), pacer, logger, {
    editIntervalMs: options.jobEditIntervalMs ?? 1_000,
    // Uploading up to four images must finish before Discord stops taking the token.
    tokenMarginMs: 60_000,
  });
  const links = new ConversationLinks(repositories.discordLinks);
  const accountOf = async (user: User) => {
    const account = await discordAccounts.accountFor({ id: user.id, username: user.username, avatarUrl: user.avatarURL() });
    return { account, actor: accountActor(account.id) };
  };
  const { aggressiveness, language, transcriptionTimeoutMs, ...turns } = options.voiceTalk ?? {};
  const voiceRules = new VoiceRules(repositories.discordVoiceRules, {
    silenceMs: turns.silenceMs ?? DEFAULT_TURN_OPTIONS.silenceMs,
    minimumSpeechMs: turns.minimumSpeechMs ?? DEFAULT_TURN_OPTIONS.minimumSpeechMs,
  });
  const talk = new VoiceTalk({ core, logger, accountOf, rules: voiceRules, callEnded: (session, reason) => announceCallEnd(logger, session, reason) }, { turns, aggressiveness: aggressiveness ?? 2, language, joinTimeoutMs: 20_000, idleMs: options.voiceIdleMs ?? 5 * 60_000, transcriptionTimeoutMs: transcriptionTimeoutMs ?? 15_000 });
  // A call holds the guild's voice: /speak and followed threads are not played over it.
  const voice = new VoicePlayback(logger, { idleMs: options.voiceIdleMs ?? 5 * 60_000, stallMs: 10_000, joinTimeoutMs: 20_000, heldByCall: (guildId) => talk.holds(guildId) });
  const personas = new WebhookPersonas({ client, logger, ...(options.webhooksPerChannel ? { webhooksPerChannel: options.webhooksPerChannel } : {}) });
  const context: BotContext = {
    core,
    links,
    channels: repositories.discordChannels,
    places: new Places(links, repositories.discordChannels, (channelId) => talk.sessionIn(channelId)?.conversationId),
    runner: new ConversationRunner(core, pacer, logger, {
      recordAuthors: (messageIds, characterId) => repositories.discordChannels.recordCharacterMessages(messageIds, characterId, Date.now()),
      recordReply: (messageIds, characterId) => repositories.discordChannels.recordReplyMessages(messageIds, characterId, Date.now()),
    }),
    replies: new PersonaReplies({ core, personas, avatars: options.avatars, logger }),
    voice,
    talk,
    voiceRules,
    deliveries,
    logger,
    ownerIds: new Set(options.ownerIds),
    accountOf,
  };
  const rateLimits = options.rateLimits ?? memoryRateLimits();
  const onInteraction = createInteractionHandler(commands, context, rateLimits.limiter('discord-commands', options.commandsPerMinute), options.commandsPerMinute);
  const onMessage = createMessageHandler(context, rateLimits.limiter('discord-messages', options.messagesPerMinute), options.messagesPerMinute);
  // Handlers catch their own failures; these catches keep a bug from becoming an unhandled rejection.
  client.on(Events.InteractionCreate, (interaction) => {
    onInteraction(interaction).catch((error: unknown) => logger.error({ err: error }, 'interaction handler failed'));
  });
  client.on(Events.MessageCreate, (message) => {
    onMessage(message).catch((error: unknown) => logger.error({ err: error }, 'message handler failed'));
  });
  client.on(Events.VoiceStateUpdate, (oldState, newState) => {
    voice.leaveIfAlone(oldState.guild);
    talk.voiceStateChanged(oldState.guild, newState.id, oldState.channelId, newState.channelId);
  });
  // Manage Webhooks may have been granted: channels where personas failed try again.
  client.on(Events.ChannelUpdate, () => personas.permissionsChanged());
  client.on(Events.GuildRoleUpdate, () => personas.permissionsChanged());
  client.on(Events.Error, (error) => logger.error({ err: error }, 'Discord client error'));
  // discord.js emits this only for close codes it will not reconnect after.
  client.on(Events.ShardDisconnect, (event, shardId) => logger.error({ code: event.code, shardId }, 'gateway closed for good'));
  client.on(Events.ShardResume, (shardId) => logger.info({ shardId }, 'gateway resumed'));

  const readyClient = await logIn(client, options.token, options.readyTimeoutMs ?? 60_000);
  logger.info({ user: readyClient.user.tag, guilds: readyClient.guilds.cache.size }, 'Discord bot ready');
  // Results of jobs that finished while the bot was down go out now; running ones are followed.
  await deliveries.start(readyClient);
  const forgetting = keepForgettingOldMessageAuthors(repositories.discordChannels, logger);
  return {
    client,
    async stop() {
      forgetting.stop();
      await deliveries.stop();
      // Leaving voice must not keep the client from closing: a failure there is only logged.
      for (const [what, leave] of [['voice calls', () => talk.leaveAll()], ['voice playback', () => voice.leaveAll()]] as const) {
        try {
          leave();
        } catch (error) {
          logger.error({ err: error, what }, 'could not leave voice while stopping');
        }
      }
      await client.destroy();
    },
  };
}

/** Logs in and waits for READY; a gateway refusal or no READY in time ends the attempt. */
async function logIn(client: Client, token: string, readyTimeoutMs: number): Promise<Client<true>> {
  let cleanup = () => {};
  const ready = new Promise<Client<true>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Discord sent no READY within ${readyTimeoutMs} ms`)), readyTimeoutMs);
    const onDisconnect = (event: { code: number }) => reject(new GatewayRefused(event.code));
    client.once(Events.ClientReady, resolve);
    client.once(Events.ShardDisconnect, onDisconnect);
    cleanup = () => {
      clearTimeout(timer);
      client.off(Events.ClientReady, resolve);
      client.off(Events.ShardDisconnect, onDisconnect);
    };
  });
  // It may settle while login is still under way; it is awaited below.
  ready.catch(() => {});
  const loggedIn = client.login(token);
  try {
    // A refused identify may leave login waiting for a shard that will never be ready.
    return await Promise.race([loggedIn.then(() => ready), ready]);
  } catch (error) {
    loggedIn.catch(() => {});
    await client.destroy();
    throw error;
  } finally {
    cleanup();
  }
}
