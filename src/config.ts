import path from 'node:path';
import { z } from 'zod';

/**
 * The whole configuration, parsed and validated once. Nothing else reads `process.env`;
 * tests build `Config` objects directly with `parseConfig({...})`.
 */
export interface Config {
  port: number;
  host: string;
  publicBaseUrl: string;
  dataDir: string;
  storeUrl: string;
  adminApiKey: string | undefined;
  /** Unset means: generate one and keep it in `dataDir` (done by main, not here). */
  urlSigningSecret: string | undefined;
  /** How long signed file URLs stay valid. */
  signedUrlTtlSeconds: number;
  llm: {
    baseUrl: string;
    apiKey: string | undefined;
    model: string;
    contextTokens: number;
    maxReplyTokens: number;
    connectTimeoutMs: number;
    /** Time allowed until the engine starts answering (prompt processing can be slow). */
    headersTimeoutMs: number;
    /** Longest silence allowed between two pieces of a reply. */
    idleTimeoutMs: number;
  };
  embeddingsModel: string | undefined;
  startingBalance: number;
  /** Chat and image requests allowed per account per minute over the API. */
  apiRateLimitPerMinute: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  speech: {
    engine: 'espeak' | 'elevenlabs' | 'openai';
    elevenLabs: { apiKey: string | undefined; baseUrl: string; model: string };
    openai: { baseUrl: string | undefined; apiKey: string | undefined; model: string };
  };
  images: {
    /** Which diffusion engine makes images; `none` answers image requests with a 503 saying what to set. */
    engine: 'none' | 'a1111' | 'replicate' | 'cog';
    a1111: { baseUrl: string | undefined; auth: string | undefined };
    replicate: {
      apiToken: string | undefined;
      baseUrl: string;
      imageModel: string | undefined;
      /** `owner/name:version` of the face trainer; training is off without it. */
      trainerVersion: string | undefined;
      /** `owner/model` the trainer writes its weights to (Replicate requires one). */
      trainingDestination: string | undefined;
    };
    cog: { baseUrl: string | undefined };
    /** Overrides the engine's own number of runs at once. */
    concurrency: number | undefined;
    imageCreditCost: number;
    trainingCreditCost: number;
    imageTimeLimitMs: number;
    trainingTimeLimitMs: number;
    /** How long `synchronous: true` waits before answering with the job id instead. */
    synchronousWaitMs: number;
  };
  discord: {
    /** The bot runs only when a token is set. */
    token: string | undefined;
    /** REST base (up to `/api`), e.g. for @discordjs/proxy; the gateway URL comes from its `/gateway/bot`. */
    apiBase: string | undefined;
    /** Commands are deployed to this guild (instant) instead of globally. */
    guildId: string | undefined;
    /** Discord user ids allowed to use /admin. */
    ownerIds: string[];
    /** Spacing of reply edits per channel before Discord's headers say otherwise. */
    editIntervalMs: number;
    messagesPerMinute: number;
    commandsPerMinute: number;
    /** Leave a voice channel after this long with nothing to say. */
    voiceIdleMs: number;
  };
}

export type Environment = Record<string, string | undefined>;

const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const integer = (fallback: number, minimum: number, maximum: number) =>
  z
    .string()
    .optional()
    .transform((value, context) => {
      if (value === undefined || value.trim() === '') return fallback;
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < minimum || parsed > maximum) {
        context.addIssue({ code: 'custom', message: `must be a whole number from ${minimum} to ${maximum}, got "${value}"` });
        return z.NEVER;
      }
      return parsed;
    });

const httpUrl = (fallback: string | undefined) =>
  optionalText.transform((value, context) => {
    const text = value ?? fallback;
    if (text === undefined) return undefined;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      context.addIssue({ code: 'custom', message: `must be an http(s) URL, got "${text}"` });
      return z.NEVER;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      context.addIssue({ code: 'custom', message: `must be an http(s) URL, got "${text}"` });
      return z.NEVER;
    }
    return text.replace(/\/+$/, '');
  });

const snowflake = /^\d{15,21}$/;

const environmentSchema = z.object({
  PORT: integer(3000, 0, 65535),
  HOST: optionalText,
  PUBLIC_BASE_URL: httpUrl(undefined),
  DATA_DIR: optionalText,
  STORE_URL: optionalText.refine(
    (value) => value === undefined || /^(sqlite|redis|rediss|postgres|postgresql):\/\//.test(value),
    { message: 'must start with sqlite://, redis://, rediss://, postgres:// or postgresql://' },
  ),
  ADMIN_API_KEY: optionalText.refine((value) => value === undefined || value.length >= 16, {
    message: 'must be at least 16 characters long',
  }),
  URL_SIGNING_SECRET: optionalText.refine((value) => value === undefined || value.length >= 16, {
    message: 'must be at least 16 characters long',
  }),
  SIGNED_URL_TTL_SECONDS: integer(24 * 3600, 60, 30 * 24 * 3600),
  LLM_BASE_URL: httpUrl('http://127.0.0.1:11434/v1'),
  LLM_API_KEY: optionalText,
  LLM_MODEL: optionalText,
  LLM_CONTEXT_TOKENS: integer(8192, 512, 10_000_000),
  LLM_MAX_REPLY_TOKENS: integer(1024, 16, 1_000_000),
  LLM_CONNECT_TIMEOUT_MS: integer(10_000, 100, 600_000),
  LLM_HEADERS_TIMEOUT_MS: integer(120_000, 100, 3_600_000),
  LLM_IDLE_TIMEOUT_MS: integer(60_000, 100, 3_600_000),
  EMBEDDINGS_MODEL: optionalText,
  STARTING_BALANCE: integer(100, 0, 1_000_000_000),
  API_RATE_LIMIT_PER_MINUTE: integer(120, 1, 1_000_000),
  TTS_ENGINE: optionalText.refine((value) => value === undefined || ['espeak', 'elevenlabs', 'openai'].includes(value), {
    message: 'must be espeak, elevenlabs or openai',
  }),
  ELEVENLABS_API_KEY: optionalText,
  ELEVENLABS_BASE_URL: httpUrl('https://api.elevenlabs.io'),
  ELEVENLABS_MODEL: optionalText,
  TTS_BASE_URL: httpUrl(undefined),
  TTS_API_KEY: optionalText,
  TTS_MODEL: optionalText,
  IMAGE_ENGINE: optionalText.refine((value) => value === undefined || ['none', 'a1111', 'replicate', 'cog'].includes(value), {
    message: 'must be none, a1111, replicate or cog',
  }),
  A1111_BASE_URL: httpUrl(undefined),
  A1111_AUTH: optionalText.refine((value) => value === undefined || value.includes(':'), { message: 'must be user:password' }),
  REPLICATE_API_TOKEN: optionalText,
  REPLICATE_BASE_URL: httpUrl('https://api.replicate.com/v1'),
  REPLICATE_IMAGE_MODEL: optionalText.refine((value) => value === undefined || /^[\w.-]+\/[\w.-]+(:[0-9a-f]{8,})?$/.test(value), {
    message: 'must be owner/name or owner/name:version',
  }),
  REPLICATE_TRAINER_VERSION: optionalText.refine((value) => value === undefined || /^[\w.-]+\/[\w.-]+:[0-9a-f]{8,}$/.test(value), {
    message: 'must be owner/name:version',
  }),
  REPLICATE_TRAINING_DESTINATION: optionalText.refine((value) => value === undefined || /^[\w.-]+\/[\w.-]+$/.test(value), {
    message: 'must be owner/model',
  }),
  COG_BASE_URL: httpUrl(undefined),
  IMAGE_CONCURRENCY: integer(0, 0, 64),
  IMAGE_CREDIT_COST: integer(1, 1, 1_000_000),
  TRAINING_CREDIT_COST: integer(20, 1, 1_000_000),
  IMAGE_JOB_TIMEOUT_SECONDS: integer(600, 1, 86_400),
  TRAINING_JOB_TIMEOUT_SECONDS: integer(3600, 1, 7 * 86_400),
  IMAGE_SYNC_WAIT_SECONDS: integer(120, 1, 600),
  DISCORD_TOKEN: optionalText,
  DISCORD_API_BASE: httpUrl(undefined),
  DISCORD_GUILD_ID: optionalText.refine((value) => value === undefined || snowflake.test(value), { message: 'must be a Discord id (digits)' }),
  BOT_OWNER_IDS: optionalText.refine((value) => value === undefined || value.split(',').every((id) => snowflake.test(id.trim())), {
    message: 'must be Discord user ids separated by commas',
  }),
  DISCORD_EDIT_INTERVAL_MS: integer(1000, 100, 60_000),
  DISCORD_MESSAGES_PER_MINUTE: integer(20, 1, 10_000),
  DISCORD_COMMANDS_PER_MINUTE: integer(30, 1, 10_000),
  DISCORD_VOICE_IDLE_SECONDS: integer(300, 1, 86_400),
  LOG_LEVEL: optionalText.refine(
    (value) => value === undefined || ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(value),
    { message: 'must be one of fatal, error, warn, info, debug, trace, silent' },
  ),
});

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
  const result = environmentSchema.safeParse(environment);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`));
  }
  const values = result.data;
  const speechEngine = (values.TTS_ENGINE ?? 'espeak') as Config['speech']['engine'];
  const speechProblems = [
    ...(speechEngine === 'elevenlabs' && !values.ELEVENLABS_API_KEY ? ['ELEVENLABS_API_KEY is required when TTS_ENGINE=elevenlabs'] : []),
    ...(speechEngine === 'openai' && !values.TTS_BASE_URL ? ['TTS_BASE_URL is required when TTS_ENGINE=openai (e.g. https://api.openai.com/v1)'] : []),
  ];
  const imageEngine = (values.IMAGE_ENGINE ?? 'none') as Config['images']['engine'];
  const imageProblems = [
    ...(imageEngine === 'a1111' && !values.A1111_BASE_URL ? ['A1111_BASE_URL is required when IMAGE_ENGINE=a1111 (e.g. http://127.0.0.1:7860)'] : []),
    ...(imageEngine === 'cog' && !values.COG_BASE_URL ? ['COG_BASE_URL is required when IMAGE_ENGINE=cog (e.g. http://127.0.0.1:5000)'] : []),
    ...(imageEngine === 'replicate' && !values.REPLICATE_API_TOKEN ? ['REPLICATE_API_TOKEN is required when IMAGE_ENGINE=replicate'] : []),
    ...(imageEngine === 'replicate' && !values.REPLICATE_IMAGE_MODEL ? ['REPLICATE_IMAGE_MODEL is required when IMAGE_ENGINE=replicate (owner/name or owner/name:version)'] : []),
    ...(values.REPLICATE_TRAINER_VERSION && !values.REPLICATE_API_TOKEN ? ['REPLICATE_API_TOKEN is required when REPLICATE_TRAINER_VERSION is set'] : []),
    ...(values.REPLICATE_TRAINER_VERSION && !values.REPLICATE_TRAINING_DESTINATION ? ['REPLICATE_TRAINING_DESTINATION (owner/model) is required when REPLICATE_TRAINER_VERSION is set'] : []),
  ];
  if (speechProblems.length + imageProblems.length > 0) throw new ConfigError([...speechProblems, ...imageProblems]);
  if (values.LLM_MAX_REPLY_TOKENS >= values.LLM_CONTEXT_TOKENS) {
    throw new ConfigError([
      `LLM_MAX_REPLY_TOKENS (${values.LLM_MAX_REPLY_TOKENS}) must be smaller than LLM_CONTEXT_TOKENS (${values.LLM_CONTEXT_TOKENS})`,
    ]);
  }
  const dataDir = path.resolve(workingDirectory, values.DATA_DIR ?? 'data');
  return {
    port: values.PORT,
    host: values.HOST ?? '127.0.0.1',
    publicBaseUrl: values.PUBLIC_BASE_URL ?? `http://localhost:${values.PORT}`,
    dataDir,
    storeUrl: values.STORE_URL ?? `sqlite://${path.join(dataDir, 'likeness.sqlite')}`,
    adminApiKey: values.ADMIN_API_KEY,
    urlSigningSecret: values.URL_SIGNING_SECRET,
    signedUrlTtlSeconds: values.SIGNED_URL_TTL_SECONDS,
    llm: {
      baseUrl: values.LLM_BASE_URL ?? 'http://127.0.0.1:11434/v1',
      apiKey: values.LLM_API_KEY,
      model: values.LLM_MODEL ?? 'llama3.2',
      contextTokens: values.LLM_CONTEXT_TOKENS,
      maxReplyTokens: values.LLM_MAX_REPLY_TOKENS,
      connectTimeoutMs: values.LLM_CONNECT_TIMEOUT_MS,
      headersTimeoutMs: values.LLM_HEADERS_TIMEOUT_MS,
      idleTimeoutMs: values.LLM_IDLE_TIMEOUT_MS,
    },
    embeddingsModel: values.EMBEDDINGS_MODEL,
    startingBalance: values.STARTING_BALANCE,
    apiRateLimitPerMinute: values.API_RATE_LIMIT_PER_MINUTE,
    logLevel: (values.LOG_LEVEL ?? 'info') as Config['logLevel'],
    speech: {
      engine: speechEngine,
      elevenLabs: {
        apiKey: values.ELEVENLABS_API_KEY,
        baseUrl: values.ELEVENLABS_BASE_URL ?? 'https://api.elevenlabs.io',
        model: values.ELEVENLABS_MODEL ?? 'eleven_multilingual_v2',
      },
      openai: { baseUrl: values.TTS_BASE_URL, apiKey: values.TTS_API_KEY, model: values.TTS_MODEL ?? 'tts-1' },
    },
    images: {
      engine: imageEngine,
      a1111: { baseUrl: values.A1111_BASE_URL, auth: values.A1111_AUTH },
      replicate: {
        apiToken: values.REPLICATE_API_TOKEN,
        baseUrl: values.REPLICATE_BASE_URL ?? 'https://api.replicate.com/v1',
        imageModel: values.REPLICATE_IMAGE_MODEL,
        trainerVersion: values.REPLICATE_TRAINER_VERSION,
        trainingDestination: values.REPLICATE_TRAINING_DESTINATION,
      },
      cog: { baseUrl: values.COG_BASE_URL },
      concurrency: values.IMAGE_CONCURRENCY === 0 ? undefined : values.IMAGE_CONCURRENCY,
      imageCreditCost: values.IMAGE_CREDIT_COST,
      trainingCreditCost: values.TRAINING_CREDIT_COST,
      imageTimeLimitMs: values.IMAGE_JOB_TIMEOUT_SECONDS * 1000,
      trainingTimeLimitMs: values.TRAINING_JOB_TIMEOUT_SECONDS * 1000,
      synchronousWaitMs: values.IMAGE_SYNC_WAIT_SECONDS * 1000,
    },
    discord: {
      token: values.DISCORD_TOKEN,
      apiBase: values.DISCORD_API_BASE,
      guildId: values.DISCORD_GUILD_ID,
      ownerIds: values.BOT_OWNER_IDS?.split(',').map((id) => id.trim()) ?? [],
      editIntervalMs: values.DISCORD_EDIT_INTERVAL_MS,
      messagesPerMinute: values.DISCORD_MESSAGES_PER_MINUTE,
      commandsPerMinute: values.DISCORD_COMMANDS_PER_MINUTE,
      voiceIdleMs: values.DISCORD_VOICE_IDLE_SECONDS * 1000,
    },
  };
}
