import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type Harness, readEvents, startHarness } from './harness.js';

type Person = { id: string; characterId: string; key: string };

const isChat = (request: { path: string; body: FakeRequestBody }) =>
  request.path.endsWith('/chat/completions') && !String(request.body.messages?.[0]?.content).includes('running summary');

/** Each character answers with its own name, read from the system prompt the fake receives. */
function answerAsYourself(body: FakeRequestBody) {
  const system = String(body.messages?.[0]?.content ?? '');
  const name = /^You are ([^.]+)\./.exec(system)?.[1] ?? 'nobody';
  return { reply: `${name} speaking.` };
}

describe('a scene: several characters in one conversation, over HTTP', () => {
  let api: Harness;
  let alice: Person;
  let bob: Person;
  let carol: Person;
  let route: string;

  beforeAll(async () => {
    api = await startHarness({ script: answerAsYourself });
    [alice, bob, carol] = await Promise.all([api.account('scene-alice'), api.account('scene-bob'), api.account('scene-carol')]);
    await api.call('PATCH', `/api/v0/characters/${alice.characterId}`, { key: alice.key, body: { name: 'Alice' } });
    await api.call('PATCH', `/api/v0/characters/${bob.characterId}`, { key: bob.key, body: { name: 'Bob', is_public: true } });
    await api.call('PATCH', `/api/v0/characters/${carol.characterId}`, { key: carol.key, body: { name: 'Carol' } });
    await api.call('POST', `/api/v0/characters/${alice.characterId}/memories`, { key: alice.key, body: { text: 'Alice hid the key under the mat.' } });
    await api.call('POST', `/api/v0/characters/${bob.characterId}/memories`, { key: bob.key, body: { text: 'Bob owes the baker ten coins.' } });
    const created = await api.call('POST', '/api/v0/conversations', { key: alice.key, body: { characterId: alice.characterId } });
    route = `/api/v0/conversations/${created.body.id}`;
  });
  afterAll(async () => {
    await api?.close();
  });

  const characterSpeakers = (body: { speakers: { id: string; name: string; type: string }[] }) =>
    body.speakers.filter((speaker) => speaker.type === 'character').map((speaker) => speaker.name);

  it('adds a public character once, and lists both characters in speakers', async () => {
    const added = await api.call('POST', `${route}/speakers`, { key: alice.key, body: { characterId: bob.characterId } });
    expect(added.status).toBe(200);
    expect(characterSpeakers(added.body.conversation)).toEqual(['Alice', 'Bob']);
    expect(added.body.conversation.speakers.map((speaker: { type: string }) => speaker.type)).toEqual(['account', 'character', 'character']);
    const again = await api.call('POST', `${route}/speakers`, { key: alice.key, body: { characterId: bob.characterId } });
    expect(characterSpeakers(again.body.conversation)).toEqual(['Alice', 'Bob']);
    expect(characterSpeakers((await api.call('GET', route, { key: alice.key })).body)).toEqual(['Alice', 'Bob']);
    const listed = await api.call('GET', '/api/v0/conversations', { key: alice.key });
    expect(characterSpeakers(listed.body.conversations[0])).toEqual(['Alice', 'Bob']);
  });

  it("refuses another account's private character, and a body naming neither account nor character", async () => {
    const refused = await api.call('POST', `${route}/speakers`, { key: alice.key, body: { characterId: carol.characterId } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    expect((await api.call('POST', `${route}/speakers`, { key: alice.key, body: {} })).status).toBe(400);
    // Someone outside the conversation cannot add to it.
    expect((await api.call('POST', `${route}/speakers`, { key: bob.key, body: { characterId: bob.characterId } })).status).toBe(404);
  });

  it('answers as the conversation\'s own character by default, and as the chosen one with characterId', async () => {
    const first = await api.call('POST', `${route}/chat`, { key: alice.key, body: { data: 'Hello, both of you.' } });
    expect(first.status).toBe(200);
    expect(first.body.data).toBe('Alice speaking.');

    const second = await api.call('POST', `${route}/chat`, { key: alice.key, body: { data: 'Bob, what do you think?', characterId: bob.characterId } });
    expect(second.body.data).toBe('Bob speaking.');
    const prompt = api.llm.requests.filter(isChat).at(-1)!.body.messages!;
    const system = String(prompt[0]!.content);
    expect(prompt[0]!.role).toBe('system');
    expect(system).toMatch(/^You are Bob\./);
    expect(system).toContain('Bob owes the baker ten coins.');
    expect(system).not.toContain('Alice hid the key');
    expect(system).toContain('Also in this scene: Alice.');
    // Alice's line is a user turn headed by her name; Bob has no earlier line, so no assistant turn.
    expect(prompt.slice(1).map((message) => message.role)).toEqual(['user']);
    const turn = String(prompt[1]!.content);
    expect(turn).toContain('Alice: Alice speaking.');
    expect(turn).toContain('scene-alice: Bob, what do you think?');

    const read = (await api.call('GET', route, { key: alice.key })).body;
    const replies = read.messages.filter((message: { participant_type: string }) => message.participant_type === 'character');
    expect(replies.map((message: { participant_id: string }) => message.participant_id)).toEqual([alice.characterId, bob.characterId]);
  });

  it("gives Alice her own lines as assistant turns and Bob's as named user turns, streamed too", async () => {
    const response = await fetch(`${api.url}${route}/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'Alice, your turn.' }),
    });
    expect(response.status).toBe(200);
    expect((await readEvents(response)).at(-1)).toBe('[DONE]');
    const prompt = api.llm.requests.filter(isChat).at(-1)!.body.messages!;
    expect(String(prompt[0]!.content)).toContain('Alice hid the key under the mat.');
    expect(String(prompt[0]!.content)).not.toContain('Bob owes');
    expect(prompt.slice(1).map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(prompt[2]).toEqual({ role: 'assistant', content: 'Alice speaking.' });
    expect(String(prompt[3]!.content)).toContain('Bob: Bob speaking.');
  });

  it('keeps the character who wrote a reply when it is regenerated', async () => {
    await api.call('POST', `${route}/chat`, { key: alice.key, body: { data: 'Bob again?', characterId: bob.characterId } });
    const again = await api.call('POST', `${route}/regenerate`, { key: alice.key, body: {} });
    expect(again.status).toBe(200);
    expect(again.body.data).toBe('Bob speaking.');
    const last = (await api.call('GET', route, { key: alice.key })).body.messages.at(-1);
    expect(last.participant_id).toBe(bob.characterId);
  });

  it('speaks a regenerated reply in the voice of the character who writes it, and asks that one for a voice first', async () => {
    // The last reply is Bob's, and Bob has no voice yet: refused before anything is written.
    const chats = api.llm.requests.filter(isChat).length;
    const refused = await api.call('POST', `${route}/regenerate`, { key: alice.key, body: { allow: ['audio/mp3'] } });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'VOICE_NOT_TRAINED', message: expect.stringContaining('Bob has no voice') });
    expect(api.llm.requests.filter(isChat)).toHaveLength(chats);
    const voices = await api.call('GET', '/api/v0/voices', { key: bob.key });
    expect((await api.call('POST', `/api/v0/characters/${bob.characterId}/voice`, { key: bob.key, body: { voiceId: voices.body.voices[0].id } })).status).toBe(200);
    // Alice, the conversation's own character, still has none: Bob's voice is the one that counts.
    const spoken = await api.call('POST', `${route}/regenerate`, { key: alice.key, body: { allow: ['audio/mp3'] } });
    expect(spoken.status).toBe(200);
    expect(spoken.body.mimeType).toBe('audio/mp3');
    expect(Buffer.from(spoken.body.data, 'base64').byteLength).toBeGreaterThan(1000);
    const last = (await api.call('GET', route, { key: alice.key })).body.messages.at(-1);
    expect(last).toMatchObject({ participant_id: bob.characterId, content: 'Bob speaking.' });
  });

  it('refuses a character not in the scene with a stable code, storing nothing', async () => {
    const before = (await api.call('GET', route, { key: alice.key })).body.messages.length;
    const chats = api.llm.requests.filter(isChat).length;
    const refused = await api.call('POST', `${route}/chat`, { key: alice.key, body: { data: 'Carol?', characterId: carol.characterId } });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('CHARACTER_NOT_IN_CONVERSATION');
    const streamed = await api.call('POST', `${route}/chat/stream`, { key: alice.key, body: { data: 'Carol?', characterId: carol.characterId } });
    expect(streamed.body.error.code).toBe('CHARACTER_NOT_IN_CONVERSATION');
    expect((await api.call('GET', route, { key: alice.key })).body.messages).toHaveLength(before);
    expect(api.llm.requests.filter(isChat)).toHaveLength(chats);
  });

  it('takes a character out, never the main one; its lines stay, named, in later prompts', async () => {
    const main = await api.call('DELETE', `${route}/speakers/${alice.characterId}`, { key: alice.key });
    expect(main.status).toBe(409);
    expect(main.body.error.code).toBe('MAIN_CHARACTER_REQUIRED');
    const removed = await api.call('DELETE', `${route}/speakers/${bob.characterId}`, { key: alice.key });
    expect(removed.status).toBe(200);
    expect(characterSpeakers(removed.body.conversation)).toEqual(['Alice']);
    expect(characterSpeakers((await api.call('GET', route, { key: alice.key })).body)).toEqual(['Alice']);
    const gone = await api.call('POST', `${route}/chat`, { key: alice.key, body: { data: 'Bob?', characterId: bob.characterId } });
    expect(gone.body.error.code).toBe('CHARACTER_NOT_IN_CONVERSATION');
    // The newest reply is Bob's; written again after he left, it falls to Alice rather than failing.
    expect((await api.call('POST', `${route}/regenerate`, { key: alice.key, body: {} })).body.data).toBe('Alice speaking.');
    expect((await api.call('POST', `${route}/chat`, { key: alice.key, body: { data: 'Just us now.' } })).body.data).toBe('Alice speaking.');
    const prompt = api.llm.requests.filter(isChat).at(-1)!.body.messages!;
    expect(String(prompt[0]!.content)).not.toContain('Also in this scene');
    expect(prompt.some((message) => message.role === 'user' && String(message.content).includes('Bob: Bob speaking.'))).toBe(true);
    // Taking out one who is not there changes nothing.
    expect((await api.call('DELETE', `${route}/speakers/${bob.characterId}`, { key: alice.key })).status).toBe(200);
  });
});

describe("a scene's rolling summary", () => {
  let api: Harness | undefined;
  afterAll(async () => {
    await api?.close();
  });

  it("names each character's lines, and the summary serves both", async () => {
    api = await startHarness({
      environment: { LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' },
      script: (body) => (String(body.messages?.[0]?.content).includes('running summary') ? { reply: 'Alice and Bob argued about boats.' } : answerAsYourself(body)),
    });
    const harness = api;
    const [host, guest] = await Promise.all([harness.account('summary-host'), harness.account('summary-guest')]);
    await harness.call('PATCH', `/api/v0/characters/${host.characterId}`, { key: host.key, body: { name: 'Alice' } });
    await harness.call('PATCH', `/api/v0/characters/${guest.characterId}`, { key: guest.key, body: { name: 'Bob', is_public: true } });
    const created = await harness.call('POST', '/api/v0/conversations', { key: host.key, body: { characterId: host.characterId } });
    const route = `/api/v0/conversations/${created.body.id}`;
    await harness.call('POST', `${route}/speakers`, { key: host.key, body: { characterId: guest.characterId } });
    for (let index = 0; index < 24; index++) {
      const characterId = index % 2 === 0 ? host.characterId : guest.characterId;
      const answer = await harness.call('POST', `${route}/chat`, { key: host.key, body: { data: `Tale ${index}: ${'the boat sailed to the lighthouse '.repeat(2)}`, characterId } });
      expect(answer.status).toBe(200);
    }
    let summary: string | null = null;
    for (let attempt = 0; attempt < 50 && summary === null; attempt++) {
      summary = (await harness.call('GET', route, { key: host.key })).body.summary;
      if (summary === null) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(summary).toBe('Alice and Bob argued about boats.');
    const request = harness.llm.requests.find((each) => String(each.body.messages?.[0]?.content).includes('running summary'))!;
    const [instruction, lines] = request.body.messages!.map((message) => String(message.content));
    expect(instruction).toContain('between Alice and Bob and the people');
    expect(lines).toContain('Alice: Alice speaking.');
    expect(lines).toContain('Bob: Bob speaking.');
    await harness.call('POST', `${route}/chat`, { key: host.key, body: { data: 'And then?', characterId: guest.characterId } });
    const system = String(harness.llm.requests.filter(isChat).at(-1)!.body.messages![0]!.content);
    expect(system).toMatch(/^You are Bob\./);
    expect(system).toContain('Alice and Bob argued about boats.');
  });
});
