import { afterEach, describe, expect, it } from 'vitest';
import type { LorebookEntry, LorebookSettings } from '../../../src/core/lorebook/lorebook.js';
import { book, entry } from './book.js';
import { type PromptHarness, startPromptHarness } from './prompt-harness.js';

/** What the engine received, as one text per message. */
const texts = (messages: { role: string; content?: unknown }[]) => messages.map((message) => `${message.role}: ${typeof message.content === 'string' ? message.content : JSON.stringify(message.content)}`);

describe('the prompt with a card and its lorebook (fake engine)', () => {
  let harness: PromptHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  async function open(entries: LorebookEntry[] = [], settings: Partial<LorebookSettings> = {}, contextTokens = 8192) {
    harness = await startPromptHarness({ contextTokens, maxReplyTokens: 256, random: () => 0 });
    await harness.card({}, book(entries, settings), { description: 'A keeper of old stories.' });
    return harness;
  }

  it('holds the card: its system prompt with ours as {{original}}, scenario, examples, post-history last; never the creator notes', async () => {
    const { card, say } = await open();
    await card(
      {
      nickname: 'Addie',
      systemPrompt: 'Write vividly. {{original}}',
      scenario: '{{user}} meets {{char}} at the {{random:harbour,tower}}.',
      exampleDialogue: '<START>\n{{user}}: Hello?\n{{char}}: Hello, <USER>.',
      postHistoryInstructions: 'Reply as {{char}} in two sentences.{{original}}',
      creatorNotes: 'SECRET CREATOR NOTES',
      },
      undefined,
      { description: '{{char}} keeps the harbour light.' },
    );
    const { messages } = await say('Hi there');
    const system = String(messages[0]!.content);
    expect(messages[0]!.role).toBe('system');
    expect(system).toMatch(/^Write vividly\. You are .+\. Stay in character/);
    expect(system).toContain('About you: Addie keeps the harbour light.');
    expect(system).toContain('Scenario: Sam meets Addie at the harbour.');
    expect(system).toContain('<START>\nSam: Hello?\nAddie: Hello, Sam.');
    expect(JSON.stringify(messages)).not.toContain('SECRET');
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'Hi there\n\nReply as Addie in two sentences.' });
  });

  it('drops the example dialogue, last block first, before any older history', async () => {
    const { card, say } = await open([], {}, 700);
    const block = (index: number) => `{{user}}: example ${index} ${'word '.repeat(40)}\n{{char}}: answer ${index}`;
    await card({ exampleDialogue: [0, 1, 2].map((index) => `<START>\n${block(index)}`).join('\n') });
    const first = await say('Hello');
    expect(String(first.messages[0]!.content)).toContain('answer 2');
    const counts: number[] = [];
    let previous = 3;
    for (let turn = 0; turn < 12; turn++) {
      const { messages } = await say(`Turn ${turn}: ${'talk '.repeat(25)}`);
      const system = String(messages[0]!.content);
      const shown = [0, 1, 2].filter((index) => system.includes(`answer ${index}`));
      // Whole blocks, from the first: the last goes first.
      expect(shown).toEqual([0, 1, 2].slice(0, shown.length));
      expect(shown.length).toBeLessThanOrEqual(previous);
      previous = shown.length;
      counts.push(shown.length);
      // While any example is still there, no history has been dropped: the first message is still sent.
      if (shown.length > 0) expect(texts(messages).some((text) => text.includes('user: Hello')), `turn ${turn}`).toBe(true);
    }
    expect(counts.at(-1)).toBe(0);
    expect(new Set(counts).size).toBeGreaterThan(1);
  });

  it('activates entries by key, secondary logic and regex, at their positions, and records them for the owner only', async () => {
    const before = entry({ keys: ['lighthouse'], content: 'LORE-BEFORE about {{char}}.' });
    const after = entry({ keys: ['/\\bstorms?\\b/i'], position: 'after_character', content: 'LORE-AFTER.' });
    const secondary = entry({ keys: ['lighthouse'], secondaryKeys: ['keeper'], secondaryLogic: 'not_any', content: 'LORE-NOT-ANY.' });
    const atDepth = entry({ keys: ['lighthouse'], position: 'at_depth', depth: 0, role: 'system', content: 'LORE-DEPTH.' });
    const unrelated = entry({ keys: ['castle'], content: 'LORE-CASTLE.' });
    const { say, core, actor, conversationId, store } = await open([before, after, secondary, atDepth, unrelated]);
    const { messages, replyId } = await say('The lighthouse in the STORM');
    const system = String(messages[0]!.content);
    expect(system.indexOf('LORE-BEFORE')).toBeLessThan(system.indexOf('About you'));
    expect(system.indexOf('LORE-AFTER')).toBeGreaterThan(system.indexOf('About you'));
    expect(system).toContain('LORE-NOT-ANY');
    expect(system).not.toContain('LORE-CASTLE');
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'The lighthouse in the STORM\n\nLORE-DEPTH.' });
    const used = await core.lorebookUse.usedBy(actor, conversationId, replyId);
    expect(used.map((each) => each.id).sort()).toEqual([before.id, after.id, secondary.id, atDepth.id].sort());

    const { messages: next } = await say('Ask the lighthouse keeper');
    expect(String(next[0]!.content)).not.toContain('LORE-NOT-ANY');

    const { account } = await core.accounts.create({ type: 'admin' }, { username: 'Stranger' });
    // A second person in the conversation reads the reply, not what the character's lorebook told it.
    await store.conversations.addSpeaker(conversationId, account.id, Date.now() * 1000);
    await expect(core.lorebookUse.usedBy({ type: 'account', accountId: account.id }, conversationId, replyId)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await core.lorebookUse.usedBy({ type: 'admin' }, conversationId, replyId)).toHaveLength(4);
  });

  it('scans the last two messages by default, each headed by its speaker', async () => {
    const named = entry({ keys: ['Sam'], content: 'LORE-SPEAKER.' });
    const deep = entry({ keys: ['lighthouse'], content: 'LORE-DEEP.' });
    const { say } = await open([named, deep]);
    expect(String((await say('the lighthouse')).messages[0]!.content)).toContain('LORE-DEEP');
    // Two messages later (this one and the reply before it), the word has left the scan.
    const { messages } = await say('something else');
    expect(String(messages[0]!.content)).toContain('LORE-SPEAKER');
    expect(String(messages[0]!.content)).not.toContain('LORE-DEEP');
  });

  it('puts constant entries first into the budget and follows recursion when the book says so', async () => {
    const constant = entry({ constant: true, priority: 0, content: `LORE-CONSTANT ${'fact '.repeat(120)}` });
    const keyed = entry({ keys: ['castle'], priority: 100, content: `LORE-KEYED ${'fact '.repeat(120)} duke` });
    const recursive = entry({ keys: ['duke'], content: 'LORE-RECURSIVE.' });
    // 25 % of 1,200 tokens: the constant entry fits, the keyed one no longer does.
    const { say } = await open([keyed, constant, recursive], { recursiveScanning: true }, 1200);
    const system = String((await say('The castle')).messages[0]!.content);
    expect(system).toContain('LORE-CONSTANT');
    expect(system).not.toContain('LORE-KEYED');
    expect(system).not.toContain('LORE-RECURSIVE');
  });

  it('lets lorebook entries give way when the character itself fills the system prompt, instead of refusing to answer', async () => {
    const constant = entry({ constant: true, content: `LORE-LARGE ${'fact '.repeat(95)}` });
    const { say, card, core, actor, conversationId } = await open([constant], {}, 700);
    await card({}, undefined, { description: 'word '.repeat(180) });
    const { messages, replyId } = await say('Hello');
    expect(String(messages[0]!.content)).not.toContain('LORE-LARGE');
    expect(await core.lorebookUse.usedBy(actor, conversationId, replyId)).toEqual([]);
  });

  it('follows recursion through an activated entry within its steps', async () => {
    const castle = entry({ keys: ['castle'], content: 'The castle belongs to the duke.' });
    const duke = entry({ keys: ['duke'], content: 'LORE-RECURSIVE: the duke fears the witch.' });
    const witch = entry({ keys: ['witch'], content: 'LORE-STEP-TWO.' });
    const { say } = await open([castle, duke, witch], { recursiveScanning: true, maxRecursionSteps: 1 });
    const system = String((await say('The castle')).messages[0]!.content);
    expect(system).toContain('LORE-RECURSIVE');
    expect(system).not.toContain('LORE-STEP-TWO');
  });
});
