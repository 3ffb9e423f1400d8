import path from 'node:path';
import { z } from 'zod';
import { defaultMaxReplyCharacters } from './core/chat.js';
import { defaultSummaryOptions } from './core/summaries.js';
import { defaultServerLimits } from './http/server-limits.js';
import { defaultImageLimits } from './media/sharp-image-codec.js';

/**
 * The whole configuration, parsed and validated once from the environment. The zod schema
 * below is the single source: each variable's default and check are stated once, beside its
 * name, and `Config` is what the schema outputs. Nothing else reads `process.env`; tests build
 * `Config` objects with `parseConfig({...})`.
 *
 * To add a variable: one line in `variables` (a builder below gives the check and default),
 * one field where `toConfig` places it, one line in `.env.example` and the README table.
 */
export type Config = z.output<ReturnType<typeof configSchema>>;

export type Environment = Record<string, string | undefined>;

/** An unset or blank variable is absent: its default applies. Values are trimmed. */
const blankToUndefined = (value: unknown) => (typeof value === 'string' ? (value.trim() === '' ? undefined : value.trim()) : value);

/** Free text; absent when unset. */
const text = () => z.preprocess(blankToUndefined, z.string().optional());

/** Free text with a default. */
const textOr = (fallback: string) => z.preprocess(blankToUndefined, z.string().default(fallback));

/** Text that must pass `test` when set. */
const checkedText = (test: (value: string) => boolean, message: string) => z.preprocess(blankToUndefined, z.string().refine(test, { message }).optional());

/** One of `values`, `fallback` when unset. */
const oneOf = <const Values extends readonly [string, ...string[]]>(values: Values, fallback: Values[number]) =>
  z.preprocess(blankToUndefined, z.enum(values, { error: `must be ${values.slice(0, -1).join(', ')} or ${values.at(-1)}` }).default(fallback));

/** A whole number in `[minimum, maximum]`, `fallback` when unset. */
const integer = (fallback: number, minimum: number, maximum: number) => {
  const error = `must be a whole number from ${minimum} to ${maximum}`;
  return z.preprocess(blankToUndefined, z.coerce.number({ error }).int({ error }).min(minimum, { error }).max(maximum, { error }).default(fallback));
};

/** A whole number in `[minimum, maximum]`; absent when unset. */
const optionalInteger = (minimum: number, maximum: number) => {
  const error = `must be a whole number from ${minimum} to ${maximum}`;
  return z.preprocess(blankToUndefined, z.coerce.number({ error }).int({ error }).min(minimum, { error }).max(maximum, { error }).optional());
};

/** An http(s) URL without trailing slashes; absent when unset. */
const url = () =>
  z.url({ protocol: /^https?$/, error: (issue) => `must be an http(s) URL, got "${String(issue.input)}"` }).transform((value) => value.replace(/\/+$/, ''));
const httpUrl = () => z.preprocess(blankToUndefined, url().optional());
const httpUrlOr = (fallback: string) => z.preprocess(blankToUndefined, url().default(fallback));

/**
 * The embedded engine's model when LLM_MODEL is unset: Qwen2.5 1.5B Instruct, Q4_K_M (about
 * 1 GB, Apache-2.0). Why this one is in the README ("The chat model").
 */
export const defaultEmbeddedModel = 'hf:bartowski/Qwen2.5-1.5B-Instruct-GGUF/Qwen2.5-1.5B-Instruct-Q4_K_M.gguf';
/** What an OpenAI-compatible server is asked for when LLM_MODEL is unset (Ollama's name). */
const defaultRemoteModel = 'llama3.2';
/** The context a server's request gets when LLM_CONTEXT_TOKENS is unset. */
export const defaultRemoteContextTokens = 8192;

const snowflake = /^\d{15,21}$/;

const shardsError = 'must be auto or a whole number of shards from 1 to 10000';

/** The parts a process may run: the HTTP API, the image job worker, the Discord bot. */
export const roleNames = ['api', 'worker', 'bot'] as const;
export type Role = (typeof roleNames)[number];
const atLeast16 = (value: string) => value.length >= 16;

const variables = {
  PORT: integer(3000, 0, 65535),
  HOST: textOr('127.0.0.1'),
  /** Default: `http://localhost:$PORT`. */
  PUBLIC_BASE_URL: httpUrl(),
  DATA_DIR: textOr('data'),
  /** Default: SQLite in `DATA_DIR`. */
  STORE_URL: checkedText((value) => /^(sqlite|postgres|postgresql):\/\//.test(value), 'must start with sqlite://, postgres:// or postgresql:// (redis:// is no longer a store)'),
  ADMIN_API_KEY: checkedText(atLeast16, 'must be at least 16 characters long'),
  URL_SIGNING_SECRET: checkedText(atLeast16, 'must be at least 16 characters long'),
  SIGNED_URL_TTL_SECONDS: integer(24 * 3600, 60, 30 * 24 * 3600),
  HTTP_HEADERS_TIMEOUT_MS: integer(defaultServerLimits.headersTimeoutMs, 100, 600_000),
  HTTP_REQUEST_TIMEOUT_MS: integer(defaultServerLimits.requestTimeoutMs, 100, 3_600_000),
  HTTP_BODY_IDLE_TIMEOUT_MS: integer(defaultServerLimits.bodyIdleTimeoutMs, 100, 600_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: integer(defaultServerLimits.keepAliveTimeoutMs, 100, 600_000),
  HTTP_MAX_CONNECTIONS: integer(defaultServerLimits.maxConnections, 1, 1_000_000),
  /** Unset: the embedded engine (llama.cpp in this process). Set: an OpenAI-compatible server. */
  LLM_BASE_URL: httpUrl(),
  LLM_API_KEY: text(),
  /** Embedded: a .gguf path or an hf: URI (default `defaultEmbeddedModel`). Remote: the name the server knows (default llama3.2). */
  LLM_MODEL: text(),
  /** Unset: 8192 for a remote engine; for the embedded one, what the model was trained for, capped by memory, split by the slots. */
  LLM_CONTEXT_TOKENS: optionalInteger(512, 10_000_000),
  /** Embedded: replies generated together in one batch; 0 chooses from memory and cores. */
  LLM_PARALLEL: integer(0, 0, 64),
  /** Embedded: CPU threads for generation; 0 uses the cores this process may run on. */
  LLM_THREADS: integer(0, 0, 1024),
  /** Embedded: `auto` uses a GPU where llama.cpp finds one (Metal on Apple silicon), `off` the CPU only. */
  LLM_GPU: oneOf(['auto', 'off'], 'auto'),
  /** Where hf: model URIs are fetched from (a mirror, or a local server in tests). */
  HF_ENDPOINT: httpUrlOr('https://huggingface.co'),
  /** Sent to HF_ENDPOINT for gated or private models. */
  HF_TOKEN: text(),
  LLM_MAX_REPLY_TOKENS: integer(1024, 16, 1_000_000),
  LLM_CONNECT_TIMEOUT_MS: integer(10_000, 100, 600_000),
  LLM_HEADERS_TIMEOUT_MS: integer(120_000, 100, 3_600_000),
  LLM_IDLE_TIMEOUT_MS: integer(60_000, 100, 3_600_000),
  CHAT_MAX_REPLY_CHARACTERS: integer(defaultMaxReplyCharacters, 100, 10_000_000),
  LLM_SUMMARY_MIN_MESSAGES: integer(defaultSummaryOptions.minimumMessages, 1, 10_000),
  LLM_SUMMARY_MAX_TOKENS: integer(defaultSummaryOptions.maxSummaryTokens, 32, 100_000),
  UPLOAD_IMAGE_MAX_PIXELS: integer(defaultImageLimits.maxPixels, 1_000_000, 400_000_000),
  EMBEDDINGS_MODEL: text(),
  /** Characters learn from conversations (each person can still turn it off for themselves). */
  LEARNING: oneOf(['on', 'off'], 'on'),
  LEARNING_DAILY_TOKENS: integer(200_000, 1_000, 1_000_000_000),
  LEARNING_DAILY_TOKENS_PER_PERSON: integer(50_000, 1_000, 1_000_000_000),
  MAX_CHARACTERS_PER_ACCOUNT: integer(20, 1, 100_000),
  LOREBOOK_REGEX_BOUND_MS: integer(50, 5, 10_000),
  LEARNING_BATCH_MESSAGES: integer(6, 1, 200),
  LEARNING_QUIET_SECONDS: integer(120, 1, 86_400),
  STARTING_BALANCE: integer(100, 0, 1_000_000_000),
  API_RATE_LIMIT_PER_MINUTE: integer(120, 1, 1_000_000),
  TTS_ENGINE: oneOf(['espeak', 'elevenlabs', 'openai'], 'espeak'),
  ELEVENLABS_API_KEY: text(),
  ELEVENLABS_BASE_URL: httpUrlOr('https://api.elevenlabs.io'),
  ELEVENLABS_MODEL: textOr('eleven_multilingual_v2'),
  TTS_BASE_URL: httpUrl(),
  TTS_API_KEY: text(),
  TTS_MODEL: textOr('tts-1'),
  /** The longest text a person may ask to hear (/speak, POST …/speak). */
  SPEECH_MAX_TEXT_CHARACTERS: integer(1000, 1, 100_000),
  SPEECH_RATE_LIMIT_PER_MINUTE: integer(20, 1, 1_000_000),
  SPEECH_CACHE_RETENTION_DAYS: integer(30, 1, 36_500),
  SPEECH_CACHE_MAX_MEGABYTES: integer(1024, 1, 100_000_000),
  /** Unset: voice messages are refused, saying what to set. */
  STT_ENGINE: z.preprocess(blankToUndefined, z.enum(['openai'], { error: 'must be openai, or unset for no speech to text' }).optional()),
  STT_BASE_URL: httpUrl(),
  STT_API_KEY: text(),
  STT_MODEL: textOr('whisper-1'),
  STT_TIMEOUT_MS: integer(300_000, 1_000, 3_600_000),
  IMAGE_ENGINE: oneOf(['none', 'a1111', 'replicate', 'cog'], 'none'),
  A1111_BASE_URL: httpUrl(),
  A1111_AUTH: checkedText((value) => value.includes(':'), 'must be user:password'),
  REPLICATE_API_TOKEN: text(),
  REPLICATE_BASE_URL: httpUrlOr('https://api.replicate.com/v1'),
  REPLICATE_IMAGE_MODEL: checkedText((value) => /^[\w.-]+\/[\w.-]+(:[0-9a-f]{8,})?$/.test(value), 'must be owner/name or owner/name:version'),
  REPLICATE_TRAINER_VERSION: checkedText((value) => /^[\w.-]+\/[\w.-]+:[0-9a-f]{8,}$/.test(value), 'must be owner/name:version'),
  REPLICATE_TRAINING_DESTINATION: checkedText((value) => /^[\w.-]+\/[\w.-]+$/.test(value), 'must be owner/model'),
  COG_BASE_URL: httpUrl(),
  /** 0: the engine's own number. */
  IMAGE_CONCURRENCY: integer(0, 0, 64),
  IMAGE_CREDIT_COST: integer(1, 1, 1_000_000),
  TRAINING_CREDIT_COST: integer(20, 1, 1_000_000),
  IMAGE_JOB_TIMEOUT_SECONDS: integer(600, 1, 86_400),
  TRAINING_JOB_TIMEOUT_SECONDS: integer(3600, 1, 7 * 86_400),
  IMAGE_SYNC_WAIT_SECONDS: integer(120, 1, 600),
  IMAGE_JOB_LEASE_SECONDS: integer(30, 1, 600),
  DISCORD_TOKEN: text(),
  DISCORD_API_BASE: httpUrl(),
  /** Unset: one bot process, one shard. `auto` or a count: the bot role runs a shard manager forking one process per shard. */
  DISCORD_SHARDS: z.preprocess(
    blankToUndefined,
    z
      .union([z.literal('auto'), z.coerce.number().int({ error: shardsError }).min(1, { error: shardsError }).max(10_000, { error: shardsError })], { error: shardsError })
      .optional(),
  ),
  DISCORD_GUILD_ID: checkedText((value) => snowflake.test(value), 'must be a Discord id (digits)'),
  BOT_OWNER_IDS: checkedText((value) => value.split(',').every((id) => snowflake.test(id.trim())), 'must be Discord user ids separated by commas'),
  DISCORD_EDIT_INTERVAL_MS: integer(1000, 100, 60_000),
  DISCORD_MESSAGES_PER_MINUTE: integer(20, 1, 10_000),
  DISCORD_COMMANDS_PER_MINUTE: integer(30, 1, 10_000),
  DISCORD_WEBHOOKS_PER_CHANNEL: integer(5, 1, 15),
  DISCORD_VOICE_IDLE_SECONDS: integer(300, 1, 86_400),
  VOICE_TALK_SILENCE_MS: integer(600, 200, 5_000),
  VOICE_TALK_MINIMUM_SPEECH_MS: integer(300, 0, 5_000),
  VOICE_TALK_BARGE_IN_MS: integer(500, 100, 5_000),
  VOICE_TALK_MAXIMUM_TURN_MS: integer(30_000, 2_000, 120_000),
  VOICE_TALK_VAD_AGGRESSIVENESS: integer(2, 0, 3),
  VOICE_TALK_TRANSCRIPTION_TIMEOUT_MS: integer(15_000, 1_000, 600_000),
  VOICE_TALK_LANGUAGE: checkedText((value) => /^[a-z]{2}$/.test(value), 'must be an ISO 639-1 code such as en'),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  /** What this process does: any of api, worker, bot, comma-separated; all three by default. */
  ROLES: z.preprocess(
    blankToUndefined,
    z
      .string()
      .optional()
      .transform((value) => value ?? '')
      .transform((value) => value.split(',').map((role) => role.trim().toLowerCase()).filter(Boolean))
      .pipe(z.array(z.enum(roleNames, { error: `must list roles among ${roleNames.join(', ')}, separated by commas` })))
      // Unset: every role (the bot only with a DISCORD_TOKEN).
      .transform((roles) => (roles.length === 0 ? undefined : roles)),
  ),
  /** Serve Prometheus figures at /metrics on this port, apart from the API (unset: off). */
  METRICS_PORT: z.preprocess(blankToUndefined, z.coerce.number({ error: 'must be a port number' }).int().min(1).max(65535).optional()),
  METRICS_HOST: textOr('127.0.0.1'),
  /** Bearer token a scrape must send; alone (no METRICS_PORT), it serves /metrics on the API port. */
  METRICS_TOKEN: checkedText(atLeast16, 'must be at least 16 characters long'),
};

type Variables = z.output<z.ZodObject<typeof variables>>;

/** The names of every variable the service reads. */
export const configVariables = Object.keys(variables);

/** Requirements between variables; each problem names the variable to set or change. */
function crossChecks(values: Variables): string[] {
  const { TTS_ENGINE: speech, IMAGE_ENGINE: image } = values;
  return [
    ...(speech === 'elevenlabs' && !values.ELEVENLABS_API_KEY ? ['ELEVENLABS_API_KEY is required when TTS_ENGINE=elevenlabs'] : []),
    ...(speech === 'openai' && !values.TTS_BASE_URL ? ['TTS_BASE_URL is required when TTS_ENGINE=openai (e.g. https://api.openai.com/v1)'] : []),
    ...(values.STT_ENGINE === 'openai' && !values.STT_BASE_URL
      ? ['STT_BASE_URL is required when STT_ENGINE=openai (e.g. https://api.openai.com/v1, or speaches at http://127.0.0.1:8000/v1)']
      : []),
    ...(image === 'a1111' && !values.A1111_BASE_URL ? ['A1111_BASE_URL is required when IMAGE_ENGINE=a1111 (e.g. http://127.0.0.1:7860)'] : []),
    ...(image === 'cog' && !values.COG_BASE_URL ? ['COG_BASE_URL is required when IMAGE_ENGINE=cog (e.g. http://127.0.0.1:5000)'] : []),
    ...(image === 'replicate' && !values.REPLICATE_API_TOKEN ? ['REPLICATE_API_TOKEN is required when IMAGE_ENGINE=replicate'] : []),
    ...(image === 'replicate' && !values.REPLICATE_IMAGE_MODEL ? ['REPLICATE_IMAGE_MODEL is required when IMAGE_ENGINE=replicate (owner/name or owner/name:version)'] : []),
    ...(values.REPLICATE_TRAINER_VERSION && !values.REPLICATE_API_TOKEN ? ['REPLICATE_API_TOKEN is required when REPLICATE_TRAINER_VERSION is set'] : []),
    ...(values.REPLICATE_TRAINER_VERSION && !values.REPLICATE_TRAINING_DESTINATION ? ['REPLICATE_TRAINING_DESTINATION (owner/model) is required when REPLICATE_TRAINER_VERSION is set'] : []),
    ...(values.ROLES?.includes('bot') && !values.DISCORD_TOKEN ? ['DISCORD_TOKEN is required when ROLES names bot'] : []),
    ...(values.LLM_CONTEXT_TOKENS !== undefined && values.LLM_MAX_REPLY_TOKENS >= values.LLM_CONTEXT_TOKENS
      ? [`LLM_MAX_REPLY_TOKENS (${values.LLM_MAX_REPLY_TOKENS}) must be smaller than LLM_CONTEXT_TOKENS (${values.LLM_CONTEXT_TOKENS})`]
      : []),
  ];
}

/** The variables checked, then arranged as the service uses them. */
function configSchema(workingDirectory: string) {
  return z
    .object(variables)
    .check((context) => {
      for (const problem of crossChecks(context.value)) context.issues.push({ code: 'custom', message: problem, input: context.value, path: [] });
    })
    .transform((values) => toConfig(values, workingDirectory));
}

function toConfig(values: Variables, workingDirectory: string) {
  const dataDir = path.resolve(workingDirectory, values.DATA_DIR);
  return {
    port: values.PORT,
    host: values.HOST,
    publicBaseUrl: values.PUBLIC_BASE_URL ?? `http://localhost:${values.PORT}`,
    dataDir,
    storeUrl: values.STORE_URL ?? `sqlite://${path.join(dataDir, 'likeness.sqlite')}`,
    /** Deadlines and the connection cap of the HTTP server (see `ServerLimits`). */
    httpLimits: {
      headersTimeoutMs: values.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: values.HTTP_REQUEST_TIMEOUT_MS,
      bodyIdleTimeoutMs: values.HTTP_BODY_IDLE_TIMEOUT_MS,
      keepAliveTimeoutMs: values.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: values.HTTP_MAX_CONNECTIONS,
    },
    adminApiKey: values.ADMIN_API_KEY,
    /** Unset means: generate one and keep it in `dataDir` (done by main, not here). */
    urlSigningSecret: values.URL_SIGNING_SECRET,
    /** How long signed file URLs stay valid. */
    signedUrlTtlSeconds: values.SIGNED_URL_TTL_SECONDS,
    llm: {
      /** `embedded`: llama.cpp in this process (LLM_BASE_URL unset); `openai-compatible`: the server at `baseUrl`. */
      engine: values.LLM_BASE_URL === undefined ? ('embedded' as const) : ('openai-compatible' as const),
      baseUrl: values.LLM_BASE_URL,
      apiKey: values.LLM_API_KEY,
      model: values.LLM_MODEL ?? (values.LLM_BASE_URL === undefined ? defaultEmbeddedModel : defaultRemoteModel),
      /** Undefined for the embedded engine unless set: it then follows the model (see `embedded`). */
      contextTokens: values.LLM_CONTEXT_TOKENS ?? (values.LLM_BASE_URL === undefined ? undefined : defaultRemoteContextTokens),
      /** The embedded engine's settings; 0 (parallel, threads) means chosen at start from the machine. */
      embedded: {
        modelsDir: path.join(dataDir, 'models'),
        parallel: values.LLM_PARALLEL,
        threads: values.LLM_THREADS,
        gpu: values.LLM_GPU,
        huggingFace: { endpoint: values.HF_ENDPOINT, token: values.HF_TOKEN },
      },
      maxReplyTokens: values.LLM_MAX_REPLY_TOKENS,
      connectTimeoutMs: values.LLM_CONNECT_TIMEOUT_MS,
      /** Time allowed until the engine starts answering (prompt processing can be slow). */
      headersTimeoutMs: values.LLM_HEADERS_TIMEOUT_MS,
      /** Longest silence allowed between two pieces of a reply. */
      idleTimeoutMs: values.LLM_IDLE_TIMEOUT_MS,
      /** The rolling summary of what fell out of the context window. */
      summary: { minimumMessages: values.LLM_SUMMARY_MIN_MESSAGES, maxSummaryTokens: values.LLM_SUMMARY_MAX_TOKENS },
      /** Longest reply kept; the engine is not read past it and the reply is stored cut (`length`). */
      maxReplyCharacters: values.CHAT_MAX_REPLY_CHARACTERS,
    },
    /** Largest width × height of an image people send (chat, avatar, face photos). */
    uploadImageMaxPixels: values.UPLOAD_IMAGE_MAX_PIXELS,
    embeddingsModel: values.EMBEDDINGS_MODEL,
    /** Learning from conversations: off stops it for everyone; the budget is per character and day, and per person with it, in engine tokens. */
    learning: {
      enabled: values.LEARNING === 'on',
      dailyTokensPerCharacter: values.LEARNING_DAILY_TOKENS,
      dailyTokensPerPerson: values.LEARNING_DAILY_TOKENS_PER_PERSON,
      batchMessages: values.LEARNING_BATCH_MESSAGES,
      quietMs: values.LEARNING_QUIET_SECONDS * 1000,
    },
    /** How many characters an account may hold, its own one included. */
    characters: { maxPerAccount: values.MAX_CHARACTERS_PER_ACCOUNT },
    /** The longest a prompt waits on its lorebook's regular-expression keys; a pattern running past half of it is no longer run. */
    lorebookRegexBoundMs: values.LOREBOOK_REGEX_BOUND_MS,
    startingBalance: values.STARTING_BALANCE,
    /** Chat and image requests allowed per account per minute over the API. */
    apiRateLimitPerMinute: values.API_RATE_LIMIT_PER_MINUTE,
    logLevel: values.LOG_LEVEL,
    /** What this process runs; `bot` only does anything with a DISCORD_TOKEN. */
    roles: new Set<Role>(values.ROLES ?? roleNames),
    metrics: { port: values.METRICS_PORT, host: values.METRICS_HOST, token: values.METRICS_TOKEN },
    speech: {
      engine: values.TTS_ENGINE,
      elevenLabs: { apiKey: values.ELEVENLABS_API_KEY, baseUrl: values.ELEVENLABS_BASE_URL, model: values.ELEVENLABS_MODEL },
      openai: { baseUrl: values.TTS_BASE_URL, apiKey: values.TTS_API_KEY, model: values.TTS_MODEL },
      /** Texts a person may ask to hear a minute per account (shared across processes on PostgreSQL). */
      ratePerMinute: values.SPEECH_RATE_LIMIT_PER_MINUTE,
      /** How long a text may be, and how long and how much spoken audio is kept to be reused. */
      bounds: {
        maxTextCharacters: values.SPEECH_MAX_TEXT_CHARACTERS,
        cacheRetentionMs: values.SPEECH_CACHE_RETENTION_DAYS * 24 * 60 * 60_000,
        cacheMaxBytes: values.SPEECH_CACHE_MAX_MEGABYTES * 1024 * 1024,
      },
    },
    /** Speech to text for voice messages; off (they are refused, saying what to set) without an engine. */
    speechToText: {
      engine: values.STT_ENGINE,
      openai: { baseUrl: values.STT_BASE_URL, apiKey: values.STT_API_KEY, model: values.STT_MODEL },
      timeoutMs: values.STT_TIMEOUT_MS,
    },
    images: {
      /** Which diffusion engine makes images; `none` answers image requests with a 503 saying what to set. */
      engine: values.IMAGE_ENGINE,
      a1111: { baseUrl: values.A1111_BASE_URL, auth: values.A1111_AUTH },
      replicate: {
        apiToken: values.REPLICATE_API_TOKEN,
        baseUrl: values.REPLICATE_BASE_URL,
        imageModel: values.REPLICATE_IMAGE_MODEL,
        /** `owner/name:version` of the face trainer; training is off without it. */
        trainerVersion: values.REPLICATE_TRAINER_VERSION,
        /** `owner/model` the trainer writes its weights to (Replicate requires one). */
        trainingDestination: values.REPLICATE_TRAINING_DESTINATION,
      },
      cog: { baseUrl: values.COG_BASE_URL },
      /** Overrides the engine's own number of runs at once. */
      concurrency: values.IMAGE_CONCURRENCY === 0 ? undefined : values.IMAGE_CONCURRENCY,
      imageCreditCost: values.IMAGE_CREDIT_COST,
      trainingCreditCost: values.TRAINING_CREDIT_COST,
      imageTimeLimitMs: values.IMAGE_JOB_TIMEOUT_SECONDS * 1000,
      trainingTimeLimitMs: values.TRAINING_JOB_TIMEOUT_SECONDS * 1000,
      /** How long `synchronous: true` waits before answering with the job id instead. */
      synchronousWaitMs: values.IMAGE_SYNC_WAIT_SECONDS * 1000,
      /** How long a process's claim on a job lasts unrenewed: a dead process's jobs wait this long for another. */
      leaseMs: values.IMAGE_JOB_LEASE_SECONDS * 1000,
    },
    discord: {
      /** The bot runs only when a token is set. */
      token: values.DISCORD_TOKEN,
      /** REST base (up to `/api`), e.g. for @discordjs/proxy; the gateway URL comes from its `/gateway/bot`. */
      apiBase: values.DISCORD_API_BASE,
      /** How many shards the bot runs as, one process each (`auto`: Discord's recommendation); unset: one process, one shard. */
      shards: values.DISCORD_SHARDS,
      /** Commands are deployed to this guild (instant) instead of globally. */
      guildId: values.DISCORD_GUILD_ID,
      /** Discord user ids allowed to use /admin. */
      ownerIds: values.BOT_OWNER_IDS?.split(',').map((id) => id.trim()) ?? [],
      /** Spacing of reply edits per channel before Discord's headers say otherwise. */
      editIntervalMs: values.DISCORD_EDIT_INTERVAL_MS,
      messagesPerMinute: values.DISCORD_MESSAGES_PER_MINUTE,
      commandsPerMinute: values.DISCORD_COMMANDS_PER_MINUTE,
      /** The most webhooks characters post through in one channel; more let overlapping replies stream apart. */
      webhooksPerChannel: values.DISCORD_WEBHOOKS_PER_CHANNEL,
      /** Leave a voice channel after this long with nothing to say. */
      voiceIdleMs: values.DISCORD_VOICE_IDLE_SECONDS * 1000,
      /** /voice talk: when a person's turn ends, what is too short to be one, what interrupts the character. */
      voiceTalk: {
        silenceMs: values.VOICE_TALK_SILENCE_MS,
        minimumSpeechMs: values.VOICE_TALK_MINIMUM_SPEECH_MS,
        bargeInMs: values.VOICE_TALK_BARGE_IN_MS,
        /** A turn this long is cut and written down while the person goes on; only the last part is answered. */
        maximumTurnMs: values.VOICE_TALK_MAXIMUM_TURN_MS,
        /** The WebRTC VAD's mode: 0 hears the most as speech, 3 the least (noisy rooms). */
        aggressiveness: values.VOICE_TALK_VAD_AGGRESSIVENESS as 0 | 1 | 2 | 3,
        /** Forced on speech-to-text; unset, the engine detects it (and a language it reports is forced after). */
        language: values.VOICE_TALK_LANGUAGE,
        /** One turn's transcription is given up after this long, so the turns after it go on. */
        transcriptionTimeoutMs: values.VOICE_TALK_TRANSCRIPTION_TIMEOUT_MS,
      },
    },
  };
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.problems = problems;
  }
}

/** Parses the environment; throws one `ConfigError` naming every invalid variable. */
export function parseConfig(environment: Environment, workingDirectory = process.cwd()): Config {
  const result = configSchema(workingDirectory).safeParse(environment);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')} ${issue.message}` : issue.message)));
  }
  return result.data;
}
