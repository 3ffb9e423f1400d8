import { afterEach, describe, expect, it } from 'vitest';
import type { FakeScriptSource } from '../fakes/fake-openai.js';
import { type Harness, startHarness } from './harness.js';

/** A character with many filler memories and one that matters, and a question about it. */
async function askAboutMarguerite(api: Harness): Promise<{ system: string; key: string; conversationId: string }> {
  const person = await api.account('rememberer');
  const facts = [
    ...Array.from({ length: 25 }, (_, index) => `Filler fact ${index} about gardening tools`),
    'My sister Marguerite lives in Lisbon',
    ...Array.from({ length: 15 }, (_, index) => `Filler fact ${index + 25} about cooking pasta`),
  ];
  for (const text of facts) {
    const added = await api.call('POST', `/api/v0/characters/${person.characterId}/memories`, { key: person.key, body: { text } });
    expect(added.status).toBe(201);
  }
  const created = await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
  const answer = await api.call('POST', `/api/v0/conversations/${created.body.id}/chat`, {
    key: person.key,
    body: { data: 'Where does my sister Marguerite live?' },
  });
  expect(answer.status).toBe(200);
  const chat = api.llm.requests.filter((request) => request.path.endsWith('/chat/completions')).at(-1)!;
  return { system: String(chat.body.messages![0]!.content), key: person.key, conversationId: created.body.id };
}

describe('memories in the system prompt', () => {
  let api: Harness | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it('ranks memories by embeddings when EMBEDDINGS_MODEL is set', async () => {
    api = await startHarness({ environment: { EMBEDDINGS_MODEL: 'fake-embed' } });
    const { system, key, conversationId } = await askAboutMarguerite(api);
    expect(system).toContain('My sister Marguerite lives in Lisbon');
    expect(system.match(/Filler fact/g)!.length).toBe(11);
    const embeddings = () => api!.llm.requests.filter((request) => request.path.endsWith('/embeddings'));
    expect(embeddings()).toHaveLength(1);
    expect(embeddings()[0]!.body.model).toBe('fake-embed');
    expect(embeddings()[0]!.body.input).toHaveLength(42); // the question and the 41 memories
    // Memory vectors are kept: the next message embeds only the question.
    await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key, body: { data: 'And what about pasta?' } });
    expect(embeddings()).toHaveLength(2);
    expect(embeddings()[1]!.body.input).toHaveLength(1);
  });

  it('falls back to ranking by words when the embeddings engine fails', async () => {
    const script: FakeScriptSource = (_body, path) =>
      path.endsWith('/embeddings') ? { failure: { kind: 'http', status: 500, message: 'embeddings are down' } } : {};
    api = await startHarness({ script, environment: { EMBEDDINGS_MODEL: 'fake-embed' } });
    const { system } = await askAboutMarguerite(api);
    expect(system).toContain('My sister Marguerite lives in Lisbon');
    expect(system.match(/Filler fact/g)!.length).toBe(11);
  });

  it('ranks by words by default, and sends every memory when there are few', async () => {
    api = await startHarness();
    const { system } = await askAboutMarguerite(api);
    expect(system).toContain('My sister Marguerite lives in Lisbon');
    expect(api.llm.requests.some((request) => request.path.endsWith('/embeddings'))).toBe(false);
    const few = await api.account('few');
    await api.call('POST', `/api/v0/characters/${few.characterId}/memories`, { key: few.key, body: { text: 'Hates rain' } });
    const created = await api.call('POST', '/api/v0/conversations', { key: few.key, body: { characterId: few.characterId } });
    await api.call('POST', `/api/v0/conversations/${created.body.id}/chat`, { key: few.key, body: { data: 'Hello' } });
    const chat = api.llm.requests.filter((request) => request.path.endsWith('/chat/completions')).at(-1)!;
    expect(String(chat.body.messages![0]!.content)).toContain('- Hates rain');
  });
});
