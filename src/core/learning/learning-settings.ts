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
}

const personKey = (accountId: string) => `learning:person:${accountId}`;
const characterKey = (characterId: string) => `learning:character:${characterId}`;

export class LearningSettings {
  constructor(private readonly store: RepositoryStore) {}

  async choice(accountId: string): Promise<LearningChoice> {
    return (await this.store.facts.get<LearningChoice>(personKey(accountId))) ?? { off: false, offForCharacterIds: [] };
  }

  async setChoice(accountId: string, choice: LearningChoice): Promise<LearningChoice> {
    const clean = { off: choice.off, offForCharacterIds: [...new Set(choice.offForCharacterIds)].slice(0, 1000) };
    await this.store.facts.set(personKey(accountId), clean);
    return clean;
  }

  async learningOn(accountId: string, characterId: string): Promise<boolean> {
    const choice = await this.choice(accountId);
    return !choice.off && !choice.offForCharacterIds.includes(characterId);
  }

  async learnsFromOwner(characterId: string): Promise<boolean> {
    return (await this.store.facts.get<{ fromOwner: boolean }>(characterKey(characterId)))?.fromOwner ?? true;
  }

  async setLearnsFromOwner(characterId: string, fromOwner: boolean): Promise<void> {
    await this.store.facts.set(characterKey(characterId), { fromOwner });
  }
}
