import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.js';
import { type FakeCog, startFakeCog } from '../fakes/images/fake-cog.js';
import { type ServiceProcess, call, startServing, stopService } from './service-processes.js';

const adminKey = 'admin-key-of-the-shutdown-test';

/**
 * SIGTERM while a reply streams and while an image job runs: the stream is finished and stored
 * before the process exits, the job is handed back and finished after a restart, and nothing
 * is charged twice or left stuck.
 */
describe('graceful shutdown on SIGTERM', () => {
  let directory: string;
  let llm: FakeOpenAI;
  let cog: FakeCog;
  let environment: Record<string, string>;
  const services: ServiceProcess[] = [];

  const start = async (name: string) => {
    const service = await startServing(name, environment);
    services.push(service);
    return service;
  };
  const terminate = async (service: ServiceProcess) => {
    const exited = once(service.child, 'exit');
    service.child.kill('SIGTERM');
    return exited;
  };

  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-shutdown-'));
    llm = await startFakeOpenAI({ script: { reply: Array.from({ length: 20 }, (_, index) => `word${index}`).join(' '), tokensPerSecond: 10 } });
    cog = await startFakeCog({ capacity: 2, steps: 10, stepMs: 200 });
    environment = {
      // One database and one secret across restarts, as a real deployment keeps them.
      STORE_URL: `sqlite://${path.join(directory, 'store.sqlite')}`,
      URL_SIGNING_SECRET: 'the-secret-that-survives-restarts',
      LLM_BASE_URL: llm.baseURL,
      ADMIN_API_KEY: adminKey,
      IMAGE_ENGINE: 'cog',
      COG_BASE_URL: cog.url,
      API_RATE_LIMIT_PER_MINUTE: '100000',
      STARTING_BALANCE: '10',
    };
  });

  afterAll(async () => {
    await Promise.all(services.map(stopService));
    await Promise.all([llm?.close(), cog?.close()]);
    await rm(directory, { recursive: true, force: true });
  });

  it('finishes and stores a reply that was streaming when SIGTERM came', async () => {
    const first = await start('streaming');
    const created = await call(first, 'POST', '/accounts', adminKey, { username: 'listener' });
    const key: string = created.body.apiKey;
    const opened = await call(first, 'POST', '/conversations', key, { characterId: created.body.account.characterId });
    const response = await fetch(`${first.url}/api/v0/conversations/${opened.body.id}/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'Tell me twenty words.' }),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    // A few words in, the process is told to stop.
    while (!text.includes('word2')) text += decoder.decode((await reader.read()).value, { stream: true });
    const exited = terminate(first);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toContain('word19');
    expect(text).toContain('data: [DONE]');
    expect(await exited).toEqual([0, null]);

    const second = await start('after-streaming');
    const read = await call(second, 'GET', `/conversations/${opened.body.id}`, key);
    expect(read.body.messages.map((message: { content: string }) => message.content)).toEqual([
      'Tell me twenty words.',
      Array.from({ length: 20 }, (_, index) => `word${index}`).join(' '),
    ]);
    await stopService(second);
  });

  it('hands a running job back on SIGTERM; the next process follows it to the end, charged once', async () => {
    const first = await start('working');
    const created = await call(first, 'POST', '/accounts', adminKey, { username: 'painter' });
    const key: string = created.body.apiKey;
    const accountId: string = created.body.account.id;
    // The engine holds the prediction halfway until released: a process that waited for it to
    // finish would never exit.
    cog.hold();
    const accepted = await call(first, 'POST', '/images', key, { prompt: 'a slow sunset', width: 64, height: 64, samples: 1 });
    expect(accepted.status).toBe(201);
    const jobId: string = accepted.body.jobId;
    await expect.poll(async () => (await call(first, 'GET', `/jobs/${jobId}`, key)).body.job.status, { timeout: 60_000, interval: 100 }).toBe('IN_PROGRESS');
    // Handed back, not awaited: the process exits while the engine is still at work.
    expect(await terminate(first)).toEqual([0, null]);
    cog.release();

    const second = await start('after-working');
    await expect.poll(async () => (await call(second, 'GET', `/jobs/${jobId}`, key)).body.job.status, { timeout: 60_000, interval: 200 }).toBe('SUCCESS');
    // Cog cancels a synchronous prediction whose client went away (the stopping process), so the
    // new holder ran it again under the same id; one run succeeded and the job was charged once.
    const runs = cog.predictions.filter((prediction) => prediction.id.includes(jobId));
    expect(runs.filter((prediction) => prediction.status === 'succeeded')).toHaveLength(1);
    expect((await call(second, 'GET', `/accounts/${accountId}/balance`, key)).body.balance).toBe(9);
  });
});
