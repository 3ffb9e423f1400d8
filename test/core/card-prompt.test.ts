import { describe, expect, it } from 'vitest';
import { cardTexts, exampleBlocks, fitExamples, ourInstruction } from '../../src/core/card-prompt.js';
import { systemPrompt } from '../../src/core/prompt.js';
import { type CharacterDefinition, type CharacterRecord, emptyCharacterDefinition } from '../../src/core/records.js';

const character = { name: 'Ada Lovelace', description: '{{char}} writes programs for {{user}}.', personalitySummary: 'Curious <BOT>.' } as CharacterRecord;
const definition = (fields: Partial<CharacterDefinition>): CharacterDefinition => ({ ...emptyCharacterDefinition, ...fields });
const values = { character: 'Ada', user: 'Sam' };

describe('cardTexts', () => {
  it('expands macros in every card text, with the nickname the caller chose', () => {
    const texts = cardTexts(character, definition({ scenario: '{{user}} visits {{char}}.', exampleDialogue: '<START>\n{{user}}: hi\n{{char}}: hello', postHistoryInstructions: 'Stay as {{char}}.' }), values);
    expect(texts.description).toBe('Ada writes programs for Sam.');
    expect(texts.personality).toBe('Curious Ada.');
    expect(texts.scenario).toBe('Sam visits Ada.');
    expect(texts.examples).toEqual(['Sam: hi\nAda: hello']);
    expect(texts.postHistory).toBe('Stay as Ada.');
  });

  it('puts our opening where the card system prompt says {{original}}, and ours stays when it has none', () => {
    expect(cardTexts(character, definition({ systemPrompt: 'Be vivid. {{original}}' }), values).instruction).toBe(`Be vivid. ${ourInstruction(character)}`);
    expect(cardTexts(character, definition({ systemPrompt: '  ' }), values).instruction).toBeUndefined();
    expect(cardTexts(character, definition({ postHistoryInstructions: 'A{{original}}B' }), values).postHistory).toBe('AB');
  });

  it("reads the card's Character's Note (extensions.depth_prompt), with SillyTavern's defaults, and nothing from a card without one", () => {
    const note = (extensions: unknown) => cardTexts(character, definition({ extensionsJson: JSON.stringify(extensions) }), values).characterNote;
    expect(note({ depth_prompt: { prompt: '{{char}} fears water.', depth: 2, role: 'user' } })).toEqual({ text: 'Ada fears water.', depth: 2, role: 'user' });
    expect(note({ depth_prompt: { prompt: 'Whispers.' } })).toEqual({ text: 'Whispers.', depth: 4, role: 'system' });
    expect(note({ depth_prompt: { prompt: '  ', depth: 1 } })).toBeUndefined();
    expect(note({ depth_prompt: 'not an object' })).toBeUndefined();
    expect(note({ depth_prompt: { prompt: 'x', depth: -3, role: 'narrator' } })).toEqual({ text: 'x', depth: 4, role: 'system' });
    expect(note({ other: 1 })).toBeUndefined();
  });

  it('never carries the creator notes', () => {
    const texts = cardTexts(character, definition({ creatorNotes: 'SECRET NOTES' }), values);
    const prompt = systemPrompt(character, [], undefined, [], undefined, { ...texts, loreBefore: [], loreAfter: [], examples: texts.examples });
    expect(JSON.stringify(texts)).not.toContain('SECRET');
    expect(prompt).not.toContain('SECRET');
  });
});

describe('systemPrompt with a card', () => {
  it('orders instruction, lore before, description, personality, scenario, lore after, memories, examples', () => {
    const prompt = systemPrompt(character, [{ id: 'm', text: 'Likes tea', createdMicros: 0 }], 'Talked of engines.', [], undefined, {
      instruction: 'CARD INSTRUCTION',
      description: 'DESCRIPTION',
      personality: 'PERSONALITY',
      scenario: 'SCENARIO',
      loreBefore: ['LORE BEFORE'],
      loreAfter: ['LORE AFTER'],
      examples: ['Sam: hi\nAda: EXAMPLE'],
    });
    const order = ['CARD INSTRUCTION', 'LORE BEFORE', 'DESCRIPTION', 'PERSONALITY', 'SCENARIO', 'LORE AFTER', 'Likes tea', 'Talked of engines', '<START>\nSam: hi\nAda: EXAMPLE'].map((text) => prompt.indexOf(text));
    expect(order.every((place) => place >= 0)).toBe(true);
    expect([...order].sort((left, right) => left - right)).toEqual(order);
    expect(prompt).not.toContain('You are Ada Lovelace');
  });
});

describe('example dialogue', () => {
  it('splits into <START> blocks, whatever the case, leaving out empty ones', () => {
    expect(exampleBlocks('<START>\nA: one\n<start>\n\n<START>B: two  ')).toEqual(['A: one', 'B: two']);
    expect(exampleBlocks('A: no marker')).toEqual(['A: no marker']);
    expect(exampleBlocks('')).toEqual([]);
  });

  it('keeps whole blocks from the first while they fit, dropping from the last', async () => {
    const counter = { count: async (texts: readonly string[]) => texts.map((text) => text.length) };
    const blocks = ['x'.repeat(10), 'y'.repeat(10), 'z'.repeat(10)];
    const heading = (await counter.count(['Examples of how you speak (their style only; they did not happen in this conversation):']))[0]! + 2;
    const block = 10 + '<START>\n'.length + 1;
    expect((await fitExamples(counter, blocks, heading + 2 * block)).blocks).toEqual(blocks.slice(0, 2));
    expect((await fitExamples(counter, blocks, heading + 2 * block - 1)).blocks).toEqual(blocks.slice(0, 1));
    expect(await fitExamples(counter, blocks, heading + block - 1)).toEqual({ blocks: [], tokens: 0 });
    expect((await fitExamples(counter, blocks, 10_000)).tokens).toBe(heading + 3 * block);
  });
});
