/**
 * Who speaks in a conversation (issue 28, item 6): nobody is added by someone who only knows
 * their account id; they are invited (at most 50 waiting) and accept or decline; anyone may
 * leave and the opener may take others out; the conversation list is paged like the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

type Person = { id: string; characterId: string; key: string };

describe('speakers, invitations and the conversation list, over HTTP', () => {
  let api: Harness;
  let stranger: Person;
  let victim: Person;

  beforeAll(async () => {
    api = await startHarness({ script: { reply: 'Hello.' } });
    [stranger, victim] = await Promise.all([api.account('speaker-stranger'), api.account('speaker-victim')]);
  });
  afterAll(async () => {
    await api?.close();
  });

  const open = async (person: Person) => (await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } })).body.id as string;
  const listed = async (person: Person, query = '') => api.call('GET', `/api/v0/conversations${query}`, { key: person.key });
  const speakerIds = (body: { conversation: { speakers: { id: string; type: string }[] } }) =>
    body.conversation.speakers.filter((speaker) => speaker.type === 'account').map((speaker) => speaker.id);

  it('only invites an account named by someone else: its list is unchanged until it accepts, and at most 50 wait', async () => {
    const before = (await listed(victim)).body.conversations.length;
    const conversations: string[] = [];
    for (let index = 0; index < 51; index++) conversations.push(await open(stranger));
    for (const [index, id] of conversations.entries()) {
      const asked = await api.call('POST', `/api/v0/conversations/${id}/speakers`, { key: stranger.key, body: { accountId: victim.id } });
      if (index < 50) {
        expect(asked.status).toBe(202);
        expect(asked.body.invitation).toMatchObject({ conversationId: id, accountId: victim.id, invitedByAccountId: stranger.id });
      } else {
        expect(asked.status).toBe(409);
        expect(asked.body.error.code).toBe('INVITATION_LIMIT_REACHED');
      }
    }
    // Inviting twice is one invitation.
    expect((await api.call('POST', `/api/v0/conversations/${conversations[0]}/speakers`, { key: stranger.key, body: { accountId: victim.id } })).status).toBe(202);
    expect((await listed(victim)).body.conversations).toHaveLength(before);
    expect((await api.call('GET', `/api/v0/conversations/${conversations[0]}`, { key: victim.key })).status).toBe(404);

    const waiting = await api.call('GET', '/api/v0/conversations/invitations', { key: victim.key });
    expect(waiting.body.invitations).toHaveLength(50);
    expect(waiting.body.invitations[0]).toEqual({ conversationId: conversations[0], accountId: victim.id, invitedByAccountId: stranger.id, created: expect.any(String) });
    expect((await api.call('GET', `/api/v0/conversations/invitations?accountId=${stranger.id}`, { key: victim.key })).status).toBe(403);

    // Declining frees a place; accepting makes a speaker; without an invitation, naming oneself finds nothing.
    expect((await api.call('DELETE', `/api/v0/conversations/${conversations[1]}/invitations/${victim.id}`, { key: victim.key })).status).toBe(200);
    expect((await api.call('DELETE', `/api/v0/conversations/${conversations[1]}/invitations/${victim.id}`, { key: victim.key })).status).toBe(404);
    expect((await api.call('POST', `/api/v0/conversations/${conversations[1]}/speakers`, { key: victim.key, body: { accountId: victim.id } })).status).toBe(404);
    const joined = await api.call('POST', `/api/v0/conversations/${conversations[0]}/speakers`, { key: victim.key, body: { accountId: victim.id } });
    expect(joined.status).toBe(200);
    expect(speakerIds(joined.body)).toEqual([stranger.id, victim.id]);
    expect((await listed(victim)).body.conversations.map((each: { id: string }) => each.id)).toContain(conversations[0]);
    expect((await api.call('GET', '/api/v0/conversations/invitations', { key: victim.key })).body.invitations).toHaveLength(48);
    expect((await api.call('POST', `/api/v0/conversations/${conversations[50]}/speakers`, { key: stranger.key, body: { accountId: victim.id } })).status).toBe(202);
  });

  it('lets a person leave and the opener take others out; the opener stays and others may not take anyone out', async () => {
    const [opener, guest, other] = await Promise.all([api.account('leave-opener'), api.account('leave-guest'), api.account('leave-other')]);
    const id = await open(opener);
    const route = `/api/v0/conversations/${id}`;
    for (const person of [guest, other]) {
      await api.call('POST', `${route}/speakers`, { key: opener.key, body: { accountId: person.id } });
      await api.call('POST', `${route}/speakers`, { key: person.key, body: { accountId: person.id } });
    }
    const notAllowed = await api.call('DELETE', `${route}/speakers/${other.id}`, { key: guest.key });
    expect(notAllowed.status).toBe(403);
    expect(notAllowed.body.error.code).toBe('FORBIDDEN');
    const ownerStays = await api.call('DELETE', `${route}/speakers/${opener.id}`, { key: opener.key });
    expect(ownerStays.status).toBe(409);
    expect(ownerStays.body.error.code).toBe('CONVERSATION_OWNER_REQUIRED');

    const left = await api.call('DELETE', `${route}/speakers/${guest.id}`, { key: guest.key });
    expect(left.status).toBe(200);
    expect(speakerIds(left.body)).toEqual([opener.id, other.id]);
    expect((await api.call('GET', route, { key: guest.key })).status).toBe(404);
    expect((await listed(guest)).body.conversations).toEqual([]);
    const removed = await api.call('DELETE', `${route}/speakers/${other.id}`, { key: opener.key });
    expect(speakerIds(removed.body)).toEqual([opener.id]);
    expect((await api.call('POST', `${route}/chat`, { key: other.key, body: { data: 'still here?' } })).status).toBe(404);
    // Their lines stay; the conversation goes on.
    expect((await api.call('POST', `${route}/chat`, { key: opener.key, body: { data: 'just me now' } })).status).toBe(200);
  });

  it('pages the conversation list: limit 1–200 (default 50), nextCursor until the last page', async () => {
    const person = await api.account('list-pager');
    const opened: string[] = [];
    for (let index = 0; index < 5; index++) opened.push(await open(person));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await listed(person, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.conversations.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.conversations.map((each: { id: string }) => each.id));
      cursor = page.body.nextCursor;
      pages += 1;
    } while (cursor && pages < 10);
    expect(seen).toEqual([...opened].reverse());
    expect(pages).toBe(3);
    const whole = await listed(person);
    expect(whole.body.conversations).toHaveLength(5);
    expect(whole.body.nextCursor).toBeUndefined();
    for (const query of ['?limit=0', '?limit=201', '?cursor=not-a-cursor']) expect((await listed(person, query)).status).toBe(400);
  });
});
