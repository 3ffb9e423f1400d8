import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

describe('the prompt fits the engine and keeps the newest message', () => {
  let api: Harness | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  async function open(environment: Record<string, string>) {
    api = await startHarness({ environment });
    const person = await api.account('fitter');
    const created = await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
    return { harness: api, person, id: created.body.id as string };
  }

  it('refuses, before storing it, a message that cannot fit the context even alone, and says the limit in characters', async () => {
    const { harness, person, id } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' });
    const answer = await harness.call('POST', `/api/v0/conversations/${id}/chat`, { key: person.key, body: { data: 'word '.repeat(300).trim() } });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('VALIDATION_FAILED');
    expect(answer.body.error.message).toMatch(/at most about \d+ characters/);
    expect(harness.llm.requests.filter((request) => request.path.endsWith('/chat/completions'))).toHaveLength(0);
    const read = await harness.call('GET', `/api/v0/conversations/${id}`, { key: person.key });
    expect(read.body.messages).toEqual([]);
  });

  it('always sends the newest message, dropping older history instead', async () => {
    const { harness, person, id } = await open({ LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' });
    for (let index = 0; index < 3; index++) {
      await harness.call('POST', `/api/v0/conversations/${id}/chat`, { key: person.key, body: { data: `Earlier ${index}: ${'talk '.repeat(40)}` } });
    }
    const long = `Newest: ${'story '.repeat(130)}`.trim();
    const answer = await harness.call('POST', `/api/v0/conversations/${id}/chat`, { key: person.key, body: { data: long } });
    expect(answer.status).toBe(200);
    const sent = harness.llm.requests.at(-1)!.body.messages!;
    expect(sent.at(-1)).toEqual({ role: 'user', content: long });
  });
});
