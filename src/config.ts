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
  if (speechProblems.length > 0) throw new ConfigError(speechProblems);
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
