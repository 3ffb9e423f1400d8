import { PNG } from 'pngjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakePromptTokens } from '../fakes/fake-openai.js';
import { type Harness, adminKey, readEvents, startHarness } from './harness.js';

const isoMicros = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

describe('conversations API', () => {
  let api: Harness;
  let user: { id: string; characterId: string; key: string };

  async function conversation(key = user.key, characterId = user.characterId): Promise<string> {
    const created = await api.call('POST', '/api/v0/conversations', { key, body: { characterId } });
    expect(created.status).toBe(201);
    return created.body.id;
  }

  function stream(conversationId: string, body: unknown, key = user.key, signal?: AbortSignal): Promise<Response> {
    return fetch(`${api.url}/api/v0/conversations/${conversationId}/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  }

  /** Starts a streamed chat, reads its first piece, and hangs up. */
  async function startAndLeave(conversationId: string, data: string): Promise<void> {
    const controller = new AbortController();
    const response = await stream(conversationId, { data }, user.key, controller.signal);
    await response.body!.getReader().read();
    controller.abort();
  }

  beforeAll(async () => {
    api = await startHarness();
    user = await api.account('talker');
  });
  beforeEach(() => {
    api.llm.setScript({});
  });
  afterAll(async () => {
    await api.close();
  });

  it('creates, lists and reads conversations in the spec shape', async () => {
    const id = await conversation();
    const list = await api.call('GET', '/api/v0/conversations', { key: user.key });
    expect(list.status).toBe(200);
    expect(list.body.success).toBe(true);
    const listed = list.body.conversations.find((entry: { id: string }) => entry.id === id);
    expect(listed).toBeDefined();
    expect(listed.messages).toBeUndefined();
    expect(listed.created).toMatch(isoMicros);
    expect(listed.updated).toMatch(isoMicros);
    expect(listed.speakers).toHaveLength(2);
    expect(listed.speakers[0]).toEqual({ id: user.id, name: 'talker', type: 'account', avatarUrl: null });
    expect(listed.speakers[1]).toMatchObject({ id: user.characterId, name: 'talker', type: 'character' });
    expect(listed.speakers[1].avatarUrl).toMatch(/\/files\/.+signature=/);
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body).toEqual({ ...listed, summary: null, messages: [] });
  });

  it('refuses a character the account may not see, and other people’s conversations', async () => {
    const other = await api.account('other-talker');
    const refused = await api.call('POST', '/api/v0/conversations', { key: user.key, body: { characterId: other.characterId } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('characterId');
    const theirs = await conversation(other.key, other.characterId);
    expect((await api.call('GET', `/api/v0/conversations/${theirs}`, { key: user.key })).status).toBe(404);
    expect((await api.call('POST', `/api/v0/conversations/${theirs}/chat`, { key: user.key, body: { data: 'hi' } })).status).toBe(404);
    expect((await api.call('POST', '/api/v0/conversations/not-a-uuid/chat', { key: user.key, body: { data: 'hi' } })).status).toBe(400);
  });

  it('answers a synchronous chat and stores both messages, oldest first', async () => {
    api.llm.setScript({ reply: 'Ahoy there, friend.' });
    const id = await conversation();
    const answer = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'Hello!', mimeType: 'text/plain', allow: ['text/plain'] } });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: 'Ahoy there, friend.', mimeType: 'text/plain', finishReason: 'stop' });
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    const messages = read.body.messages;
    expect(messages.map((message: { content: string }) => message.content)).toEqual(['Hello!', 'Ahoy there, friend.']);
    expect(messages[0]).toMatchObject({ mimetype: 'text/plain', participant_id: user.id, participant_type: 'account' });
    expect(messages[1]).toMatchObject({ mimetype: 'text/plain', participant_id: user.characterId, participant_type: 'character' });
    expect(Object.keys(messages[0]).sort()).toEqual(['content', 'created', 'id', 'mimetype', 'participant_id', 'participant_type', 'swipe_index', 'swipes']);
    expect(messages[0].created < messages[1].created).toBe(true);
    expect(read.body.updated).toBe(messages[1].created);
    // The engine got a system prompt naming the character, then the user's message.
    const sent = api.llm.requests.at(-1)!.body;
    expect(sent.model).toBe('fake-model');
    expect(sent.messages![0]!.role).toBe('system');
    expect(String(sent.messages![0]!.content)).toContain('You are talker');
    expect(sent.messages!.at(-1)).toEqual({ role: 'user', content: 'Hello!' });
  });

  it('streams the spec chunk objects, ending with stop and [DONE]', async () => {
    api.llm.setScript({ tokens: ['Once ', 'upon ', 'a ', 'time.'], tokensPerSecond: 200, flavor: 'llama-server' });
    const id = await conversation();
    const response = await stream(id, { data: 'Tell me a story' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readEvents(response);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event));
    const ids = new Set(chunks.map((chunk) => chunk.id));
    expect(ids.size).toBe(1);
    for (const chunk of chunks) {
      expect(Object.keys(chunk).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'system_fingerprint']);
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.system_fingerprint).toBeNull();
      expect(chunk.model).toBe('fake-model');
      expect(Number.isInteger(chunk.created)).toBe(true);
      expect(Math.abs(chunk.created - Date.now() / 1000)).toBeLessThan(30);
      expect(chunk.choices).toHaveLength(1);
      expect(chunk.choices[0].index).toBe(0);
      expect(typeof chunk.choices[0].delta.content).toBe('string');
    }
    expect(chunks.slice(0, -1).every((chunk) => chunk.choices[0].finish_reason === null)).toBe(true);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    expect(chunks.map((chunk) => chunk.choices[0].delta.content).join('')).toBe('Once upon a time.');
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages.map((message: { content: string }) => message.content)).toEqual(['Tell me a story', 'Once upon a time.']);
  });

  it('hides <think> reasoning from the reply and the stored message', async () => {
    api.llm.setScript({ tokens: ['<thi', 'nk>The user greets; ', 'be warm.</think>', 'Hi ', 'there!'] });
    const id = await conversation();
    const events = await readEvents(await stream(id, { data: 'hey' }));
    const text = events.slice(0, -1).map((event) => JSON.parse(event).choices[0].delta.content).join('');
    expect(text).toBe('Hi there!');
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages[1].content).toBe('Hi there!');
  });

  it('keeps the user message and stores no reply when the engine fails before or during the reply', async () => {
    const id = await conversation();
    api.llm.setScript({ failure: { kind: 'http', status: 503, message: 'model is loading' } });
    const before = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'first try' } });
    expect(before.status).toBe(503);
    expect(before.body.error.code).toBe('ENGINE_UNAVAILABLE');
    expect(before.body.error.message).toBe('The chat engine cannot be reached right now. Try again in a minute; if it lasts, tell the operator.');

    api.llm.setScript({ tokens: ['Half ', 'a ', 'reply'], failure: { kind: 'error-event', message: 'out of memory', afterTokens: 2 } });
    const events = await readEvents(await stream(id, { data: 'second try' }));
    expect(events).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!);
    expect(last.success).toBe(false);
    expect(last.error.message).toBe('The chat engine failed to answer. Try again; if it keeps failing, tell the operator.');
    expect(events.slice(0, -1).map((event) => JSON.parse(event).choices[0].delta.content).join('')).toBe('Half a ');

    api.llm.setScript({ tokens: ['Cut ', 'off'], failure: { kind: 'drop', afterTokens: 1 } });
    // The dropped socket may take the first token with it: then nothing was answered and the
    // failure is a plain error answer; otherwise it ends the stream as an error event.
    const droppedResponse = await stream(id, { data: 'third try' });
    const dropped = droppedResponse.status === 200 ? await readEvents(droppedResponse) : [await droppedResponse.text()];
    expect(JSON.parse(dropped.at(-1)!).error.code).toBe('ENGINE_FAILED');

    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages.map((message: { content: string }) => message.content)).toEqual(['first try', 'second try', 'third try']);
  });

  it('says when the engine hangs or is down', async () => {
    const id = await conversation();
    api.llm.setScript({ failure: { kind: 'stall', afterTokens: 1 }, tokens: ['slow ', 'and ', 'stuck'] });
    const stalled = await api.call('POST', `/api/v0/conversations/${id}/chat/stream`, { key: user.key, body: { data: 'anyone?' } });
    expect(stalled.status).toBe(200);
    expect(String(stalled.body)).toContain('ENGINE_TIMEOUT');
    api.llm.setScript({ failure: { kind: 'hang' } });
    const hung = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'hello?' } });
    expect(hung.status).toBe(502);
    expect(hung.body.error.code).toBe('ENGINE_TIMEOUT');
  });

  it('sends image messages to the engine as image parts and serves them back', async () => {
    const image = new PNG({ width: 4, height: 4 });
    image.data.fill(90);
    const bytes = PNG.sync.write(image);
    const id = await conversation();
    api.llm.setScript({ reply: 'A grey square.' });
    const answer = await api.call('POST', `/api/v0/conversations/${id}/chat`, {
      key: user.key,
      body: { data: `data:image/png;base64,${bytes.toString('base64')}`, mimeType: 'image/png' },
    });
    expect(answer.status).toBe(200);
    const sent = api.llm.requests.at(-1)!.body.messages!.at(-1)!;
    expect(sent.role).toBe('user');
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    const stored = read.body.messages[0];
    expect(stored.mimetype).toBe('image/png');
    // Re-encoded at ingest; the engine gets exactly the stored image.
    const storedBytes = Buffer.from(await (await fetch(stored.content)).arrayBuffer());
    expect(PNG.sync.read(storedBytes)).toMatchObject({ width: 4, height: 4 });
    expect(sent.content).toEqual([{ type: 'image_url', image_url: { url: `data:image/png;base64,${storedBytes.toString('base64')}` } }]);
    const lying = await api.call('POST', `/api/v0/conversations/${id}/chat`, {
      key: user.key,
      body: { data: Buffer.from('plain text').toString('base64'), mimeType: 'image/png' },
    });
    expect(lying.status).toBe(415);
  });

  it('sends only the newest messages that fit the context', async () => {
    // llama-server with a 700-token slot: it refuses any prompt longer than that.
    const small = await startHarness({ script: { flavor: 'llama-server', slotContext: 700 }, environment: { LLM_CONTEXT_TOKENS: '700', LLM_MAX_REPLY_TOKENS: '200' } });
    try {
      const person = await small.account('brief');
      const created = await small.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
      const id = created.body.id;
      for (let index = 0; index < 20; index++) {
        await small.call('POST', `/api/v0/conversations/${id}/chat`, { key: person.key, body: { data: `Message ${index}: ${'words '.repeat(20)}` } });
      }
      // The last reply's prompt (a summary of earlier messages may be written after it).
      const sent = small.llm.requests.filter((request) => !String(request.body.messages?.[0]?.content).includes('running summary')).at(-1)!.body.messages!;
      // The history, not the system prompt (where a summary of early messages may stand).
      const text = JSON.stringify(sent.slice(1));
      expect(text).toContain('Message 19');
      expect(text).not.toContain('Message 0:');
      const tokens = fakePromptTokens({ messages: sent });
      expect(tokens).toBeLessThanOrEqual(700 - 200);
      expect(tokens).toBeGreaterThan(250);
    } finally {
      await small.close();
    }
  });

  it('loses and duplicates nothing when many people chat in one conversation at once', async () => {
    // Concurrent messages in a row reach the engine as one merged user turn; reply to the newest line of it.
    api.llm.setScript((body) => {
      const lastTurn = JSON.stringify(body.messages?.at(-1)?.content ?? '');
      return { reply: `re: ${[...lastTurn.matchAll(/parallel \d+/g)].at(-1)?.[0]}`, tokensPerSecond: 500 };
    });
    const id = await conversation();
    const count = 20;
    const answers = await Promise.all(
      Array.from({ length: count }, (_, index) =>
        index % 2 === 0
          ? api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: `parallel ${index}` } })
          : stream(id, { data: `parallel ${index}` }).then(async (response) => ({ status: response.status, body: await response.text() })),
      ),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    const messages: { id: string; content: string; participant_type: string; created: string }[] = read.body.messages;
    expect(messages).toHaveLength(count * 2);
    expect(new Set(messages.map((message) => message.id)).size).toBe(count * 2);
    const sent = messages.filter((message) => message.participant_type === 'account').map((message) => message.content);
    expect(sent.sort()).toEqual(Array.from({ length: count }, (_, index) => `parallel ${index}`).sort());
    // Each message was answered once, and each answer saw its own message last.
    const replies = messages.filter((message) => message.participant_type === 'character').map((message) => message.content);
    expect(replies.sort()).toEqual(sent.map((text) => `re: ${text}`).sort());
    const created = messages.map((message) => message.created);
    expect([...created].sort()).toEqual(created);
    expect(new Set(created).size).toBe(created.length);
  });

  it('lets several people share a conversation, each a speaker named to the engine', async () => {
    const friend = await api.account('friend');
    const outsider = await api.account('outsider');
    const id = await conversation();
    expect((await api.call('POST', `/api/v0/conversations/${id}/speakers`, { key: outsider.key, body: { accountId: outsider.id } })).status).toBe(404);
    // The friend is invited, and speaks once they accept.
    expect((await api.call('POST', `/api/v0/conversations/${id}/speakers`, { key: user.key, body: { accountId: friend.id } })).status).toBe(202);
    const added = await api.call('POST', `/api/v0/conversations/${id}/speakers`, { key: friend.key, body: { accountId: friend.id } });
    expect(added.status).toBe(200);
    expect(added.body.conversation.speakers.map((speaker: { name: string; type: string }) => `${speaker.type}:${speaker.name}`)).toEqual([
      'account:talker',
      'account:friend',
      'character:talker',
    ]);
    const missing = await api.call('POST', `/api/v0/conversations/${id}/speakers`, { key: user.key, body: { accountId: '00000000-0000-4000-8000-000000000000' } });
    expect(missing.status).toBe(400);
    api.llm.setScript({ reply: 'Hello to you both.' });
    await Promise.all([
      api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'I am here' } }),
      api.call('POST', `/api/v0/conversations/${id}/chat`, { key: friend.key, body: { data: 'Me too' } }),
    ]);
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: friend.key });
    expect(read.status).toBe(200);
    const authors = read.body.messages.filter((message: { participant_type: string }) => message.participant_type === 'account');
    expect(authors.map((message: { participant_id: string }) => message.participant_id).sort()).toEqual([user.id, friend.id].sort());
    const lastPrompt = JSON.stringify(api.llm.requests.at(-1)!.body.messages);
    expect(lastPrompt).toMatch(/(talker: I am here|friend: Me too)/);
    const listed = await api.call('GET', '/api/v0/conversations', { key: friend.key });
    expect(listed.body.conversations.map((entry: { id: string }) => entry.id)).toContain(id);
  });

  it('stops generating when the client leaves: the engine request ends, the message is kept, no half reply is stored', async () => {
    api.llm.setScript({ tokens: Array.from({ length: 200 }, (_, index) => `word${index} `), tokensPerSecond: 20 });
    const id = await conversation();
    await startAndLeave(id, 'go');
    // The engine's request is closed by us, long before its 200 tokens are out.
    expect(await api.llm.requests.at(-1)!.outcome).toBe('client-closed');
    await expect.poll(async () => (await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key })).body.messages.map((message: { content: string }) => message.content)).toEqual(['go']);
    // The message can be answered again.
    api.llm.setScript({ reply: 'Back again.' });
    const again = await api.call('POST', `/api/v0/conversations/${id}/regenerate`, { key: user.key, body: {} });
    expect(again.body.data).toBe('Back again.');
  });

  it('stops a synchronous chat whose client hangs up', async () => {
    // The engine takes its time: the client leaves first.
    api.llm.setScript({ failure: { kind: 'hang' } });
    const id = await conversation();
    const controller = new AbortController();
    const request = fetch(`${api.url}/api/v0/conversations/${id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'take your time' }),
      signal: controller.signal,
    }).catch(() => undefined);
    await expect.poll(() => api.llm.requests.length > 0 && api.llm.requests.at(-1)!.body.messages?.at(-1)?.content === 'take your time').toBe(true);
    controller.abort();
    await request;
    expect(await api.llm.requests.at(-1)!.outcome).toBe('client-closed');
  });

  it('finishes and stores replies still being written when the service stops', async () => {
    api.llm.setScript({ tokens: ['written ', 'during ', 'shutdown.'], tokensPerSecond: 10 });
    const id = await conversation();
    const response = await stream(id, { data: 'keep going' });
    const reading = response.text();
    await api.restart();
    expect(await reading).toContain('shutdown.');
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages.map((message: { content: string }) => message.content)).toEqual(['keep going', 'written during shutdown.']);
  });

  it('clears a conversation', async () => {
    const id = await conversation();
    await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'remember me' } });
    const cleared = await api.call('POST', `/api/v0/conversations/${id}/clear`, { key: user.key });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ success: 'true' });
    const read = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(read.body.messages).toEqual([]);
    await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'fresh start' } });
    const after = await api.call('GET', `/api/v0/conversations/${id}`, { key: user.key });
    expect(after.body.messages.map((message: { content: string }) => message.content)).toEqual(['fresh start', 'fresh start']);
    expect(JSON.stringify(api.llm.requests.at(-1)!.body)).not.toContain('remember me');
  });

  it('answers bad requests clearly: JSON, types, sizes, routes', async () => {
    const id = await conversation();
    const malformed = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, raw: '{"data": "oops"', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toContain('JSON');
    const wrongType = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 42 } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.details.fields[0].field).toBe('data');
    const empty = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: '   ' } });
    expect(empty.status).toBe(400);
    const unanswerable = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'hi', allow: ['image/png'] } });
    expect(unanswerable.status).toBe(400);
    expect(unanswerable.body.error.details.fields[0].field).toBe('allow');
    const audioStream = await api.call('POST', `/api/v0/conversations/${id}/chat/stream`, { key: user.key, body: { data: 'hi', allow: ['audio/mp3'] } });
    expect(audioStream.status).toBe(400);
    expect(audioStream.body.error.message).toContain('streamed replies are text');
    const unknownType = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'hi', mimeType: 'video/mp4' } });
    expect(unknownType.status).toBe(400);
    const huge = await api.call('POST', `/api/v0/conversations/${id}/chat`, { key: user.key, body: { data: 'x'.repeat(16 * 1024 * 1024) } });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    const nowhere = await api.call('GET', '/api/v0/nowhere', { key: user.key });
    expect(nowhere.status).toBe(404);
    expect(nowhere.body.error.message).toContain('/api/v0/nowhere');
    const missing = await api.call('POST', '/api/v0/conversations', { key: user.key, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.fields[0].field).toBe('characterId');
    const adminWithout = await api.call('POST', '/api/v0/conversations', { key: adminKey, body: { characterId: user.characterId } });
    expect(adminWithout.status).toBe(400);
  });

  it('limits chat requests per account with 429 and Retry-After', async () => {
    const limited = await startHarness({ environment: { API_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const person = await limited.account('hasty');
      const created = await limited.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
      const statuses: number[] = [];
      let last;
      for (let index = 0; index < 4; index++) {
        last = await limited.call('POST', `/api/v0/conversations/${created.body.id}/chat`, { key: person.key, body: { data: `hi ${index}` } });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect(last!.body.error.code).toBe('RATE_LIMITED');
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });

  it('reports that the engine is unreachable with 503', async () => {
    const down = await startHarness({ environment: { LLM_BASE_URL: 'http://127.0.0.1:9/v1' } });
    try {
      const person = await down.account('lonely');
      const created = await down.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
      const answer = await down.call('POST', `/api/v0/conversations/${created.body.id}/chat`, { key: person.key, body: { data: 'hello?' } });
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('ENGINE_UNAVAILABLE');
      const read = await down.call('GET', `/api/v0/conversations/${created.body.id}`, { key: person.key });
      expect(read.body.messages.map((message: { content: string }) => message.content)).toEqual(['hello?']);
    } finally {
      await down.close();
    }
  });
});
