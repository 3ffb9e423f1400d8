import { describe, expect, it } from 'vitest';
import { LearningSettings } from '../../../src/core/learning/learning-settings.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';

/** The facts the settings keep, in a map: the only repository they use. */
function store(): RepositoryStore {
  const facts = new Map<string, unknown>();
  return { facts: { get: async (key: string) => facts.get(key), set: async (key: string, value: unknown) => void facts.set(key, value), delete: async (key: string) => void facts.delete(key) } } as unknown as RepositoryStore;
}

describe("a person's learning choice", () => {
  it('is on by default, off everywhere or per character when asked', async () => {
    const settings = new LearningSettings(store());
    expect(await settings.learningOn('ana', 'ship')).toBe(true);
    await settings.setChoice('ana', { off: false, offForCharacterIds: ['ship'] }, 10);
    expect(await settings.learningOn('ana', 'ship')).toBe(false);
    expect(await settings.learningOn('ana', 'lighthouse')).toBe(true);
    await settings.setChoice('ana', { off: true, offForCharacterIds: [] }, 20);
    expect(await settings.learningOn('ana', 'lighthouse')).toBe(false);
  });

  it('never learns what was said while it was off, even once it is back on before the batch runs', async () => {
    const settings = new LearningSettings(store());
    await settings.setChoice('ana', { off: true, offForCharacterIds: [] }, 100);
    await settings.setChoice('ana', { off: false, offForCharacterIds: [] }, 200);
    expect(await settings.learningOn('ana', 'ship', 150)).toBe(false);
    expect(await settings.learningOn('ana', 'ship', 250)).toBe(true);
    // Per character the same.
    await settings.setChoice('ana', { off: false, offForCharacterIds: ['ship'] }, 300);
    await settings.setChoice('ana', { off: false, offForCharacterIds: [] }, 400);
    expect(await settings.learningOn('ana', 'ship', 350)).toBe(false);
    expect(await settings.learningOn('ana', 'lighthouse', 350)).toBe(true);
    expect(await settings.learningOn('ana', 'ship', 450)).toBe(true);
  });
});
