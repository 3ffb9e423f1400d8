import { describe, expect, it } from 'vitest';
import { lessonsOf, mayRead, originOf, placeOf, promptSubject, teaches, usableOrigins } from '../../src/core/memory-scope.js';

describe('where learned memories may be used (one test per rule)', () => {
  it('1: a Discord server channel or thread is shared, even with one person; a DM is private; an API conversation is private while one person holds it', () => {
    expect(placeOf({ conversationId: 'c1', speakerAccountIds: ['ana'], discord: { guildId: 'g1' } })).toEqual({ kind: 'shared', origin: 'server:g1' });
    expect(placeOf({ conversationId: 'c1', speakerAccountIds: ['ana'], discord: { guildId: null } })).toEqual({ kind: 'private' });
    expect(placeOf({ conversationId: 'c1', speakerAccountIds: ['ana'] })).toEqual({ kind: 'private' });
    expect(placeOf({ conversationId: 'c1', speakerAccountIds: ['ana', 'bo'] })).toEqual({ kind: 'shared', origin: 'conversation:c1' });
  });

  it('2: a memory carries where it was said', () => {
    expect(originOf({ kind: 'private' })).toBe('private');
    expect(originOf({ kind: 'shared', origin: 'server:g1' })).toBe('server:g1');
  });

  it('3: in private every memory of the person may be used; where others read, only what they said in that same server', () => {
    expect(usableOrigins({ kind: 'private' })).toBeUndefined();
    expect(usableOrigins({ kind: 'shared', origin: 'server:g1' })).toEqual(['server:g1']);
    expect(usableOrigins({ kind: 'shared', origin: 'conversation:c9' })).toEqual(['conversation:c9']);
  });

  it('4: a prompt holds the memories of the person answered, if they take part; none for a character line', () => {
    expect(promptSubject({ participantType: 'account', participantId: 'ana' }, ['ana', 'bo'])).toBe('ana');
    expect(promptSubject({ participantType: 'account', participantId: 'cy' }, ['ana', 'bo'])).toBeUndefined();
    expect(promptSubject({ participantType: 'character', participantId: 'ch1' }, ['ana'])).toBeUndefined();
  });

  it("5: a memory about a person is theirs alone (not the character owner's); the character's own is its owner's", () => {
    const aboutAna = { kind: 'person' as const, subjectAccountId: 'ana' };
    expect(mayRead(aboutAna, 'ana', 'owner')).toBe(true);
    expect(mayRead(aboutAna, 'owner', 'owner')).toBe(false);
    const own = { kind: 'own' as const, subjectAccountId: 'owner' };
    expect(mayRead(own, 'owner', 'owner')).toBe(true);
    expect(mayRead(own, 'ana', 'owner')).toBe(false);
  });

  it("6: only people's messages teach, only with learning on; the owner's grow the character when it takes them", () => {
    const character = { ownerAccountId: 'owner', learnsFromOwner: true };
    const on = () => true;
    expect(lessonsOf({ participantType: 'account', participantId: 'ana' }, character, on)).toBe('person');
    expect(lessonsOf({ participantType: 'account', participantId: 'owner' }, character, on)).toBe('own');
    expect(lessonsOf({ participantType: 'account', participantId: 'owner' }, { ...character, learnsFromOwner: false }, on)).toBe('person');
    expect(lessonsOf({ participantType: 'character', participantId: 'ch1' }, character, on)).toBeUndefined();
    expect(lessonsOf({ participantType: 'account', participantId: 'ana' }, character, (id) => id !== 'ana')).toBeUndefined();
  });

  it('7: a message teaches only when its author wrote it to a character: not kept as context, not written by the admin', () => {
    expect(teaches({ writtenByAdmin: false, keptAsContext: false })).toBe(true);
    expect(teaches({ writtenByAdmin: false, keptAsContext: true })).toBe(false);
    expect(teaches({ writtenByAdmin: true, keptAsContext: false })).toBe(false);
  });
});
