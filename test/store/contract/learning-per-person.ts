import { describe, expect, it } from 'vitest';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import type { ContractContext } from './contract-context.js';

/**
 * Learning per person and character (issue 28): a reservation of the character's budget and
 * each person's share is all or none, held to both limits by the database across processes,
 * and corrected to what the engine reported; a person is told once that a character learns.
 */
export function learningPerPersonContract(context: ContractContext): void {
  const { createAccount } = context;
  const day = '2026-11-26';
  const limits = { character: 1_000, person: 400 };

  describe('learning per person', () => {
    it('reserves the character and each person all or none, within both limits', async () => {
      const store = context.store();
      const [owner, ana, bo] = [await createAccount('owner'), await createAccount('ana'), await createAccount('bo')];
      const characterId = owner.character.id;
      const spend = (people: Array<[string, number]>, from: RepositoryStore = store) =>
        from.learningPerPerson.reserve(day, { characterId, tokens: people.reduce((sum, [, tokens]) => sum + tokens, 0), people: people.map(([accountId, tokens]) => ({ accountId, tokens })) }, limits);
      expect(await spend([[ana.account.id, 300]])).toEqual({ reserved: true });
      // Ana's share would pass her 400: nothing of it is kept, Bo's part neither.
      expect(await spend([[ana.account.id, 150], [bo.account.id, 100]], context.other())).toEqual({ reserved: false, character: false, people: [ana.account.id] });
      expect(await store.learningPerPerson.spent(day, characterId)).toBe(300);
      expect(await store.learningPerPerson.spent(day, characterId, bo.account.id)).toBe(0);
      expect(await spend([[ana.account.id, 100], [bo.account.id, 400]])).toEqual({ reserved: true });
      expect(await spend([[bo.account.id, 1]])).toEqual({ reserved: false, character: false, people: [bo.account.id] });
      // The character's 1,000: 800 spent, so 201 more is short for it, however little each person's share.
      const carol = await createAccount('carol');
      expect(await spend([[carol.account.id, 201]])).toEqual({ reserved: false, character: true, people: [] });
      expect(await spend([[carol.account.id, 200]])).toEqual({ reserved: true });
      expect(await store.learningPerPerson.spent(day, characterId)).toBe(1_000);
      expect(await store.learningPerPerson.spent(day, characterId, ana.account.id)).toBe(400);
      expect(await store.learningPerPerson.spent('2026-11-27', characterId, ana.account.id)).toBe(0);
    });

    it('holds the limits against concurrent reservations from two processes', async () => {
      const [owner, ana, bo] = [await createAccount('owner'), await createAccount('ana'), await createAccount('bo')];
      const characterId = owner.character.id;
      // Each asks for 50 of the character's 1,000 and 25 of each person's 400: at most 16 fit.
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, index) =>
          (index % 2 ? context.other() : context.store()).learningPerPerson.reserve(
            day,
            { characterId, tokens: 50, people: index % 3 ? [{ accountId: ana.account.id, tokens: 25 }, { accountId: bo.account.id, tokens: 25 }] : [{ accountId: bo.account.id, tokens: 25 }, { accountId: ana.account.id, tokens: 25 }] },
            limits,
          ),
        ),
      );
      const reserved = results.filter((result) => result.reserved).length;
      expect(reserved).toBe(16);
      const store = context.store();
      expect(await store.learningPerPerson.spent(day, characterId)).toBe(800);
      expect(await store.learningPerPerson.spent(day, characterId, ana.account.id)).toBe(400);
      expect(await store.learningPerPerson.spent(day, characterId, bo.account.id)).toBe(400);
    });

    it('corrects a reservation to what was reported, never below zero', async () => {
      const store = context.store();
      const [owner, ana] = [await createAccount('owner'), await createAccount('ana')];
      const characterId = owner.character.id;
      expect(await store.learningPerPerson.reserve(day, { characterId, tokens: 400, people: [{ accountId: ana.account.id, tokens: 400 }] }, limits)).toEqual({ reserved: true });
      await context.other().learningPerPerson.correct(day, { characterId, tokens: -324, people: [{ accountId: ana.account.id, tokens: -324 }] });
      expect(await store.learningPerPerson.spent(day, characterId)).toBe(76);
      expect(await store.learningPerPerson.spent(day, characterId, ana.account.id)).toBe(76);
      // Room again for what the correction gave back.
      expect(await store.learningPerPerson.reserve(day, { characterId, tokens: 324, people: [{ accountId: ana.account.id, tokens: 324 }] }, limits)).toEqual({ reserved: true });
      await store.learningPerPerson.correct(day, { characterId, tokens: -5_000, people: [{ accountId: ana.account.id, tokens: -5_000 }] });
      expect(await store.learningPerPerson.spent(day, characterId, ana.account.id)).toBe(0);
      // More than reserved is charged too, past the limit.
      await store.learningPerPerson.correct(day, { characterId, tokens: 450, people: [{ accountId: ana.account.id, tokens: 450 }] });
      expect(await store.learningPerPerson.spent(day, characterId, ana.account.id)).toBe(450);
      await expect(store.learningPerPerson.reserve(day, { characterId, tokens: -1, people: [] }, limits)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    });

    it('tells a person once per character, across processes', async () => {
      const [owner, ana] = [await createAccount('owner'), await createAccount('ana')];
      const told = await Promise.all(Array.from({ length: 8 }, (_, index) => (index % 2 ? context.other() : context.store()).learningPerPerson.tellOnce(ana.account.id, owner.character.id, 1)));
      expect(told.filter(Boolean)).toHaveLength(1);
      expect(await context.store().learningPerPerson.tellOnce(ana.account.id, ana.character.id, 1)).toBe(true);
      expect(await context.store().learningPerPerson.tellOnce(owner.account.id, owner.character.id, 1)).toBe(true);
    });
  });
}
