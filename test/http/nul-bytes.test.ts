import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../store/postgres-database.js';
import { type Harness, startHarness } from './harness.js';

/**
 * A NUL (U+0000) in any text a request sends is refused with 400 naming the field, on both
 * stores alike: SQLite used to cut the text at it and PostgreSQL to answer 500.
 */
function describeNulBytes(name: string, storeUrl: () => Promise<{ url?: string; drop(): Promise<void> }>): void {
  describe(`NUL bytes over HTTP on ${name}`, () => {
    let api: Harness;
    let database: { url?: string; drop(): Promise<void> };
    let person: { id: string; characterId: string; key: string };

    beforeAll(async () => {
      database = await storeUrl();
      api = await startHarness({ environment: database.url ? { STORE_URL: database.url } : {} });
      person = await api.account('nul-sender');
    });
    afterAll(async () => {
      await api?.close();
      await database?.drop();
    });

    const refusedFields = (response: { status: number; body: any }) => {
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
      return (response.body.error.details.fields as Array<{ field: string; message: string }>).map((issue) => issue.field);
    };

    it('refuses a chat message holding one and stores nothing of it', async () => {
      const created = await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const before = await api.call('GET', `/api/v0/conversations/${id}`, { key: person.key });
      for (const route of [`/api/v0/conversations/${id}/chat`, `/api/v0/conversations/${id}/chat/stream`]) {
        const answer = await api.call('POST', route, { key: person.key, body: { data: 'Hello\u0000 and the rest' } });
        expect(refusedFields(answer)).toEqual(['data']);
        expect(answer.body.error.message).toContain('U+0000');
      }
      const after = await api.call('GET', `/api/v0/conversations/${id}`, { key: person.key });
      expect(after.body.messages).toEqual(before.body.messages);
    });

    it("refuses a character's description, top-level or nested fields, and names each", async () => {
      const created = await api.call('POST', '/api/v0/characters', { key: person.key, body: { name: 'Nula', description: 'Quiet\u0000 and kind' } });
      expect(refusedFields(created)).toEqual(['description']);

      const changed = await api.call('PATCH', `/api/v0/characters/${person.characterId}`, {
        key: person.key,
        body: { description: 'fine', extensions: { app: { notes: ['kept', 'cut\u0000here'] }, 'odd\u0000key': 1 } },
      });
      expect(refusedFields(changed).sort()).toEqual(['extensions.app.notes.1', 'extensions.odd\\u0000key']);
      const read = await api.call('GET', `/api/v0/characters/${person.characterId}`, { key: person.key });
      expect(read.status).toBe(200);
      expect(typeof read.body.description).toBe('string');
      expect(read.body.description).not.toBe('fine');
    });

    it('refuses a memory holding one', async () => {
      const added = await api.call('POST', `/api/v0/characters/${person.characterId}/memories`, { key: person.key, body: { text: 'Likes tea\u0000 and rain' } });
      expect(refusedFields(added)).toEqual(['text']);
      const listed = await api.call('GET', `/api/v0/characters/${person.characterId}/memories`, { key: person.key });
      expect(listed.body.memories).toEqual([]);
    });

    it('refuses one in a query parameter', async () => {
      const listed = await api.call('GET', '/api/v0/characters?query=Nu%00la', { key: person.key });
      expect(refusedFields(listed)).toEqual(['query.query']);
    });

    it('refuses an imported card whose text holds one, without a 500', async () => {
      const card = JSON.stringify({ spec: 'chara_card_v2', spec_version: '2.0', data: { name: 'Carded', description: 'A card\u0000 cut short' } });
      const imported = await api.call('POST', '/api/v0/characters/import', {
        key: person.key,
        body: { data: Buffer.from(card).toString('base64'), mimeType: 'application/json' },
      });
      expect(imported.status).toBe(400);
      expect(imported.body.error.code).toBe('VALIDATION_FAILED');
      expect(imported.body.error.message).toContain('U+0000');
    });
  });
}

describeNulBytes('SQLite', async () => ({ drop: async () => {} }));
describeNulBytes('PostgreSQL', createTestDatabase);
