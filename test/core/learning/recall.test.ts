import { describe, expect, it } from 'vitest';
import { LearnedRecall } from '../../../src/core/learning/recall.js';
import type { Embedder } from '../../../src/core/ports.js';
import type { CharacterRecord, LearnedMemoryRecord, MemoryOrigin } from '../../../src/core/records.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';

const day = 86_400_000_000;
const now = 400 * day;
const fact = (id: string, text: string, importance: number, ageDays: number, origin: MemoryOrigin = 'private'): LearnedMemoryRecord => ({
  id,
  characterId: 'character',
  subjectAccountId: 'ana',
  kind: 'person',
  text,
  status: 'active',
  origin,
  conversationId: 'c0',
  messageIds: [],
  importance,
  statedMicros: now - ageDays * day,
  createdMicros: now - ageDays * day,
  updatedMicros: now - ageDays * day,
  supersededMicros: null,
  supersededBy: null,
});

const facts = [
  fact('boat', "ana's boat is called Gull.", 2, 200),
  fact('job', 'ana starts a new job on Monday.', 5, 1),
  fact('sister', "ana's sister is called Mia.", 3, 30),
  fact('dm', 'ana told a secret in a DM.', 5, 0, 'private'),
  fact('server', 'ana likes the harbour bar.', 1, 10, 'server:g1'),
];

/** The two repository calls recall makes, over the facts above, filtering as the store does. */
function store(): RepositoryStore {
  return {
    discordLinks: { forConversation: async () => undefined },
    discordChannels: { guildOfConversation: async () => undefined },
    learnedMemories: {
      recallable: async (_character: string, _subject: string, origins?: readonly MemoryOrigin[]) => facts.filter((each) => origins === undefined || origins.includes(each.origin)),
    },
  } as unknown as RepositoryStore;
}

/** Meaning, roughly: "vessel" and "boat" point the same way, everything else elsewhere. */
const embedder: Embedder = {
  modelId: 'test-embeddings',
  embed: async (texts) => texts.map((text) => (/boat|vessel/i.test(text) ? [1, 0] : [0, 1])),
};

const character = { id: 'character', accountId: 'owner' } as CharacterRecord;
const clock = { nowMillis: () => now / 1000, nowMicros: () => now };
const answeredAna = { participantType: 'account' as const, participantId: 'ana' };

describe('recalling what a character learned', () => {
  it('ranks by words, then importance and recency', async () => {
    const recalled = await new LearnedRecall(store(), clock).about(character, { id: 'c1', speakerAccountIds: ['ana'] }, answeredAna, 'Tell me about my sister', 2);
    expect(recalled?.facts.map((each) => each.id)).toEqual(['sister', 'dm']);
  });

  it('fuses meaning when embeddings are configured: a fact with no word in common comes first', async () => {
    const recalled = await new LearnedRecall(store(), clock, embedder).about(character, { id: 'c1', speakerAccountIds: ['ana'] }, answeredAna, 'How is your vessel?', 1);
    expect(recalled?.facts.map((each) => each.id)).toEqual(['boat']);
    const wordsOnly = await new LearnedRecall(store(), clock).about(character, { id: 'c1', speakerAccountIds: ['ana'] }, answeredAna, 'How is your vessel?', 1);
    expect(wordsOnly?.facts.map((each) => each.id)).not.toEqual(['boat']);
  });

  it("recalls nothing for another speaker's message, and only the shared place's memories there", async () => {
    const shared = { id: 'c2', speakerAccountIds: ['ana', 'bo'] };
    expect(await new LearnedRecall(store(), clock).about(character, shared, { participantType: 'account', participantId: 'cy' }, 'hi', 5)).toBeUndefined();
    // In a shared API conversation only memories learned there are usable: none of these.
    expect(await new LearnedRecall(store(), clock).about(character, shared, answeredAna, 'hi', 5)).toBeUndefined();
  });
});
