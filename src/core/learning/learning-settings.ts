/**
 * Who is learned from: a person may turn learning off for themselves, everywhere or for some
 * characters (nothing is learned from their messages while it is off); a character's owner
 * decides whether their own facts are proposed as the character's own memories (on by default).
 * Kept as small facts in the store, so every process reads the same.
 */
import type { RepositoryStore } from '../repositories.js';

/** A person's choice; learning is on unless they said otherwise. */
export interface LearningChoice {
  /** Off everywhere. */
  off: boolean;
  /** Off for these characters only. */
  offForCharacterIds: string[];
  /** When learning was last turned back on, everywhere and per character: what was said before stays unlearned. */
  onSinceMicros?: number;
  characterOnSinceMicros?: Record<string, number>;
}

const personKey = (accountId: string) => `learning:person:${accountId}`;
const characterKey = (characterId: string) => `learning:character:${characterId}`;

export class LearningSettings {
  constructor(private readonly store: RepositoryStore) {}

  async choice(accountId: string): Promise<LearningChoice> {
    return (await this.store.facts.get<LearningChoice>(personKey(accountId))) ?? { off: false, offForCharacterIds: [] };
  }

  /**
   * Records the person's choice. Turning learning back on (everywhere, or for a character) is
   * stamped `nowMicros`: messages said before, while it was off, are never learned, even if their
   * batch runs after.
   */
  async setChoice(accountId: string, choice: Pick<LearningChoice, 'off' | 'offForCharacterIds'>, nowMicros: number): Promise<LearningChoice> {
    const before = await this.choice(accountId);
    const offFor = [...new Set(choice.offForCharacterIds)].slice(0, 1000);
    const characterOnSinceMicros = { ...before.characterOnSinceMicros };
    for (const characterId of before.offForCharacterIds) if (!offFor.includes(characterId)) characterOnSinceMicros[characterId] = nowMicros;
    const clean: LearningChoice = {
      off: choice.off,
      offForCharacterIds: offFor,
      ...(before.off && !choice.off ? { onSinceMicros: nowMicros } : before.onSinceMicros === undefined ? {} : { onSinceMicros: before.onSinceMicros }),
      characterOnSinceMicros,
    };
    await this.store.facts.set(personKey(accountId), clean);
    return clean;
  }

  /** Whether a message the person said at `saidMicros` may teach `characterId`. */
  async learningOn(accountId: string, characterId: string, saidMicros = Number.POSITIVE_INFINITY): Promise<boolean> {
    return learnable(await this.choice(accountId), characterId, saidMicros);
  }

  async learnsFromOwner(characterId: string): Promise<boolean> {
    return (await this.store.facts.get<{ fromOwner: boolean }>(characterKey(characterId)))?.fromOwner ?? true;
  }

  async setLearnsFromOwner(characterId: string, fromOwner: boolean): Promise<void> {
    await this.store.facts.set(characterKey(characterId), { fromOwner });
  }
}

/** A choice applied to one message: on now, and the message said after learning was last turned on. */
export function learnable(choice: LearningChoice, characterId: string, saidMicros: number): boolean {
  if (choice.off || choice.offForCharacterIds.includes(characterId)) return false;
  return saidMicros >= (choice.onSinceMicros ?? 0) && saidMicros >= (choice.characterOnSinceMicros?.[characterId] ?? 0);
}
