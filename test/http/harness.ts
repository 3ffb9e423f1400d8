import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DestinationStream } from 'pino';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/main.js';
import { type FakeOpenAI, type FakeOpenAIOptions, type FakeScriptSource, startFakeOpenAI } from '../fakes/fake-openai.js';
import { onFreePort } from '../support/ports.js';

export const adminKey = 'test-admin-key-0123456789';

export interface Harness {
  url: string;
  llm: FakeOpenAI;
  dataDir: string;
  /** Calls the API; `key` defaults to the admin key, `null` sends no Authorization. */
  call(method: string, route: string, options?: { body?: unknown; key?: string | null; raw?: RequestInit['body']; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  /** Creates an account through the API; returns it with its key. */
  account(username: string): Promise<{ id: string; characterId: string; key: string }>;
  /** Stops the service and starts it again on the same data, with `environment` changed (LEARNING=on, say). */
  restart(environment?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

/** The whole service as `npm start` wires it, on loopback, with a fake chat engine. */
export async function startHarness(
  options: {
    script?: FakeScriptSource;
    /** How the fake chat engine serves, beside its script (its HTTP threads, say). */
    llm?: Omit<FakeOpenAIOptions, 'script'>;
    environment?: Record<string, string>;
    /** Where the service logs (at info and above), for tests that read the log; silent otherwise. */
    logDestination?: DestinationStream;
  } = {},
): Promise<Harness> {
  const llm = await startFakeOpenAI({ ...options.llm, script: options.script });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'likeness-http-'));
  // Again on another port if this one was taken before the service bound it; `restart` keeps it.
  const started = await onFreePort(async (port) => {
    const environment = {
      PORT: String(port),
      // Engines on loopback fetch our signed URLs (face archives, training photos).
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      DATA_DIR: dataDir,
      ADMIN_API_KEY: adminKey,
      LLM_BASE_URL: llm.baseURL,
      LLM_MODEL: 'fake-model',
      // Learning calls the engine in the background: on only in the tests of learning.
      LEARNING: 'off',
      LLM_IDLE_TIMEOUT_MS: '1500',
      LLM_HEADERS_TIMEOUT_MS: '1500',
      LOG_LEVEL: 'silent',
      ...options.environment,
    };
    const config = parseConfig(environment);
    const logger = options.logDestination ? createLogger('info', options.logDestination) : createLogger(config.logLevel);
    return { environment, config, logger, service: await startService(config, logger) };
  });
  const { environment, config, logger } = started;
  let service: RunningService = started.service;
  const url = service.url;

  const call: Harness['call'] = async (method, route, callOptions = {}) => {
    const key = callOptions.key === undefined ? adminKey : callOptions.key;
    const headers: Record<string, string> = { ...callOptions.headers };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: RequestInit['body'] | undefined = callOptions.raw;
    if (callOptions.body !== undefined) {
      body = JSON.stringify(callOptions.body);
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(`${url}${route}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON (a file or a stream): keep the text.
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };

  return {
    url,
    llm,
    dataDir,
    call,
    async account(username) {
      const created = await call('POST', '/api/v0/accounts', { body: { username } });
      if (created.status !== 201) throw new Error(`account creation failed: ${JSON.stringify(created.body)}`);
      return { id: created.body.account.id, characterId: created.body.account.characterId, key: created.body.apiKey };
    },
    async restart(changed) {
      await service.stop();
      service = await startService(changed ? parseConfig({ ...environment, ...changed }) : config, logger);
    },
    async close() {
      await service.stop();
      await llm.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Reads a `text/event-stream` body into its `data:` payloads. */
export async function readEvents(response: Response): Promise<string[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      if (!block.startsWith('data: ')) throw new Error(`not a data event: ${JSON.stringify(block)}`);
      return block.slice('data: '.length);
    });
}
