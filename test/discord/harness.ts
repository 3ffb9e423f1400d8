import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { deployCommands } from '../../src/bot/deploy-commands.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/main.js';
import { type FakeDiscord, type StartFakeDiscordOptions, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { type FakeVoice, type StartFakeVoiceOptions, startFakeVoice } from '../fakes/discord-voice/fake-voice.js';
import { type FakeOpenAI, type FakeScriptSource, startFakeOpenAI } from '../fakes/fake-openai.js';
import type { APIUser } from 'discord-api-types/v10';
import { onFreePort } from '../support/ports.js';

/** The reply the fake engine gives: the newest user line, echoed after `prefix`. */
export function echo(prefix: string) {
  return (body: { messages?: Array<{ role: string; content: unknown }> }) => {
    const last = body.messages?.at(-1)?.content;
    const text = typeof last === 'string' ? last.split('\n').at(-1) : 'something';
    return { reply: `${prefix} ${text}`, tokensPerSecond: 50 };
  };
}

export interface BotHarness {
  discord: FakeDiscord;
  /** The fake voice server, when started with `voice: true`. */
  voice: FakeVoice | undefined;
  /** Users made before the service started (see `owners`), by username. */
  users: Record<string, APIUser>;
  llm: FakeOpenAI;
  /** The HTTP API of the same service. */
  url: () => string;
  /** The service's database, for a test to play another process on it (another shard). */
  storeUrl: string;
  /** Stops and starts the whole service on the same data directory. */
  restart(): Promise<void>;
  /** The text of every message in a channel from the bot, oldest first (latest version of each). */
  botTexts(channelId: string): string[];
  /** The service's log lines, parsed, when started with `logs: true` (at level debug); else empty. */
  logs: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * The whole service as `npm start` runs it with DISCORD_TOKEN set, its bot logged in to the
 * fake Discord, its chat engine the fake OpenAI server, and the slash commands deployed to
 * the fake guild with the real deploy script.
 */
export async function startBotHarness(
  options: {
    script?: FakeScriptSource;
    environment?: Record<string, string>;
    discord?: StartFakeDiscordOptions;
    /** Usernames of users made first and listed in BOT_OWNER_IDS. */
    owners?: string[];
    /** Also start the fake voice server (its certificate trusted in this process), with these options when given (e.g. `{ dave: true }`). */
    voice?: boolean | StartFakeVoiceOptions;
    /** Keep the service's log lines (at level debug) in `logs`, for a test to wait on what it did. */
    logs?: boolean;
  } = {},
): Promise<BotHarness> {
  const discord = await startFakeDiscord(options.discord);
  const voice = options.voice ? await startFakeVoice(discord, options.voice === true ? {} : options.voice) : undefined;
  const users = Object.fromEntries((options.owners ?? []).map((username) => [username, discord.createUser({ username })]));
  const llm = await startFakeOpenAI({ script: options.script });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'likeness-bot-'));
  await deployCommands({ token: discord.token, apiBase: discord.apiBase, guildId: discord.guild.id });
  const environment = (port: number) => ({
    PORT: String(port),
    // Engines that fetch our files (the face trainer, LoRA archives) reach the service here.
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    LLM_BASE_URL: llm.baseURL,
    LLM_MODEL: 'fake-model',
    // Learning calls the engine in the background: on only in the tests of learning.
    LEARNING: 'off',
    LLM_IDLE_TIMEOUT_MS: '2000',
    LLM_HEADERS_TIMEOUT_MS: '2000',
    DISCORD_TOKEN: discord.token,
    DISCORD_API_BASE: discord.apiBase,
    DISCORD_GUILD_ID: discord.guild.id,
    DISCORD_EDIT_INTERVAL_MS: '200',
    ...(options.owners ? { BOT_OWNER_IDS: Object.values(users).map((user) => user.id).join(',') } : {}),
    LOG_LEVEL: 'silent',
    ...options.environment,
  });
  const logs: Array<Record<string, unknown>> = [];
  // Again on another port if this one was taken before the service bound it; `restart` keeps it.
  const started = await onFreePort(async (port) => {
    const config = parseConfig(environment(port));
    const logger = options.logs ? createLogger('debug', { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) }) : createLogger(config.logLevel);
    return { config, logger, service: await startService(config, logger) };
  });
  const { config, logger } = started;
  let service: RunningService = started.service;
  // The bot logs in in the background; tests act once it is ready.
  await service.discordReady();
  return {
    discord,
    voice,
    users,
    llm,
    url: () => service.url,
    storeUrl: config.storeUrl,
    logs,
    async restart() {
      await service.stop();
      service = await startService(config, logger);
      await service.discordReady();
    },
    botTexts(channelId) {
      return discord
        .messages(channelId)
        .filter((message) => message.author.id === discord.botUser.id && message.content !== '')
        .map((message) => message.content);
    },
    async close() {
      await service.stop();
      await llm.close();
      await voice?.close();
      await discord.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Options of a slash command as a test gives them. */
export type CommandOptions = Record<string, string | number | boolean>;

/**
 * Runs a slash command on the fake Discord and waits for its answer (the deferred reply edited,
 * or a reply given at once); answers the interaction id and the text of its latest answer.
 */
export async function runCommand(
  bot: BotHarness,
  user: APIUser,
  name: string,
  options: CommandOptions = {},
  subcommand?: string,
  channelId = bot.discord.guild.textChannelId,
): Promise<{ id: string; text: string }> {
  const sent = bot.discord.sendSlashCommand({ user, channelId, name, options, ...(subcommand ? { subcommand } : {}) });
  await sent.response;
  return bot.discord.waitFor(() => {
    const records = bot.discord.interactionResponses(sent.interactionId);
    const answered = records.some((record) => record.kind === 'original-edit' || (record.kind === 'callback' && record.callbackType === 4));
    return answered && { id: sent.interactionId, text: latestAnswer(bot, sent.interactionId) };
  });
}

/** The text of the bot's latest answer to an interaction (reply or edit of @original). */
export function latestAnswer(bot: BotHarness, interactionId: string): string {
  const records = bot.discord.interactionResponses(interactionId).filter((record) => record.body !== null && record.body !== undefined);
  return JSON.stringify(records.at(-1)?.body ?? '');
}
