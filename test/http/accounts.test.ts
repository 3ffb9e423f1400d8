import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('accounts API', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await startHarness();
  });
  afterAll(async () => {
    await api.close();
  });

  it('creates an account with its own character, in the spec shape', async () => {
    const before = Date.now();
    const referrer = await api.account('referrer');
    const created = await api.call('POST', '/api/v0/accounts', {
      body: { username: 'ada', dateOfBirth: '1815-12-10', referredByAccountId: referrer.id, tags: ['beta'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.success).toBe(true);
    expect(created.body.apiKey).toMatch(/^lk_/);
    const account = created.body.account;
    expect(Object.keys(account).sort()).toEqual(
      ['characterId', 'created', 'id', 'isDisabled', 'isSubscribed', 'isVerified', 'meta', 'profilePictureUrl', 'tags', 'username'].sort(),
    );
    expect(account.id).toMatch(uuidPattern);
    expect(account.characterId).toMatch(uuidPattern);
    expect(Number.isInteger(account.created)).toBe(true);
    expect(account.created).toBeGreaterThanOrEqual(before);
    expect(account.meta).toEqual({ dateOfBirth: '1815-12-10', referredByAccountId: referrer.id });
    expect(account.tags).toEqual(['beta']);
    expect(account.profilePictureUrl).toBeNull();
    expect([account.isVerified, account.isDisabled, account.isSubscribed]).toEqual([false, false, false]);

    const read = await api.call('GET', `/api/v0/accounts/${account.id}`, { key: created.body.apiKey });
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ success: true, account });
    const character = await api.call('GET', `/api/v0/characters/${account.characterId}`, { key: created.body.apiKey });
    expect(character.status).toBe(200);
    expect(character.body.account_id).toBe(account.id);
    expect(character.body.name).toBe('ada');
  });

  it('keeps usernames unique, whatever the case, even when created at once', async () => {
    const attempts = await Promise.all(
      ['Twin', 'twin', 'TWIN', 'twin'].map((username) => api.call('POST', '/api/v0/accounts', { body: { username } })),
    );
    expect(attempts.filter((attempt) => attempt.status === 201)).toHaveLength(1);
    for (const refused of attempts.filter((attempt) => attempt.status !== 201)) {
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('USERNAME_TAKEN');
    }
  });

  it('names each invalid field', async () => {
    const answer = await api.call('POST', '/api/v0/accounts', {
      body: { username: 'x', dateOfBirth: '10/12/1815', referredByAccountId: 'nope', tags: 'beta' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.success).toBe(false);
    expect(answer.body.error.code).toBe('VALIDATION_FAILED');
    const fields = answer.body.error.details.fields.map((issue: { field: string }) => issue.field).sort();
    expect(fields).toEqual(['dateOfBirth', 'referredByAccountId', 'tags', 'username']);
  });

  it('refuses a referrer that does not exist', async () => {
    const answer = await api.call('POST', '/api/v0/accounts', {
      body: { username: 'orphan', referredByAccountId: '00000000-0000-4000-8000-000000000000' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain('referredByAccountId');
  });

  it('needs a valid key, and only the admin creates accounts or credits', async () => {
    const user = await api.account('plain-user');
    expect((await api.call('GET', '/api/v0/accounts', { key: null })).status).toBe(401);
    const wrong = await api.call('GET', '/api/v0/accounts', { key: 'lk_wrong' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('UNAUTHORIZED');
    const forbidden = await api.call('POST', '/api/v0/accounts', { key: user.key, body: { username: 'sneaky' } });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('FORBIDDEN');
    const credit = await api.call('POST', `/api/v0/accounts/${user.id}/balance`, { key: user.key, body: { amount: 5, reason: 'gift' } });
    expect(credit.status).toBe(403);
  });

  it('lists all accounts a page at a time for the admin, and only itself for an account', async () => {
    const user = await api.account('lister');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
      const page = await api.call('GET', `/api/v0/accounts${query}`);
      expect(page.status).toBe(200);
      expect(page.body.accounts.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.accounts.map((account: { username: string }) => account.username));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toContain('lister');
    expect(new Set(seen).size).toBe(seen.length);
    const own = await api.call('GET', '/api/v0/accounts', { key: user.key });
    expect(own.body.accounts.map((account: { id: string }) => account.id)).toEqual([user.id]);
    expect((await api.call('GET', '/api/v0/accounts?limit=0')).status).toBe(400);
  });

  it('hides other accounts and rejects ids that are not UUIDs', async () => {
    const first = await api.account('first');
    const second = await api.account('second');
    const hidden = await api.call('GET', `/api/v0/accounts/${second.id}`, { key: first.key });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('NOT_FOUND');
    const badId = await api.call('GET', '/api/v0/accounts/12345');
    expect(badId.status).toBe(400);
    expect(badId.body.error.message).toContain('accountId');
    expect((await api.call('GET', '/api/v0/accounts/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('starts with the starting balance; admin credits add up, even at once', async () => {
    const user = await api.account('saver');
    const start = await api.call('GET', `/api/v0/accounts/${user.id}/balance`, { key: user.key });
    expect(start.body).toEqual({ success: true, balance: 100 });
    const credits = await Promise.all(
      Array.from({ length: 25 }, () => api.call('POST', `/api/v0/accounts/${user.id}/balance`, { body: { amount: 2, reason: 'bonus' } })),
    );
    expect(credits.every((credit) => credit.status === 200 && typeof credit.body.transactionId === 'string')).toBe(true);
    const after = await api.call('GET', `/api/v0/accounts/${user.id}/balance`, { key: user.key });
    expect(after.body.balance).toBe(150);
    const ledger = await api.call('GET', `/api/v0/accounts/${user.id}/transactions`, { key: user.key });
    expect(ledger.body.transactions).toHaveLength(26);
    const invalid = await api.call('POST', `/api/v0/accounts/${user.id}/balance`, { body: { amount: -3, reason: '' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details.fields.map((issue: { field: string }) => issue.field).sort()).toEqual(['amount', 'reason']);
  });

  it('issues a new key and revokes the old one', async () => {
    const user = await api.account('rotator');
    const rotated = await api.call('POST', `/api/v0/accounts/${user.id}/keys`, { key: user.key });
    expect(rotated.status).toBe(201);
    expect(rotated.body.apiKey).not.toBe(user.key);
    expect((await api.call('GET', `/api/v0/accounts/${user.id}`, { key: user.key })).status).toBe(401);
    expect((await api.call('GET', `/api/v0/accounts/${user.id}`, { key: rotated.body.apiKey })).status).toBe(200);
  });

  it('lets an account change its picture and tags, and only the admin its flags', async () => {
    const user = await api.account('changer');
    const own = await api.call('PATCH', `/api/v0/accounts/${user.id}`, {
      key: user.key,
      body: { profilePictureUrl: 'https://cdn.example.test/me.png', tags: ['artist'] },
    });
    expect(own.status).toBe(200);
    expect(own.body.account).toMatchObject({ profilePictureUrl: 'https://cdn.example.test/me.png', tags: ['artist'] });
    const flags = await api.call('PATCH', `/api/v0/accounts/${user.id}`, { key: user.key, body: { isVerified: true } });
    expect(flags.status).toBe(403);
    const invalid = await api.call('PATCH', `/api/v0/accounts/${user.id}`, { key: user.key, body: { profilePictureUrl: 'ftp://x', nickname: 'x' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details.fields.map((issue: { field: string }) => issue.field).sort()).toEqual(['nickname', 'profilePictureUrl']);
    const verified = await api.call('PATCH', `/api/v0/accounts/${user.id}`, { body: { isVerified: true, isSubscribed: true } });
    expect(verified.body.account).toMatchObject({ isVerified: true, isSubscribed: true, isDisabled: false, tags: ['artist'] });
  });

  it('refuses a disabled account’s key until it is enabled again', async () => {
    const user = await api.account('suspended');
    expect((await api.call('PATCH', `/api/v0/accounts/${user.id}`, { body: { isDisabled: true } })).status).toBe(200);
    const refused = await api.call('GET', `/api/v0/accounts/${user.id}`, { key: user.key });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('ACCOUNT_DISABLED');
    await api.call('PATCH', `/api/v0/accounts/${user.id}`, { body: { isDisabled: false } });
    expect((await api.call('GET', `/api/v0/accounts/${user.id}`, { key: user.key })).status).toBe(200);
  });

  it('keeps accounts, keys and balances across a restart', async () => {
    const user = await api.account('durable');
    await api.call('POST', `/api/v0/accounts/${user.id}/balance`, { body: { amount: 7, reason: 'before restart' } });
    await api.restart();
    const read = await api.call('GET', `/api/v0/accounts/${user.id}/balance`, { key: user.key });
    expect(read.body).toEqual({ success: true, balance: 107 });
    const again = await api.call('POST', '/api/v0/accounts', { body: { username: 'durable' } });
    expect(again.status).toBe(409);
  });
});
