import type { Clock } from './ports.js';
import type { ChatModelTraitsRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';

const traitsFact = (modelId: string) => `chat-model-traits:${modelId}`;

/**
 * What the chat engine taught us about its model, kept in the store so every process knows:
 * that it cannot see images, and that its context is smaller than configured (the engine
 * refused a prompt, or cut one by context shift).
 */
export class ModelTraits {
  constructor(
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
    private readonly modelId: string,
    /**
     * The configured context, or how to read it when it is known only once the engine is up
     * (the embedded engine's slot size); a learned one never goes below half of it.
     */
    private readonly configured: number | (() => number),
  ) {}

  private get contextTokens(): number {
    return typeof this.configured === 'number' ? this.configured : this.configured();
  }

  async read(): Promise<{ seeImages: boolean; contextTokens: number }> {
    const traits = await this.store.facts.get<ChatModelTraitsRecord>(traitsFact(this.modelId));
    return {
      seeImages: !(traits?.cannotSeeImages ?? false),
      contextTokens: Math.min(this.contextTokens, traits?.contextTokens ?? this.contextTokens),
    };
  }

  cannotSeeImages(): Promise<void> {
    return this.#update((traits) => ({ ...traits, cannotSeeImages: true }));
  }

  /** Lowers the context used for prompts by a sixth, down to half the configured one (when the engine does not say its own). */
  shrinkContext(): Promise<void> {
    return this.#update((traits) => {
      const current = traits.contextTokens ?? this.contextTokens;
      const smaller = Math.max(Math.ceil(this.contextTokens / 2), Math.floor((current * 5) / 6));
      return { ...traits, contextTokens: Math.min(current, smaller) };
    });
  }

  /** The context the engine itself reported (llama-server's per-slot n_ctx), when below the configured one. */
  learnContext(contextTokens: number): Promise<void> {
    return this.#update((traits) => ({ ...traits, contextTokens: Math.min(contextTokens, traits.contextTokens ?? this.contextTokens) }));
  }

  #update(change: (traits: ChatModelTraitsRecord) => ChatModelTraitsRecord): Promise<void> {
    const key = traitsFact(this.modelId);
    // Read and written in one transaction, so two processes learning at once keep both lessons.
    return this.store.transaction(async ({ facts }) => {
      const current = (await facts.get<ChatModelTraitsRecord>(key)) ?? { modelId: this.modelId, cannotSeeImages: false, contextTokens: null, updatedMicros: 0 };
      await facts.set(key, { ...change(current), updatedMicros: this.clock.nowMicros() });
    });
  }
}
