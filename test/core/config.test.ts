import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, defaultEmbeddedModel, parseConfig } from '../../src/config.js';

describe('parseConfig', () => {
  it('gives the documented defaults', () => {
    const config = parseConfig({}, '/srv/app');
    expect(config.port).toBe(3000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.publicBaseUrl).toBe('http://localhost:3000');
    expect(config.dataDir).toBe('/srv/app/data');
    expect(config.storeUrl).toBe(`sqlite://${path.join('/srv/app/data', 'likeness.sqlite')}`);
    // Chat out of the box: llama.cpp in process, its model fetched into DATA_DIR/models.
    expect(config.llm.engine).toBe('embedded');
    expect(config.llm.baseUrl).toBeUndefined();
    expect(config.llm.model).toBe(defaultEmbeddedModel);
    expect(config.llm.embedded).toMatchObject({ modelsDir: '/srv/app/data/models', parallel: 0, threads: 0, gpu: 'auto' });
    expect(config.llm.embedded.huggingFace.endpoint).toBe('https://huggingface.co');
    // The embedded engine's context follows the model unless set.
    expect(config.llm.contextTokens).toBeUndefined();
    expect(config.startingBalance).toBe(100);
    expect(config.embeddingsModel).toBeUndefined();
  });

  it('uses an OpenAI-compatible server when LLM_BASE_URL is set, with its own defaults', () => {
    const config = parseConfig({ LLM_BASE_URL: 'http://127.0.0.1:8080/v1' });
    expect(config.llm.engine).toBe('openai-compatible');
    expect(config.llm.model).toBe('llama3.2');
    expect(config.llm.contextTokens).toBe(8192);
    expect(parseConfig({ LLM_MODEL: './models/mine.gguf' }).llm).toMatchObject({ engine: 'embedded', model: './models/mine.gguf' });
    expect(() => parseConfig({ LLM_PARALLEL: '-1', LLM_THREADS: 'many', LLM_GPU: 'cuda' })).toThrow(/LLM_PARALLEL[\s\S]*LLM_THREADS[\s\S]*LLM_GPU/);
  });

  it('follows PORT in the default public URL', () => {
    expect(parseConfig({ PORT: '8080' }).publicBaseUrl).toBe('http://localhost:8080');
  });

  it('names every invalid variable in one error', () => {
    let thrown: unknown;
    try {
      parseConfig({ PORT: 'eighty', LLM_BASE_URL: 'ftp://x', STORE_URL: 'mysql://db', LOG_LEVEL: 'loud', STARTING_BALANCE: '-1' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    const problems = (thrown as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'LLM_BASE_URL', 'STORE_URL', 'LOG_LEVEL', 'STARTING_BALANCE']) {
      expect(problems).toContain(name);
    }
    expect((thrown as ConfigError).problems).toHaveLength(5);
  });

  it('runs every role by default and the named ones with ROLES', () => {
    expect([...parseConfig({}).roles].sort()).toEqual(['api', 'bot', 'worker']);
    expect([...parseConfig({ ROLES: ' Worker , api ' }).roles].sort()).toEqual(['api', 'worker']);
    expect(() => parseConfig({ ROLES: 'api,web' })).toThrow(/ROLES/);
    expect(() => parseConfig({ ROLES: 'bot' })).toThrow(/DISCORD_TOKEN is required when ROLES names bot/);
    expect([...parseConfig({ ROLES: 'bot', DISCORD_TOKEN: 'token' }).roles]).toEqual(['bot']);
  });

  it('runs the bot as one process unless DISCORD_SHARDS asks for auto or a number of shards', () => {
    expect(parseConfig({}).discord.shards).toBeUndefined();
    expect(parseConfig({ DISCORD_SHARDS: ' auto ' }).discord.shards).toBe('auto');
    expect(parseConfig({ DISCORD_SHARDS: '4' }).discord.shards).toBe(4);
    for (const wrong of ['0', '2.5', 'many']) {
      expect(() => parseConfig({ DISCORD_SHARDS: wrong })).toThrow('DISCORD_SHARDS must be auto or a whole number of shards from 1 to 10000');
    }
  });

  it('serves metrics only when asked, on their own port or with a token', () => {
    expect(parseConfig({}).metrics).toEqual({ port: undefined, host: '127.0.0.1', token: undefined });
    expect(parseConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }).metrics).toMatchObject({ port: 9464, host: '0.0.0.0' });
    expect(() => parseConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN/);
    expect(() => parseConfig({ METRICS_PORT: 'ninety' })).toThrow(/METRICS_PORT/);
  });

  it('refuses a reply budget as large as the context', () => {
    expect(() => parseConfig({ LLM_CONTEXT_TOKENS: '1024', LLM_MAX_REPLY_TOKENS: '1024' })).toThrow(/LLM_MAX_REPLY_TOKENS/);
  });

  it('leaves speech to text off by default and names what the openai engine needs', () => {
    expect(parseConfig({}).speechToText).toEqual({ engine: undefined, openai: { baseUrl: undefined, apiKey: undefined, model: 'whisper-1' }, timeoutMs: 300_000 });
    expect(parseConfig({ STT_TIMEOUT_MS: '600000' }).speechToText.timeoutMs).toBe(600_000);
    expect(() => parseConfig({ STT_TIMEOUT_MS: '10' })).toThrow(/STT_TIMEOUT_MS/);
    expect(() => parseConfig({ STT_ENGINE: 'openai' })).toThrow(/STT_BASE_URL is required when STT_ENGINE=openai/);
    expect(() => parseConfig({ STT_ENGINE: 'whisper' })).toThrow(/STT_ENGINE must be openai/);
    const configured = parseConfig({ STT_ENGINE: 'openai', STT_BASE_URL: 'http://127.0.0.1:8000/v1/', STT_MODEL: 'Systran/faster-whisper-small', STT_API_KEY: 'k' });
    expect(configured.speechToText).toEqual({ engine: 'openai', openai: { baseUrl: 'http://127.0.0.1:8000/v1', apiKey: 'k', model: 'Systran/faster-whisper-small' }, timeoutMs: 300_000 });
  });

  it('leaves images off by default and names what each image engine needs', () => {
    const defaults = parseConfig({});
    expect(defaults.images).toMatchObject({ engine: 'none', imageCreditCost: 1, trainingCreditCost: 20, synchronousWaitMs: 120_000, concurrency: undefined });
    const problems = (environment: Record<string, string>) => {
      try {
        parseConfig(environment);
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems({ IMAGE_ENGINE: 'a1111' })).toEqual([expect.stringContaining('A1111_BASE_URL is required')]);
    expect(problems({ IMAGE_ENGINE: 'cog' })).toEqual([expect.stringContaining('COG_BASE_URL is required')]);
    expect(problems({ IMAGE_ENGINE: 'replicate' })).toEqual([
      expect.stringContaining('REPLICATE_API_TOKEN is required'),
      expect.stringContaining('REPLICATE_IMAGE_MODEL is required'),
    ]);
    expect(problems({ REPLICATE_TRAINER_VERSION: 'owner/trainer:0123abcd', REPLICATE_API_TOKEN: 't' })).toEqual([
      expect.stringContaining('REPLICATE_TRAINING_DESTINATION'),
    ]);
    expect(problems({ IMAGE_ENGINE: 'dalle', REPLICATE_IMAGE_MODEL: 'no slash', IMAGE_CREDIT_COST: '0' })).toEqual([
      expect.stringContaining('IMAGE_ENGINE must be none, a1111, replicate or cog'),
      expect.stringContaining('REPLICATE_IMAGE_MODEL must be owner/name'),
      expect.stringContaining('IMAGE_CREDIT_COST must be a whole number from 1'),
    ]);
    const replicate = parseConfig({ IMAGE_ENGINE: 'replicate', REPLICATE_API_TOKEN: 't', REPLICATE_IMAGE_MODEL: 'owner/sdxl:abcdef0123', IMAGE_CONCURRENCY: '6' });
    expect(replicate.images).toMatchObject({ engine: 'replicate', concurrency: 6, replicate: { baseUrl: 'https://api.replicate.com/v1', imageModel: 'owner/sdxl:abcdef0123' } });
  });

  it('takes blank values as unset, trims values and drops trailing slashes of URLs', () => {
    const config = parseConfig({ HOST: '  ', LLM_BASE_URL: ' http://127.0.0.1:8080/v1/ ', LOG_LEVEL: 'debug', TTS_ENGINE: '' });
    expect(config.host).toBe('127.0.0.1');
    expect(config.llm.baseUrl).toBe('http://127.0.0.1:8080/v1');
    expect(config.logLevel).toBe('debug');
    expect(config.speech.engine).toBe('espeak');
  });

  it('gives the HTTP server limits, and refuses out-of-range ones by name', () => {
    expect(parseConfig({}).httpLimits).toEqual({ headersTimeoutMs: 20_000, requestTimeoutMs: 120_000, bodyIdleTimeoutMs: 20_000, keepAliveTimeoutMs: 5_000, maxConnections: 1_000 });
    expect(parseConfig({ HTTP_MAX_CONNECTIONS: '50' }).httpLimits.maxConnections).toBe(50);
    expect(() => parseConfig({ HTTP_MAX_CONNECTIONS: '0', HTTP_REQUEST_TIMEOUT_MS: 'soon' })).toThrow(/HTTP_MAX_CONNECTIONS[\s\S]*HTTP_REQUEST_TIMEOUT_MS|HTTP_REQUEST_TIMEOUT_MS[\s\S]*HTTP_MAX_CONNECTIONS/);
  });

  it('keeps the .env.example and the schema in step: every variable is listed', async () => {
    const { readFile } = await import('node:fs/promises');
    const example = await readFile(path.resolve(import.meta.dirname, '../../.env.example'), 'utf8');
    const listed = new Set([...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]));
    const { configVariables } = await import('../../src/config.js');
    expect(configVariables.filter((name) => !listed.has(name))).toEqual([]);
  });
});
