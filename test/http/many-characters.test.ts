import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

type Person = { id: string; characterId: string; key: string };

function png(shade: number): Buffer {
  const image = new PNG({ width: 8, height: 8 });
  image.data.fill(shade);
  return PNG.sync.write(image);
}

describe('many characters per account, over HTTP', () => {
  let api: Harness;
  let maker: Person;
  let stranger: Person;
  beforeAll(async () => {
    api = await startHarness({ environment: { MAX_CHARACTERS_PER_ACCOUNT: '4' } });
    [maker, stranger] = await Promise.all([api.account('cast-maker'), api.account('cast-stranger')]);
  });
  afterAll(async () => {
    await api.close();
  });

  it('creates a character owned by the caller, with what cards define, and changes it', async () => {
    const created = await api.call('POST', '/api/v0/characters', {
      key: maker.key,
      body: { name: 'Detective Hale', scenario: 'A rainy city.', first_message: 'You again?', alternate_greetings: ['Sit down.'], tags: ['noir'], extensions: { depth_prompt: { depth: 4 } } },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`/api/v0/characters/${created.body.character.id}`);
    expect(created.body.character).toMatchObject({
      name: 'Detective Hale', account_id: maker.id, is_public: false, scenario: 'A rainy city.', first_message: 'You again?',
      alternate_greetings: ['Sit down.'], tags: ['noir'], extensions: { depth_prompt: { depth: 4 } }, nickname: '',
    });
    expect(created.body.character.avatar_url).toEqual(expect.any(String));
    const id = created.body.character.id as string;

    const changed = await api.call('PATCH', `/api/v0/characters/${id}`, { key: maker.key, body: { nickname: 'Hale', scenario: 'Still raining.' } });
    expect(changed.body).toMatchObject({ nickname: 'Hale', scenario: 'Still raining.', first_message: 'You again?', tags: ['noir'] });
    expect((await api.call('PATCH', `/api/v0/characters/${id}`, { key: stranger.key, body: { scenario: 'x' } })).status).toBe(404);
    expect((await api.call('PATCH', `/api/v0/characters/${id}`, { key: maker.key, body: { tags: 'noir' } })).body.error.code).toBe('VALIDATION_FAILED');
    const tooLong = await api.call('PATCH', `/api/v0/characters/${id}`, { key: maker.key, body: { scenario: 'x'.repeat(40_000) } });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.details.fields[0].field).toBe('scenario');
    await api.call('DELETE', `/api/v0/characters/${id}`, { key: maker.key });
  });

  it('refuses a clear 409 past MAX_CHARACTERS_PER_ACCOUNT, counting the account own character', async () => {
    const person = await api.account('cast-limit');
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, index) => api.call('POST', '/api/v0/characters', { key: person.key, body: { name: `Extra ${index}` } })),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(3);
    const refused = answers.filter((answer) => answer.status === 409);
    expect(refused).toHaveLength(2);
    expect(refused[0]!.body.error).toMatchObject({ code: 'CHARACTER_LIMIT_REACHED', details: { limit: 4 } });
    expect(refused[0]!.body.error.message).toMatch(/at most 4 characters; delete one/);
    // Deleting one frees its place.
    const first = answers.find((answer) => answer.status === 201)!.body.character.id as string;
    expect((await api.call('DELETE', `/api/v0/characters/${first}`, { key: person.key })).status).toBe(200);
    expect((await api.call('POST', '/api/v0/characters', { key: person.key, body: { name: 'Again' } })).status).toBe(201);
  });

  it('lists the caller own characters, then public ones by name, page by page', async () => {
    const lister = await api.account('cast-lister');
    const publisher = await api.account('cast-publisher');
    for (const name of ['Zed', 'Amber']) await api.call('POST', '/api/v0/characters', { key: lister.key, body: { name } });
    for (const name of ['Amberly', 'Ambrose']) await api.call('POST', '/api/v0/characters', { key: publisher.key, body: { name, is_public: true } });
    await api.call('POST', '/api/v0/characters', { key: publisher.key, body: { name: 'Amber Hidden' } });

    const own = await api.call('GET', '/api/v0/characters', { key: lister.key });
    expect(own.body.characters.map((character: { name: string }) => character.name)).toEqual(['Amber', 'cast-lister', 'Zed']);
    expect(own.body.nextCursor).toBeUndefined();

    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await api.call('GET', `/api/v0/characters?query=amb&limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: lister.key });
      expect(page.status).toBe(200);
      names.push(...page.body.characters.map((character: { name: string }) => character.name));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(names).toEqual(['Amber', 'Amberly', 'Ambrose']);
    expect((await api.call('GET', '/api/v0/characters?cursor=nonsense', { key: lister.key })).body.error.code).toBe('VALIDATION_FAILED');
    expect((await api.call('GET', `/api/v0/characters?accountId=${publisher.id}`, { key: lister.key })).status).toBe(403);
    expect((await api.call('GET', `/api/v0/characters?accountId=${publisher.id}`)).body.characters).toHaveLength(4);
  });

  it('deletes a character with what belongs to it; its conversations keep their messages and show it deleted', async () => {
    const owner = await api.account('cast-deleter');
    const made = await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name: 'Doomed', is_public: true } });
    const id = made.body.character.id as string;
    const twin = (await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name: 'Twin' } })).body.character.id as string;
    const setAvatar = (characterId: string, image: Buffer) =>
      api.call('PUT', `/api/v0/characters/${characterId}/avatar`, { key: owner.key, raw: image, headers: { 'content-type': 'image/png' } });
    const avatarUrl = (await setAvatar(id, png(17))).body.avatar_url as string;
    // The twin's avatar is the same image, so one file (files are content-addressed) that the twin still holds.
    const twinAvatarUrl = (await setAvatar(twin, png(18))).body.avatar_url as string;
    const sharedUrl = (await setAvatar(owner.characterId, png(17))).body.avatar_url as string;
    expect(new URL(sharedUrl).pathname).toBe(new URL(avatarUrl).pathname);
    await api.call('POST', `/api/v0/characters/${id}/memories`, { key: owner.key, body: { text: 'I hid the letter.' } });
    await api.call('POST', `/api/v0/characters/${id}/lorebook/entries`, { key: owner.key, body: { keys: ['letter'], content: 'The letter is forged.' } });
    const conversationId = (await api.call('POST', '/api/v0/conversations', { key: stranger.key, body: { characterId: id } })).body.id as string;
    expect((await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key: stranger.key, body: { data: 'hello' } })).status).toBe(200);

    expect((await api.call('DELETE', `/api/v0/characters/${id}`, { key: stranger.key })).status).toBe(403);
    const personal = await api.call('DELETE', `/api/v0/characters/${owner.characterId}`, { key: owner.key });
    expect(personal.status).toBe(409);
    expect(personal.body.error.code).toBe('PERSONAL_CHARACTER_REQUIRED');
    expect((await api.call('DELETE', `/api/v0/characters/${id}`, { key: owner.key })).status).toBe(200);

    const read = await api.call('GET', `/api/v0/characters/${id}`, { key: owner.key });
    expect(read.status).toBe(410);
    expect(read.body.error.code).toBe('CHARACTER_DELETED');
    expect((await api.call('GET', `/api/v0/characters/${id}/lorebook`, { key: owner.key })).status).toBe(410);
    const conversation = await api.call('GET', `/api/v0/conversations/${conversationId}`, { key: stranger.key });
    expect(conversation.body.messages).toHaveLength(2);
    expect(conversation.body.speakers).toContainEqual(expect.objectContaining({ id, name: 'Doomed', deleted: true, avatarUrl: null }));
    const chat = await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key: stranger.key, body: { data: 'still there?' } });
    expect(chat.status).toBe(410);
    expect(chat.body.error.message).toMatch(/"Doomed" was deleted by its owner/);
    // Others learn nothing of it but that it is not there; its owner is told it was deleted.
    expect((await api.call('POST', '/api/v0/conversations', { key: stranger.key, body: { characterId: id } })).body.error.code).toBe('VALIDATION_FAILED');
    expect((await api.call('GET', `/api/v0/characters/${id}`, { key: stranger.key })).status).toBe(404);
    expect((await api.call('POST', '/api/v0/conversations', { key: owner.key, body: { characterId: id } })).body.error.code).toBe('CHARACTER_DELETED');
    const listed = await api.call('GET', '/api/v0/characters?query=doomed', { key: stranger.key });
    expect(listed.body.characters).toEqual([]);
    // Its avatar file stays while another character holds it; the twin's is let go of with the
    // twin, and kept for the grace period before a sweep removes it (test/core/file-sweep.test.ts).
    expect((await fetch(avatarUrl)).status).toBe(200);
    expect((await fetch(twinAvatarUrl)).status).toBe(200);
    expect((await api.call('DELETE', `/api/v0/characters/${twin}`, { key: owner.key })).status).toBe(200);
    expect((await fetch(twinAvatarUrl)).status).toBe(200);
  });

  it('answers /avatars/ without a valid signature 404 alike for a deleted character, a live private one and none, never naming it', async () => {
    const owner = await api.account('avatar-hider');
    const made = async (name: string) => (await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name } })).body.character.id as string;
    const [deleted, hidden] = [await made('Vanished Vera'), await made('Hidden Hugo')];
    expect((await api.call('DELETE', `/api/v0/characters/${deleted}`, { key: owner.key })).status).toBe(200);
    const fetched = async (id: string) => {
      const response = await fetch(`${api.url}/avatars/${id}/${'A'.repeat(43)}.png`);
      return { status: response.status, text: await response.text() };
    };
    const [ofDeleted, ofHidden, ofNone] = [await fetched(deleted), await fetched(hidden), await fetched(crypto.randomUUID())];
    expect(ofDeleted.status).toBe(404);
    expect(ofDeleted.text).not.toContain('Vanished');
    expect(ofHidden).toEqual(ofDeleted);
    expect(ofNone).toEqual(ofDeleted);
  });
});

describe('lorebooks over HTTP', () => {
  let api: Harness;
  let owner: Person;
  let reader: Person;
  beforeAll(async () => {
    api = await startHarness();
    [owner, reader] = await Promise.all([api.account('lore-owner'), api.account('lore-reader')]);
  });
  afterAll(async () => {
    await api.close();
  });

  it('adds, lists, changes and deletes entries; settings change; only the owner writes', async () => {
    const route = `/api/v0/characters/${owner.characterId}/lorebook`;
    const empty = await api.call('GET', route, { key: owner.key });
    expect(empty.body).toEqual({
      success: true,
      settings: { name: '', description: '', scan_depth: 2, token_budget_share: 0.25, recursive_scanning: false, max_recursion_steps: 3, extensions: {} },
      entries: [],
    });
    const added = await api.call('POST', `${route}/entries`, { key: owner.key, body: { keys: ['castle', '/dra(g|k)on/i'], content: 'The castle is old.', extensions: { x: 1 } } });
    expect(added.status).toBe(201);
    expect(added.body.entry).toMatchObject({ keys: ['castle', '/dra(g|k)on/i'], content: 'The castle is old.', enabled: true, constant: false, position: 'before_character', extensions: { x: 1 } });
    const entryId = added.body.entry.id as string;
    const constant = await api.call('POST', `${route}/entries`, { key: owner.key, body: { constant: true, content: 'Magic is real.', position: 'at_depth', depth: 0 } });
    expect(constant.status).toBe(201);

    const keyless = await api.call('POST', `${route}/entries`, { key: owner.key, body: { content: 'No keys.' } });
    expect(keyless.status).toBe(400);
    expect(keyless.body.error.details.fields[0].field).toBe('keys');
    expect((await api.call('POST', `${route}/entries`, { key: owner.key, body: { keys: ['x'], position: 'sideways' } })).status).toBe(400);
    expect((await api.call('POST', `${route}/entries`, { key: owner.key, body: { keys: ['x'], surprise: 1 } })).status).toBe(400);
    for (const bad of ['/dra(g|k/i', '/(a+)+$/']) {
      const refused = await api.call('POST', `${route}/entries`, { key: owner.key, body: { keys: ['fine', bad], content: 'x' } });
      expect(refused.status, bad).toBe(400);
      expect(refused.body.error.details.fields[0]).toMatchObject({ field: 'keys' });
    }

    const changed = await api.call('PATCH', `${route}/entries/${entryId}`, { key: owner.key, body: { content: 'The castle is older.', secondary_keys: ['gate'], secondary_logic: 'not_any' } });
    expect(changed.body.entry).toMatchObject({ id: entryId, keys: ['castle', '/dra(g|k)on/i'], content: 'The castle is older.', secondary_logic: 'not_any' });
    const settings = await api.call('PATCH', route, { key: owner.key, body: { scan_depth: 4, recursive_scanning: true } });
    expect(settings.body.settings).toMatchObject({ scan_depth: 4, recursive_scanning: true, token_budget_share: 0.25 });
    expect((await api.call('PATCH', route, { key: owner.key, body: { token_budget_share: 0 } })).status).toBe(400);

    // A reader who cannot see the character learns nothing of it; once public, they may read the book, never write it.
    expect((await api.call('GET', route, { key: reader.key })).status).toBe(404);
    await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, { key: owner.key, body: { is_public: true } });
    const read = await api.call('GET', route, { key: reader.key });
    expect(read.body.entries.map((entry: { id: string }) => entry.id)).toEqual([entryId, constant.body.entry.id]);
    expect((await api.call('POST', `${route}/entries`, { key: reader.key, body: { keys: ['x'], content: 'mine' } })).status).toBe(403);
    expect((await api.call('DELETE', `${route}/entries/${entryId}`, { key: reader.key })).status).toBe(403);

    expect((await api.call('DELETE', `${route}/entries/${entryId}`, { key: owner.key })).status).toBe(200);
    expect((await api.call('DELETE', `${route}/entries/${entryId}`, { key: owner.key })).status).toBe(404);
    expect((await api.call('GET', route, { key: owner.key })).body.entries).toHaveLength(1);
  });

  it('shows the character owner which entries a reply used, and no one else', async () => {
    const teller = await api.account('lore-teller');
    const route = `/api/v0/characters/${teller.characterId}/lorebook`;
    const harbour = (await api.call('POST', `${route}/entries`, { key: teller.key, body: { keys: ['harbour'], content: 'The harbour freezes in winter.' } })).body.entry.id;
    await api.call('POST', `${route}/entries`, { key: teller.key, body: { keys: ['mountain'], content: 'Nobody climbs the mountain.' } });
    // Only the newest message is scanned: the next question alone decides.
    await api.call('PATCH', route, { key: teller.key, body: { scan_depth: 1 } });
    await api.call('PATCH', `/api/v0/characters/${teller.characterId}`, { key: teller.key, body: { is_public: true } });
    const conversationId = (await api.call('POST', '/api/v0/conversations', { key: reader.key, body: { characterId: teller.characterId } })).body.id as string;
    // The owner sees a reply's entries where they may read the reply: here, as one of the people in it.
    await api.call('POST', `/api/v0/conversations/${conversationId}/speakers`, { key: reader.key, body: { accountId: teller.id } });
    await api.call('POST', `/api/v0/conversations/${conversationId}/speakers`, { key: teller.key, body: { accountId: teller.id } });
    await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key: reader.key, body: { data: 'Tell me about the harbour.' } });
    const messages = (await api.call('GET', `/api/v0/conversations/${conversationId}`, { key: reader.key })).body.messages;
    const reply = messages.at(-1).id as string;
    const prompt = JSON.stringify(api.llm.requests.at(-1)?.body.messages);
    expect(prompt).toContain('The harbour freezes in winter.');
    expect(prompt).not.toContain('Nobody climbs the mountain.');

    const used = await api.call('GET', `/api/v0/conversations/${conversationId}/messages/${reply}/lorebook`, { key: teller.key });
    expect(used.status).toBe(200);
    expect(used.body.entries.map((entry: { id: string }) => entry.id)).toEqual([harbour]);
    expect((await api.call('GET', `/api/v0/conversations/${conversationId}/messages/${reply}/lorebook`, { key: reader.key })).status).toBe(403);
    // A later reply, written without the entry, used none.
    await api.call('POST', `/api/v0/conversations/${conversationId}/chat`, { key: reader.key, body: { data: 'And the weather?' } });
    const second = (await api.call('GET', `/api/v0/conversations/${conversationId}`, { key: reader.key })).body.messages.at(-1).id as string;
    expect((await api.call('GET', `/api/v0/conversations/${conversationId}/messages/${second}/lorebook`, { key: teller.key })).body.entries).toEqual([]);
  });
});
