import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../fakes/fake-openai.js';
import { waitUntilServing } from '../e2e/service-processes.js';
import { onFreePort } from '../support/ports.js';

const root = path.resolve(import.meta.dirname, '../..');

function run(environment: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH, ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('start-up (src/main.ts as npm start runs it)', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('stops at once naming every invalid variable', async () => {
    const started = run({ PORT: 'eighty', LLM_BASE_URL: 'not a url', STORE_URL: 'mysql://x' });
    expect(await started.exited).toBe(2);
    expect(started.output()).toContain('PORT');
    expect(started.output()).toContain('LLM_BASE_URL');
    expect(started.output()).toContain('STORE_URL');
  });

  it('serves on the defaults, keeps a generated signing secret, and stops cleanly on SIGTERM', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'likeness-start-'));
    const llm = await startFakeOpenAI({ script: { reply: 'Hello from the engine.' } });
    cleanups.push(() => llm.close(), () => rm(dataDir, { recursive: true, force: true }));
    const { port, started } = await onFreePort(async (port) => {
      const started = run({ PORT: String(port), DATA_DIR: dataDir, LLM_BASE_URL: llm.baseURL, ADMIN_API_KEY: 'admin-key-for-start-up-test' });
      try {
        await waitUntilServing({ name: 'start-up', url: `http://127.0.0.1:${port}`, ...started });
      } catch (error) {
        started.child.kill('SIGKILL');
        throw error;
      }
      return { port, started };
    });
    cleanups.push(async () => started.child.kill('SIGKILL'));
    const created = await fetch(`http://127.0.0.1:${port}/api/v0/accounts`, {
      method: 'POST',
      headers: { authorization: 'Bearer admin-key-for-start-up-test', 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'starter' }),
    });
    expect(created.status).toBe(201);
    const secret = await readFile(path.join(dataDir, 'url-signing-secret'), 'utf8');
    expect(secret.trim().length).toBeGreaterThanOrEqual(32);
    await expect(readFile(path.join(dataDir, 'likeness.sqlite'))).resolves.toBeInstanceOf(Buffer);
    const log = started.output();
    expect(log).toContain('Likeness API listening');
    expect(log).not.toContain('admin-key-for-start-up-test');
    // node:sqlite's warning on every start told operators nothing they could act on.
    expect(log).not.toContain('ExperimentalWarning');
    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
  });
});
