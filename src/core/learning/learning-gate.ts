/**
 * Whom a person's message may never teach, judged when it is stored: every character while
 * learning is off (`LEARNING=off`, or the person turned it off everywhere), and the characters
 * of the conversation the person turned it off for. The message is marked so in the same
 * transaction as it is stored, so turning learning on later never learns it, whatever the
 * clocks of the processes say.
 */
import type { RepositoryStore } from '../repositories.js';
import { LearningSettings } from './learning-settings.js';

/** Every character, or those characters only (none: it may teach all). */
export type LearningExclusion = 'all' | readonly string[];

export class LearningGate {
  readonly #settings: LearningSettings;

  constructor(
    private readonly store: RepositoryStore,
    /** `LEARNING=on`. */
    private readonly enabled: boolean,
  ) {
    this.#settings = new LearningSettings(store);
  }

  async excluded(conversationId: string, authorAccountId: string): Promise<LearningExclusion> {
    if (!this.enabled) return 'all';
    const choice = await this.#settings.choice(authorAccountId);
    if (choice.off) return 'all';
    if (choice.offForCharacterIds.length === 0) return [];
    const characterIds = await this.store.conversations.characters(conversationId);
    return characterIds.filter((characterId) => choice.offForCharacterIds.includes(characterId));
  }
}
