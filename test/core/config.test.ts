import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';

describe('parseConfig', () => {
  it('gives the documented defaults', () => {
    const config = parseConfig({}, '/srv/app');
    expect(config.port).toBe(3000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.publicBaseUrl).toBe('http://localhost:3000');
    expect(config.dataDir).toBe('/srv/app/data');
    expect(config.storeUrl).toBe(`sqlite://${path.join('/srv/app/data', 'likeness.sqlite')}`);
    expect(config.llm.baseUrl).toBe('http://127.0.0.1:11434/v1');
    expect(config.llm.contextTokens).toBe(8192);
    expect(config.startingBalance).toBe(100);
    expect(config.embeddingsModel).toBeUndefined();
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

  it('refuses a reply budget as large as the context', () => {
    expect(() => parseConfig({ LLM_CONTEXT_TOKENS: '1024', LLM_MAX_REPLY_TOKENS: '1024' })).toThrow(/LLM_MAX_REPLY_TOKENS/);
  });
});
