import { describe, expect, it } from 'vitest';
import type { FileStore } from '../../src/core/ports.js';
import { buildHistory, estimateTokens, imagePlaceholders, imageTokens, systemPrompt } from '../../src/core/prompt.js';
import type { AccountRecord, CharacterRecord, MessageRecord } from '../../src/core/records.js';

const files: FileStore = {
  put: async () => {
    throw new Error('not used');
  },
  keyOf: () => {
    throw new Error('not used');
  },
  read: async (key) => (key === 'photo.png' ? Buffer.from('png-bytes') : undefined),
  typeOf: (key) => (key.endsWith('.png') ? 'image/png' : undefined),
  remove: async () => {
    throw new Error('not used');
  },
};

function account(id: string, username: string): AccountRecord {
  return {
    id,
    username,
    createdMillis: 0,
    isVerified: false,
    isDisabled: false,
    isSubscribed: false,
    meta: { dateOfBirth: null, referredByAccountId: null },
    tags: [],
    characterId: 'c',
    profilePictureUrl: null,
  };
}

let sequence = 0;
function message(participantId: string, content: string, extra: Partial<MessageRecord> = {}): MessageRecord {
  sequence++;
  return {
    id: `m${sequence}`,
    content,
    mimeType: 'text/plain',
    participantId,
    participantType: participantId === 'character' ? 'character' : 'account',
    createdMicros: sequence,
    file: null,
    ...extra,
  };
}

describe('systemPrompt', () => {
  it('holds the name, description, personality and memories', () => {
    const character = {
      name: 'Ada',
      description: 'A mathematician.',
      personalitySummary: 'Curious and precise.',
    } as CharacterRecord;
    const prompt = systemPrompt(character, [{ id: '1', text: 'Likes tea', createdMicros: 0 }]);
    expect(prompt).toContain('You are Ada.');
    expect(prompt).toContain('A mathematician.');
    expect(prompt).toContain('Curious and precise.');
    expect(prompt).toContain('- Likes tea');
  });
});

const textCost = (entry: MessageRecord) => estimateTokens(entry.content);

describe('imageTokens', () => {
  it('counts an image from its real size, the larger of tiles and 28-pixel patches', () => {
    // 1024²: OpenAI scales to 768², 4 tiles: 765; patches: 37² = 1369.
    expect(imageTokens(1024, 1024)).toBe(1369);
    // 512×256: one tile (255) against 19×10 patches (190).
    expect(imageTokens(512, 256)).toBe(255);
    expect(imageTokens()).toBe(imageTokens(1024, 1024));
  });
});

describe('buildHistory', () => {
  const alice = account('alice', 'alice');
  const bob = account('bob', 'bob');

  it('keeps the newest messages that fit the budget, oldest first', async () => {
    const messages = Array.from({ length: 10 }, (_, index) =>
      message(index % 2 === 0 ? 'alice' : 'character', `message number ${index} ${'x'.repeat(30)}`),
    );
    const perMessage = estimateTokens(messages[0]!.content);
    const { messages: history, kept } = await buildHistory([...messages].reverse(), {
      budget: perMessage * 3 + 1,
      textCost,
      seeImages: true,
      accounts: new Map([['alice', alice]]),
      files,
    });
    expect(kept).toBe(3);
    expect(history.map((turn) => turn.content)).toEqual(messages.slice(7).map((entry) => entry.content));
    expect(history.map((turn) => turn.role)).toEqual(['assistant', 'user', 'assistant']);
  });

  it('names speakers and merges consecutive turns when several people talk', async () => {
    const messages = [message('alice', 'hi'), message('bob', 'hello'), message('character', 'welcome both')];
    const { messages: history } = await buildHistory([...messages].reverse(), {
      budget: 10_000,
      textCost,
      seeImages: true,
      accounts: new Map([
        ['alice', alice],
        ['bob', bob],
      ]),
      files,
    });
    expect(history).toEqual([
      { role: 'user', content: 'alice: hi\n\nbob: hello' },
      { role: 'assistant', content: 'welcome both' },
    ]);
  });

  it("in a scene, keeps the answerer's lines as assistant turns and heads the others' with their names", async () => {
    const line = (characterId: string, content: string) => message(characterId, content, { participantType: 'character' });
    const messages = [message('alice', 'hello all'), line('ann', 'hi, I am Ann'), line('ben', 'Ben here'), line('gone', 'I left'), message('alice', 'Ben, go on')];
    const { messages: history } = await buildHistory([...messages].reverse(), {
      budget: 10_000,
      textCost,
      seeImages: true,
      accounts: new Map([['alice', alice]]),
      answererId: 'ben',
      characterNames: new Map([
        ['ann', 'Ann'],
        ['ben', 'Ben'],
      ]),
      labelPeople: true,
      files,
    });
    expect(history).toEqual([
      { role: 'user', content: 'alice: hello all\n\nAnn: hi, I am Ann' },
      { role: 'assistant', content: 'Ben here' },
      { role: 'user', content: 'Another character: I left\n\nalice: Ben, go on' },
    ]);
    const system = systemPrompt({ name: 'Ben', description: '', personalitySummary: '' } as CharacterRecord, [], undefined, ['Ann']);
    expect(system).toContain('Also in this scene: Ann.');
  });

  it('sends images as image parts', async () => {
    const photo = message('alice', '', { mimeType: 'image/png', file: { key: 'photo.png', mimeType: 'image/png' } });
    const { messages: history } = await buildHistory([message('alice', 'what is this?'), photo], {
      budget: 10_000,
      textCost,
      seeImages: true,
      accounts: new Map([['alice', alice]]),
      files,
    });
    expect(history).toHaveLength(1);
    const content = history[0]!.content;
    expect(Array.isArray(content)).toBe(true);
    expect(content).toContainEqual({ type: 'image', mimeType: 'image/png', data: Buffer.from('png-bytes') });
    expect(content).toContainEqual({ type: 'text', text: 'what is this?' });
  });

  it('always keeps the newest message, even over the budget', async () => {
    const newest = message('alice', 'x'.repeat(3000));
    const { messages: history, kept } = await buildHistory([newest, message('character', 'older')], {
      budget: 10,
      textCost,
      seeImages: true,
      accounts: new Map([['alice', alice]]),
      files,
    });
    expect(kept).toBe(1);
    expect(history).toEqual([{ role: 'user', content: newest.content }]);
  });

  it('keeps an image that does not fit as a placeholder that says so, and never sends pixels a model cannot see', async () => {
    const photo = message('alice', '', { mimeType: 'image/png', file: { key: 'photo.png', mimeType: 'image/png', width: 1024, height: 1024 } });
    const newest = message('alice', 'and now?');
    const options = { budget: 200, textCost, seeImages: true, accounts: new Map([['alice', alice]]), files };
    const small = await buildHistory([newest, photo], options);
    expect(small.withImages).toBe(false);
    expect(small.messages).toEqual([{ role: 'user', content: `${imagePlaceholders.older}\n\nand now?` }]);
    const blind = await buildHistory([newest, photo], { ...options, budget: 10_000, seeImages: false });
    expect(blind.messages).toEqual([{ role: 'user', content: `${imagePlaceholders.unseen}\n\nand now?` }]);
    const seen = await buildHistory([newest, photo], { ...options, budget: 10_000 });
    expect(seen.withImages).toBe(true);
  });
});
