import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UrlSigner } from '../../src/http/signed-urls.js';
import { type Harness, startHarness } from './harness.js';

const isoMicros = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function png(width: number, height: number): Buffer {
  const image = new PNG({ width, height });
  image.data.fill(200);
  return PNG.sync.write(image);
}

describe('characters API', () => {
  let api: Harness;
  let owner: { id: string; characterId: string; key: string };
  let stranger: { id: string; characterId: string; key: string };
  beforeAll(async () => {
    api = await startHarness();
    owner = await api.account('owner');
    stranger = await api.account('stranger');
  });
  afterAll(async () => {
    await api.close();
  });

  it('reads a character in the spec shape, with no success wrapper', async () => {
    const answer = await api.call('GET', `/api/v0/characters/${owner.characterId}`, { key: owner.key });
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual(
      [
        ...['account_id', 'avatar_url', 'created', 'description', 'id', 'is_public', 'name', 'personality_summary', 'tts_voice_id', 'updated'],
        // What character cards define (issue 22), empty until set.
        ...['nickname', 'scenario', 'first_message', 'alternate_greetings', 'group_only_greetings', 'example_dialogue', 'system_prompt'],
        ...['post_history_instructions', 'creator_notes', 'tags', 'creator', 'character_version', 'extensions'],
      ].sort(),
    );
    expect(answer.body).toMatchObject({ scenario: '', alternate_greetings: [], tags: [], extensions: {} });
    expect(answer.body.created).toMatch(isoMicros);
    expect(answer.body.updated).toMatch(isoMicros);
    expect(answer.body.is_public).toBe(false);
    expect(answer.body.tts_voice_id).toBeNull();
  });

  it('serves a default avatar PNG, deterministic per character, behind a signed URL', async () => {
    const first = await api.call('GET', `/api/v0/characters/${owner.characterId}`, { key: owner.key });
    const avatar = await fetch(first.body.avatar_url);
    expect(avatar.status).toBe(200);
    expect(avatar.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await avatar.arrayBuffer());
    expect(PNG.sync.read(bytes).width).toBeGreaterThan(0);
    const other = await api.call('GET', `/api/v0/characters/${stranger.characterId}`, { key: stranger.key });
    const otherBytes = Buffer.from(await (await fetch(other.body.avatar_url)).arrayBuffer());
    expect(otherBytes.equals(bytes)).toBe(false);
  });

  it('refuses tampered and expired file URLs', async () => {
    const character = await api.call('GET', `/api/v0/characters/${owner.characterId}`, { key: owner.key });
    const url = new URL(character.body.avatar_url);
    const tampered = new URL(url);
    tampered.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 60));
    const refused = await fetch(tampered);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
    const unsigned = await fetch(`${url.origin}${url.pathname}`);
    expect(unsigned.status).toBe(403);
    // Sign as the service does, with its own secret, but an hour and more in the past.
    const secret = (await readFile(path.join(api.dataDir, 'url-signing-secret'), 'utf8')).trim();
    const pastSigner = new UrlSigner({ publicBaseUrl: url.origin, secret, ttlSeconds: 60, now: () => Date.now() - 3_600_000 });
    const key = decodeURIComponent(url.pathname.slice('/files/'.length));
    const expired = await fetch(pastSigner.sign(key));
    expect(expired.status).toBe(403);
    expect(((await expired.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
    const current = new UrlSigner({ publicBaseUrl: url.origin, secret, ttlSeconds: 60 });
    expect((await fetch(current.sign(key))).status).toBe(200);
  });

  it('lets the owner edit, and keeps private characters hidden from others', async () => {
    expect((await api.call('GET', `/api/v0/characters/${owner.characterId}`, { key: stranger.key })).status).toBe(404);
    const edited = await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, {
      key: owner.key,
      body: { name: 'Captain Owner', description: 'Sails the seas.', personality_summary: 'Bold.', is_public: true },
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ name: 'Captain Owner', description: 'Sails the seas.', personality_summary: 'Bold.', is_public: true });
    expect(edited.body.updated > edited.body.created).toBe(true);
    const seen = await api.call('GET', `/api/v0/characters/${owner.characterId}`, { key: stranger.key });
    expect(seen.status).toBe(200);
    expect(seen.body.name).toBe('Captain Owner');
    const refused = await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, { key: stranger.key, body: { name: 'Mine now' } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('owner');
  });

  it('names invalid and unknown fields of an edit', async () => {
    const answer = await api.call('PATCH', `/api/v0/characters/${owner.characterId}`, {
      key: owner.key,
      body: { name: '', is_public: 'yes', colour: 'red' },
    });
    expect(answer.status).toBe(400);
    const text = JSON.stringify(answer.body.error.details.fields);
    expect(text).toContain('name');
    expect(text).toContain('is_public');
    expect(text).toContain('colour');
  });

  it('replaces the avatar with an uploaded image, raw or multipart', async () => {
    const image = png(8, 8);
    const raw = await api.call('PUT', `/api/v0/characters/${owner.characterId}/avatar`, {
      key: owner.key,
      raw: image,
      headers: { 'content-type': 'image/png' },
    });
    expect(raw.status).toBe(200);
    expect(Buffer.from(await (await fetch(raw.body.avatar_url)).arrayBuffer()).equals(image)).toBe(true);

    const other = png(9, 9);
    const form = new FormData();
    form.append('avatar', new Blob([other], { type: 'image/png' }), 'me.png');
    const multipart = await api.call('PUT', `/api/v0/characters/${owner.characterId}/avatar`, { key: owner.key, raw: form });
    expect(multipart.status).toBe(200);
    expect(Buffer.from(await (await fetch(multipart.body.avatar_url)).arrayBuffer()).equals(other)).toBe(true);
  });

  it('refuses avatars that are not images, too large, or not the owner’s', async () => {
    const text = await api.call('PUT', `/api/v0/characters/${owner.characterId}/avatar`, {
      key: owner.key,
      raw: 'definitely not a picture',
      headers: { 'content-type': 'image/png' },
    });
    expect(text.status).toBe(415);
    expect(text.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const huge = Buffer.concat([png(4, 4), Buffer.alloc(6 * 1024 * 1024)]);
    const tooLarge = await api.call('PUT', `/api/v0/characters/${owner.characterId}/avatar`, {
      key: owner.key,
      raw: huge,
      headers: { 'content-type': 'image/png' },
    });
    expect(tooLarge.status).toBe(413);
    const notOwner = await api.call('PUT', `/api/v0/characters/${owner.characterId}/avatar`, {
      key: stranger.key,
      raw: png(4, 4),
      headers: { 'content-type': 'image/png' },
    });
    expect(notOwner.status).toBe(403);
  });

  it('keeps memories for the owner only', async () => {
    const added = await api.call('POST', `/api/v0/characters/${owner.characterId}/memories`, { key: owner.key, body: { text: 'Was born at sea.' } });
    expect(added.status).toBe(201);
    expect(added.body.memory.text).toBe('Was born at sea.');
    const listed = await api.call('GET', `/api/v0/characters/${owner.characterId}/memories`, { key: owner.key });
    expect(listed.body.memories.map((memory: { text: string }) => memory.text)).toEqual(['Was born at sea.']);
    expect((await api.call('GET', `/api/v0/characters/${owner.characterId}/memories`, { key: stranger.key })).status).toBe(403);
    expect((await api.call('POST', `/api/v0/characters/${owner.characterId}/memories`, { key: owner.key, body: { text: '  ' } })).status).toBe(400);
    const removed = await api.call('DELETE', `/api/v0/characters/${owner.characterId}/memories/${added.body.memory.id}`, { key: owner.key });
    expect(removed.body).toEqual({ success: true });
    const again = await api.call('DELETE', `/api/v0/characters/${owner.characterId}/memories/${added.body.memory.id}`, { key: owner.key });
    expect(again.status).toBe(404);
  });

  it('lists face models (none before any training)', async () => {
    const models = await api.call('GET', `/api/v0/characters/${owner.characterId}/images/models`, { key: owner.key });
    expect(models.body).toEqual({ success: true, models: [] });
    expect((await api.call('GET', `/api/v0/characters/${stranger.characterId}/images/models`, { key: owner.key })).status).toBe(404);
  });
});
