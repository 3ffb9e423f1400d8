/**
 * llama-server serves each open connection with one of a few HTTP threads (`--threads-http`,
 * max(np + 2, cores - 1) by default), idle kept-alive ones included. The service must leave
 * the chat streams threads to run on, however many texts it counts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

describe('a llama-server with few HTTP threads', () => {
  let api: Harness | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it('answers ten streams started at once, their token counts included', async () => {
    // -np 1 on two cores: three threads; idle connections kept for as long as the test runs.
    api = await startHarness({ llm: { httpThreads: 3, keepAliveTimeoutMs: 60_000 }, script: { flavor: 'llama-server', tokens: ['Here I am.'] } });
    const harness = api;
    const person = await harness.account('crowd');
    const ids = await Promise.all(
      Array.from({ length: 10 }, async () => (await harness.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } })).body.id as string),
    );
    const answers = await Promise.all(
      ids.map(async (id, index) => {
        const response = await fetch(`${harness.url}/api/v0/conversations/${id}/chat/stream`, {
          method: 'POST',
          headers: { authorization: `Bearer ${person.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ data: `Hello number ${index}, how are you today?` }),
        });
        return { status: response.status, text: await response.text() };
      }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.text).toContain('Here I am.');
      expect(answer.text).toContain('[DONE]');
    }
    expect(harness.llm.requests.some((request) => request.path === '/tokenize')).toBe(true);
  });
});
