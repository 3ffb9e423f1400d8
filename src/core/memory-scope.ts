/**
 * Where a learned memory may be used and who may read it: every rule in one place (README,
 * "What characters learn", has them as a table, and test/core/memory-scope.test.ts one test
 * each). The rest of the core asks these functions and decides nothing of its own.
 *
 * A conversation is **private** when no one but the person and the characters can read it (a
 * DM, an API conversation with one person), **shared** otherwise (a Discord server's channel or
 * thread, even when one person talks there; an API conversation several people share).
 */
import type { LearnedMemoryRecord, MemoryOrigin } from './records.js';

/** Where a conversation happens, as far as memories care. */
export type Place = { kind: 'private' } | { kind: 'shared'; origin: Exclude<MemoryOrigin, 'private'> };

/** What a conversation is, to tell its place. */
export interface PlaceFacts {
  conversationId: string;
  /** Accounts that may read and write it. */
  speakerAccountIds: readonly string[];
  /** Its Discord home when it has one: a server's id, or null for a DM. */
  discord?: { guildId: string | null } | undefined;
}

/** Rule 1: a Discord server is shared; a DM is private; an API conversation is private while one person holds it. */
export function placeOf(facts: PlaceFacts): Place {
  if (facts.discord) return facts.discord.guildId === null ? { kind: 'private' } : { kind: 'shared', origin: `server:${facts.discord.guildId}` };
  return facts.speakerAccountIds.length <= 1 ? { kind: 'private' } : { kind: 'shared', origin: `conversation:${facts.conversationId}` };
}

/** Rule 2: a memory learned in a place carries where: `private`, or the server (or shared conversation) it was said in. */
export function originOf(place: Place): MemoryOrigin {
  return place.kind === 'private' ? 'private' : place.origin;
}

/**
 * Rule 3: when answering a person in `place`, which of their memories may be used: in private,
 * all of them; in a shared place, only what they said in that same server (or conversation),
 * so what they said in a DM never surfaces where others read.
 */
export function usableOrigins(place: Place): readonly MemoryOrigin[] | undefined {
  return place.kind === 'private' ? undefined : [place.origin];
}

/**
 * Rule 4: whose memories go into a reply's prompt: the person whose message is answered, if
 * they take part in the conversation; never another person's (two people in one channel never
 * get each other's memories), never anyone's when a character's line is answered.
 */
export function promptSubject(answered: { participantType: 'account' | 'character'; participantId: string }, speakerAccountIds: readonly string[]): string | undefined {
  if (answered.participantType !== 'account') return undefined;
  return speakerAccountIds.includes(answered.participantId) ? answered.participantId : undefined;
}

/**
 * Rule 5: who may read a learned memory. One about a person is theirs alone: not the
 * character's owner, not an admin's business to show elsewhere. A character's own memory is
 * its owner's to review while pending, and once active it is part of the character (used
 * everywhere, as the owner-written ones are), read by its owner.
 */
export function mayRead(memory: Pick<LearnedMemoryRecord, 'kind' | 'subjectAccountId'>, readerAccountId: string, characterOwnerAccountId: string): boolean {
  return memory.kind === 'person' ? memory.subjectAccountId === readerAccountId : characterOwnerAccountId === readerAccountId;
}

/**
 * Rule 6: what a message may teach: only what people said (never a character's line), only
 * when learning is on for its author (everywhere and for this character). It is about its
 * author (`person`), except that the owner of a character that takes its owner's facts grows
 * the character instead: the facts become its own memories (`own`), pending the owner's review.
 */
/**
 * Rule 7: a message teaches only when its author wrote it themselves, to a character. A message
 * a listening channel only keeps as context (it addressed no character) teaches nothing: the
 * person was talking with other people, not telling the character about themselves. Neither does
 * one the admin wrote in an account's name: it is not that person's word about themselves.
 */
export function teaches(message: { writtenByAdmin: boolean; keptAsContext: boolean }): boolean {
  return !message.writtenByAdmin && !message.keptAsContext;
}

export function lessonsOf(
  message: { participantType: 'account' | 'character'; participantId: string },
  character: { ownerAccountId: string; learnsFromOwner: boolean },
  learningOn: (accountId: string) => boolean,
): 'person' | 'own' | undefined {
  if (message.participantType !== 'account' || !learningOn(message.participantId)) return undefined;
  return message.participantId === character.ownerAccountId && character.learnsFromOwner ? 'own' : 'person';
}
