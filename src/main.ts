// First: node:sqlite's ExperimentalWarning is printed when the module loads.
import './silence-sqlite-warning.js';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { type Config, ConfigError, parseConfig } from './config.js';
import { createRandomIds, createSystemClock } from './core/clock.js';
import { createCore } from './core/core.js';
import { createChatEngine } from './chat-engine.js';
import { createAudioEncoder } from './audio/mp3.js';
import { inspectAudio } from './audio/audio-input.js';
import type { FaceTrainer, ImageEngine, SpeechEngine } from './core/ports.js';
import { createA1111ImageEngine, createCogImageEngine, createReplicateFaceTrainer, createReplicateImageEngine } from './engines/image/index.js';
import { createElevenLabsSpeechEngine } from './engines/speech/elevenlabs.js';
import { createEspeakSpeechEngine } from './engines/speech/espeak.js';
import { createOpenAISpeechEngine } from './engines/speech/openai-speech.js';
import { type OpenAITranscriber, createOpenAITranscriber } from './engines/stt/openai-transcription.js';
import { commands } from '../commands/index.js';
import { startBot } from './bot/bot.js';
import { BotSupervisor, type DiscordStatus } from './bot/bot-supervisor.js';
import { ShardManager } from './bot/sharding/shard-manager.js';
import { AvatarUrls } from './avatar-urls.js';
import { createApp } from './http/app.js';
import { listen } from './http/server.js';
import { UrlSigner } from './http/signed-urls.js';
import { createLogger } from './logger.js';
import { createSharpImageCodec, defaultImageLimits } from './media/sharp-image-codec.js';
import { loadSigningSecret } from './signing-secret.js';
import { DiskFileStore } from './store/file-store.js';
import { withChatMetrics } from './metrics/chat-metrics.js';
import { startMetricsServer } from './metrics/metrics-server.js';
import { Metrics } from './metrics/metrics.js';
import { openRateLimits, useLimit } from './rate-limits.js';
import { openSqlStore } from './store/sql/sql-store.js';
import { WorkerRegexRunner } from './engines/regex/worker-regex-runner.js';

export interface RunningService {
  /** Where the HTTP API listens. */
  url: string;
  /** What the bot is doing; `disabled` without DISCORD_TOKEN. */
  discordStatus(): DiscordStatus;
  /** Resolves when the bot is ready (at once when disabled); rejects if it fails for good. */
  discordReady(): Promise<void>;
  stop(): Promise<void>;
}

/** The script and node options this process runs with; shard processes (DISCORD_SHARDS) run the same. */
export interface ServiceEntry {
  entry: string;
  execArgv: readonly string[];
}

/** The one place that builds everything from the configuration and starts it. */
export async function startService(config: Config, logger: Logger, entry: ServiceEntry = { entry: process.argv[1] ?? '', execArgv: process.execArgv }): Promise<RunningService> {
  const repositories = await openSqlStore(config.storeUrl, { onConnectionError: (error) => logger.warn({ err: error }, 'a pooled database connection failed; it is replaced') });
  const files = new DiskFileStore(path.join(config.dataDir, 'files'));
  // Limits on chats, images and Discord messages hold across processes on a PostgreSQL store.
  const rateLimits = await openRateLimits(config.storeUrl, (error) => logger.warn({ err: error }, 'a rate-limit database connection failed; it is replaced'));
  const { roles } = config;
  // Prometheus figures only when asked for (METRICS_PORT or METRICS_TOKEN): never public by accident.
  const metrics = config.metrics.port !== undefined || config.metrics.token ? new Metrics({ defaultLabels: { role: [...roles].sort().join('+') } }) : undefined;
  const chat = createChatEngine(config, logger);
  const chatModel = metrics ? withChatMetrics(chat.chatModel, metrics) : chat.chatModel;
  const { tokenCounter, embedder } = chat;
  const speechEngine = createSpeechEngine(config);
  const transcriber = createTranscriber(config);
  const imageEngine = createImageEngine(config);
  const faceTrainer = createFaceTrainer(config);
  const signingSecret = await loadSigningSecret(config.urlSigningSecret, config.dataDir);
  const signer = new UrlSigner({ publicBaseUrl: config.publicBaseUrl, secret: signingSecret, ttlSeconds: config.signedUrlTtlSeconds });
  // Persona pictures on Discord: URLs that never expire, served here and built by the bot.
  const avatars = new AvatarUrls({ publicBaseUrl: config.publicBaseUrl, secret: signingSecret });
  const core = createCore({
    repositories,
    files,
    chatModel,
    tokenCounter,
    imageCodec: createSharpImageCodec({ ...defaultImageLimits, maxPixels: config.uploadImageMaxPixels }),
    embedder,
    speech: { engine: speechEngine, encoder: createAudioEncoder(), limit: useLimit(rateLimits, 'speech', config.speech.ratePerMinute) },
    speechToText: transcriber && { transcriber, inspector: { inspect: inspectAudio } },
    images: { engine: imageEngine, trainer: faceTrainer },
    links: signer,
    clock: createSystemClock(),
    ids: createRandomIds(),
    logger: logger.child({ module: 'core' }),
    regexKeys: new WorkerRegexRunner({ boundMs: config.lorebookRegexBoundMs, logger: logger.child({ module: 'lorebook-regex' }) }),
    options: {
      startingBalance: config.startingBalance,
      adminApiKey: config.adminApiKey,
      chat: { contextTokens: chat.contextTokens, maxReplyTokens: config.llm.maxReplyTokens, summary: config.llm.summary, maxReplyCharacters: config.llm.maxReplyCharacters },
      images: { ...config.images, workerName: `${os.hostname()}:${process.pid}` },
      workerName: `${os.hostname()}:${process.pid}`,
      learning: config.learning,
      characters: config.characters,
      speech: config.speech.bounds,
    },
  });
  // Batches of messages to learn from, claimed by lease from the shared queue like image jobs.
  if (roles.has('worker') && config.learning.enabled) core.learner.start();
  if (roles.has('worker')) {
    // Files deleted characters let go of; any number of workers sweep at once.
    core.fileSweep.start();
    // Jobs any process left (stopped, or dead with its lease run out) are taken from the shared queue.
    await core.images.start();
    metrics?.jobs.collectWith(async () => {
      const census = await repositories.jobs.census();
      return { counts: census.counts.map(({ type, status, count }) => ({ type, state: status, count })), queueDepth: census.waiting };
    });
  } else {
    // Jobs run by worker processes: a bot here follows them to Discord, a synchronous request waits for them.
    core.images.listen();
  }
  // The bot starts in the background once the API serves: Discord trouble must not take it down.
  let bot: BotSupervisor | ShardManager | undefined;
  const app = createApp({
    health: {
      discord: () => bot?.status ?? 'disabled',
      chatModel: () => chat.health(),
      ...(config.discord.shards === undefined ? {} : { discordShards: () => (bot instanceof ShardManager ? bot.shards : {}) }),
      storeReachable: async () => {
        await repositories.facts.get('health:probe');
        return true;
      },
    },
    api: roles.has('api'),
    metrics,
    // Without a port of their own, the figures are served on this one, behind their token.
    metricsToken: config.metrics.port === undefined ? config.metrics.token : undefined,
    core,
    signer,
    avatars,
    logger: logger.child({ module: 'http' }),
    rateLimitPerMinute: config.apiRateLimitPerMinute,
    rateLimits,
    synchronousImageWaitMs: config.images.synchronousWaitMs,
  });
  // What the core and its engines hold, let go of on stop, and when start-up fails from here on.
  const closeCore = async () => {
    // Replies still being written for callers still connected (and for Discord) are finished and stored first.
    await core.chat.idle(30_000);
    await core.learner.stop();
    await core.fileSweep.stop();
    // Running image jobs stay at their engines and are followed again after the restart.
    await core.images.stop();
    await Promise.allSettled([chat.close(), speechEngine.close(), transcriber?.close(), imageEngine?.close(), faceTrainer?.close()]);
    await rateLimits.close();
    await repositories.close();
  };
  // A port that is taken, say: nothing of this start is left running in a process that goes on.
  const failStart = async (error: unknown, server?: { close(): Promise<void> }): Promise<never> => {
    await server?.close();
    await closeCore();
    throw error;
  };
  const server = await listen(app, { host: config.host, port: config.port, limits: config.httpLimits }).catch((error: unknown) => failStart(error));
  const metricsServer =
    metrics && config.metrics.port !== undefined
      ? await startMetricsServer(metrics, { host: config.metrics.host, port: config.metrics.port, token: config.metrics.token }).catch((error: unknown) => failStart(error, server))
      : undefined;
  if (metricsServer) logger.info({ url: `${metricsServer.url}/metrics` }, 'metrics served');
  logger.info(
    { roles: [...roles], url: server.url, publicBaseUrl: config.publicBaseUrl, store: config.storeUrl.replace(/\/\/[^@/]*@/, '//***@'), llm: config.llm.baseUrl ?? 'embedded', model: config.llm.model },
    'Likeness API listening',
  );
  if (!config.adminApiKey) logger.warn({}, 'ADMIN_API_KEY is not set: accounts cannot be created over HTTP');
  const { token } = config.discord;
  if (token && roles.has('bot') && config.discord.shards !== undefined) {
    // This process manages the shards: each runs in a process of its own, with ROLES=bot.
    bot = new ShardManager({
      token,
      shards: config.discord.shards,
      apiBase: config.discord.apiBase,
      ...entry,
      publicBaseUrl: config.publicBaseUrl,
      logger: logger.child({ module: 'shards' }),
    });
  } else if (token && roles.has('bot')) {
    const botLogger = logger.child({ module: 'bot' });
    bot = new BotSupervisor(() => startBot(core, repositories, commands, { ...config.discord, token, rateLimits, metrics, avatars }, botLogger), botLogger);
  }
  return {
    url: server.url,
    discordStatus: () => bot?.status ?? 'disabled',
    discordReady: () => bot?.whenReady() ?? Promise.resolve(),
    stop: async () => {
      await bot?.stop();
      await server.close();
      await metricsServer?.close();
      await closeCore();
    },
  };
}

/** The speech-to-text engine STT_ENGINE names, or none: voice messages are then refused, saying what to set. */
function createTranscriber(config: Config): OpenAITranscriber | undefined {
  const { engine, openai, timeoutMs } = config.speechToText;
  if (engine !== 'openai') return undefined;
  // The engine answers once the whole recording is written down: minutes for a long one on a CPU.
  const timeouts = { connectTimeoutMs: config.llm.connectTimeoutMs, headersTimeoutMs: timeoutMs, bodyTimeoutMs: timeoutMs };
  return createOpenAITranscriber({ baseURL: openai.baseUrl ?? '', model: openai.model, ...timeouts, ...(openai.apiKey ? { apiKey: openai.apiKey } : {}) });
}

/** The speech engine TTS_ENGINE names; espeak by default, embedded and offline. */
function createSpeechEngine(config: Config): SpeechEngine & { close(): Promise<void> } {
  const timeouts = { connectTimeoutMs: config.llm.connectTimeoutMs, headersTimeoutMs: config.llm.headersTimeoutMs, bodyTimeoutMs: config.llm.idleTimeoutMs };
  switch (config.speech.engine) {
    case 'elevenlabs':
      return createElevenLabsSpeechEngine({
        baseURL: config.speech.elevenLabs.baseUrl,
        apiKey: config.speech.elevenLabs.apiKey ?? '',
        model: config.speech.elevenLabs.model,
        ...timeouts,
      });
    case 'openai':
      return createOpenAISpeechEngine({
        baseURL: config.speech.openai.baseUrl ?? '',
        ...(config.speech.openai.apiKey ? { apiKey: config.speech.openai.apiKey } : {}),
        model: config.speech.openai.model,
        ...timeouts,
      });
    default:
      return createEspeakSpeechEngine();
  }
}

/** The diffusion engine IMAGE_ENGINE names, or none (image requests then say what to set). */
function createImageEngine(config: Config): ImageEngine | undefined {
  const { images } = config;
  const concurrency = images.concurrency === undefined ? {} : { concurrency: images.concurrency };
  const timeouts = { connectTimeoutMs: config.llm.connectTimeoutMs, headersTimeoutMs: images.imageTimeLimitMs, bodyTimeoutMs: images.imageTimeLimitMs };
  switch (images.engine) {
    case 'a1111':
      return createA1111ImageEngine({ baseURL: images.a1111.baseUrl!, ...(images.a1111.auth ? { apiKey: images.a1111.auth } : {}), ...concurrency, ...timeouts });
    case 'replicate':
      return createReplicateImageEngine({
        baseURL: images.replicate.baseUrl,
        apiToken: images.replicate.apiToken!,
        model: images.replicate.imageModel!,
        ...concurrency,
        connectTimeoutMs: config.llm.connectTimeoutMs,
      });
    case 'cog':
      return createCogImageEngine({ baseURL: images.cog.baseUrl!, ...concurrency, ...timeouts });
    default:
      return undefined;
  }
}

/** Face-model training through Replicate trainings, when its trainer is configured. */
function createFaceTrainer(config: Config): FaceTrainer | undefined {
  const { replicate } = config.images;
  if (!replicate.trainerVersion || !replicate.apiToken || !replicate.trainingDestination) return undefined;
  return createReplicateFaceTrainer({
    baseURL: replicate.baseUrl,
    apiToken: replicate.apiToken,
    trainerVersion: replicate.trainerVersion,
    destination: replicate.trainingDestination,
    connectTimeoutMs: config.llm.connectTimeoutMs,
  });
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = parseConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled rejection'));
  let service: RunningService;
  try {
    service = await startService(config, logger);
  } catch (error) {
    logger.fatal({ err: error }, 'start-up failed');
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
