/**
 * Who answers a turn in a voice call. The characters are read from the call's conversation at
 * each turn, so a scene changed anywhere (/scene add in the voice channel's chat, or through the
 * API) holds from the next turn, and a turn is for the character its words address, by the rules
 * of text channels (`addressedCharacter`: its name said first, any case).
 */
import { adminActor } from '../../core/actor.js';
import type { Core } from '../../core/core.js';
import type { CharacterRecord } from '../../core/records.js';
import { existingCharacters } from '../characters.js';
import { addressedCharacter } from '../conversations/addressing.js';

export interface CallTurn {
  conversationId: string;
  /** The words as stored. */
  text: string;
  /** Whether one person is in the call (everything they say is for the characters). */
  alone: boolean;
  /** The character the call was started with (/voice talk). */
  callCharacterId: string;
  botUserId: string;
}

export interface CallAnswerer {
  character: CharacterRecord;
  /** Everyone in the scene, the answerer included (their voices decide a stand-in's). */
  cast: CharacterRecord[];
}

/** How many of the newest messages are searched for the character who spoke last (alone, each turn is answered). */
const LAST_SPEAKER_LOOKBACK = 12;

/**
 * The character who answers `turn`, with the cast. Alone with the characters, a turn naming
 * none is for the one who spoke last, as a reply in text goes to the character replied to ("and
 * then?" goes on with whoever was talking), else the call's own character. Among several people
 * a turn naming none is for nobody: they are talking with each other. Undefined: no answer.
 */
export async function callAnswerer(core: Core, turn: CallTurn): Promise<CallAnswerer | undefined> {
  const conversation = await core.conversations.get(adminActor, turn.conversationId);
  const cast = await existingCharacters(core, conversation.characterIds);
  const lastSpeaker = turn.alone ? await lastSpeakerOf(core, turn.conversationId, cast) : undefined;
  const addressing = addressedCharacter({ content: turn.text, botUserId: turn.botUserId, repliedToCharacterId: lastSpeaker }, cast);
  const chosen = addressing?.characterId ?? (turn.alone ? turn.callCharacterId : undefined);
  // Alone, someone always answers: the conversation's own character if the call's is gone.
  const character = cast.find((member) => member.id === chosen) ?? (turn.alone ? cast[0] : undefined);
  return character && { character, cast };
}

/** The character of the cast whose words came last in the conversation, if lately. */
async function lastSpeakerOf(core: Core, conversationId: string, cast: readonly CharacterRecord[]): Promise<string | undefined> {
  if (cast.length < 2) return undefined;
  const recent = await core.conversations.messages(conversationId, { newest: true, limit: LAST_SPEAKER_LOOKBACK });
  return recent.findLast((message) => message.participantType === 'character' && cast.some((member) => member.id === message.participantId))?.participantId;
}
