import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import type { FakeMessage } from '../fakes/discord/driver.js';
import { type BotHarness, startBotHarness } from './harness.js';
import { clearedPart } from '../../src/bot/replies/in-place-reply.js';
import { cutMarker } from '../../src/bot/replies/split-message.js';

/** The custom ids under a message, and the label of its position button ("2/3"). */
function buttons(message: FakeMessage): { ids: string[]; position: string | undefined; previousDisabled: boolean } {
  const components = (message.components ?? []).flatMap((row) => ('components' in row ? (row.components as unknown as Array<Record<string, unknown>>) : []));
  const ids = components.map((component) => String(component['custom_id']));
  const position = components.find((component) => typeof component['label'] === 'string')?.['label'] as string | undefined;
  return { ids, position, previousDisabled: components[0]?.['disabled'] === true };
}
const previous = (message: FakeMessage) => buttons(message).ids.find((id) => id.startsWith('chat:swipe:'))!;
const next = (message: FakeMessage) => buttons(message).ids[2]!;

describe('Discord swipes: ◀ ▶ beside 🔄 edit the newest reply in place', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let thread: APIChannel;

  /** The message now, with its latest content and buttons. */
  const current = (channelId: string, id: string): FakeMessage => bot.discord.messages(channelId).find((message) => message.id === id)!;
  /** Presses a button under a message and waits until Discord has the acknowledgement. */
  async function press(channelId: string, message: FakeMessage, customId: string): Promise<string> {
    const sent = bot.discord.sendButton({ user: alice, message: current(channelId, message.id), customId });
    await sent.response;
    return sent.interactionId;
  }
  /** Waits until the message reads `content` with its buttons back, at `position`. */
  const settled = (channelId: string, id: string, content: string, position: string) =>
    bot.discord.waitFor(() => {
      const message = current(channelId, id);
      return message.content === content && buttons(message).position === position ? message : undefined;
    }, 10_000);

  beforeAll(async () => {
    bot = await startBotHarness({ script: { reply: 'Welcome.' }, environment: { DISCORD_MESSAGES_PER_MINUTE: '100' } });
    alice = bot.discord.createUser({ username: 'alice' });
    const { discord } = bot;
    discord.setManageWebhooks(discord.guild.textChannelId, true);
    const choices = await discord.sendAutocomplete({ user: alice, channelId: discord.guild.textChannelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({ user: alice, channelId: discord.guild.textChannelId, name: 'chat', options: { character: String(own.value) } });
    await sent.response;
    thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
  });
  afterAll(async () => {
    await bot.close();
  });

  /**
   * In `channelId`: a reply, ▶ past the last writing a second one into the same message, ◀ back
   * to the first, ▶ forward again; nothing new posted, each step shown with its place.
   */
  async function swipeThrough(channelId: string, fromBot: (message: FakeMessage) => boolean): Promise<FakeMessage> {
    const { discord } = bot;
    bot.llm.setScript({ reply: 'First take.' });
    discord.sendMessage({ channelId, author: alice, content: 'Describe the harbour' });
    const reply = await settled(channelId, (await discord.waitFor(() => discord.messages(channelId).find((message) => fromBot(message) && message.content === 'First take.'), 10_000)).id, 'First take.', '1/1');
    expect(buttons(reply).previousDisabled).toBe(true);
    const count = discord.messages(channelId).length;

    // ▶ past the last: a new alternative, streamed into the same message.
    bot.llm.setScript({ tokens: ['Second ', 'take, ', 'slowly.'], tokensPerSecond: 10 });
    await press(channelId, reply, next(reply));
    await settled(channelId, reply.id, 'Second take, slowly.', '2/2');
    const versions = discord.messageHistory(reply.id).map((version) => version.content);
    expect(versions.some((version) => version.endsWith('▌'))).toBe(true);
    expect(discord.messages(channelId)).toHaveLength(count);
    // The new take was written without the first in its prompt, answering the same message once.
    const prompt = JSON.stringify(bot.llm.requests.at(-1)!.body.messages);
    expect(prompt).not.toContain('First take.');
    expect(prompt.match(/Describe the harbour/g)).toHaveLength(1);

    // ◀ shows the first again; ▶ the second; no engine call, no new message.
    const asked = bot.llm.requests.length;
    await press(channelId, reply, previous(current(channelId, reply.id)));
    const first = await settled(channelId, reply.id, 'First take.', '1/2');
    expect(buttons(first).previousDisabled).toBe(true);
    await press(channelId, reply, next(first));
    await settled(channelId, reply.id, 'Second take, slowly.', '2/2');
    expect(bot.llm.requests.length).toBe(asked);
    expect(discord.messages(channelId)).toHaveLength(count);
    return reply;
  }

  it('swipes a bot message (a DM), and the conversation goes on from the alternative shown', async () => {
    const dm = bot.discord.openDm(alice);
    const reply = await swipeThrough(dm, (message) => message.author.id !== alice.id);
    await press(dm, reply, previous(current(dm, reply.id)));
    await settled(dm, reply.id, 'First take.', '1/2');
    bot.llm.setScript({ reply: 'Glad you asked.' });
    bot.discord.sendMessage({ channelId: dm, author: alice, content: 'And then?' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Glad you asked.'), 10_000);
    const assistant = bot.llm.requests.at(-1)!.body.messages!.filter((message) => message.role === 'assistant').map((message) => message.content);
    expect(assistant).toEqual(['First take.']);
  });

  it('swipes a persona’s webhook message the same way', async () => {
    const reply = await swipeThrough(thread.id, (message) => message.webhook_id !== undefined && message.webhook_id !== null);
    expect(current(thread.id, reply.id).webhook_id).toBeTruthy();
    expect(current(thread.id, reply.id).author.username).toBe('alice');
  });

  it('writes and shows an alternative longer than one message in that message, cut with a marker: nothing posted, nothing left over', async () => {
    const dm = bot.discord.openDm(alice);
    bot.llm.setScript({ reply: 'Short take.' });
    bot.discord.sendMessage({ channelId: dm, author: alice, content: 'Tell me everything' });
    const reply = await settled(dm, (await bot.discord.waitFor(() => bot.discord.messages(dm).find((message) => message.content === 'Short take.'), 10_000)).id, 'Short take.', '1/1');
    const count = bot.discord.messages(dm).length;
    const long = Array.from({ length: 450 }, (_, index) => `word${index}`).join(' ');
    bot.llm.setScript({ reply: long });
    await press(dm, reply, next(reply));
    const cut = await bot.discord.waitFor(() => {
      const message = current(dm, reply.id);
      return buttons(message).position === '2/2' && message.content.endsWith(cutMarker) ? message : undefined;
    }, 10_000);
    expect(cut.content.length).toBeLessThanOrEqual(2000);
    expect(long.startsWith(cut.content.slice(0, -cutMarker.length))).toBe(true);
    expect(bot.discord.messages(dm)).toHaveLength(count);
    // ◀ to the short one leaves nothing of the long one; ▶ back shows it cut the same way.
    await press(dm, reply, previous(current(dm, reply.id)));
    await settled(dm, reply.id, 'Short take.', '1/2');
    await press(dm, reply, next(current(dm, reply.id)));
    const again = await bot.discord.waitFor(() => (buttons(current(dm, reply.id)).position === '2/2' ? current(dm, reply.id) : undefined), 10_000);
    expect(again.content.endsWith(cutMarker)).toBe(true);
    expect(again.content.length).toBeLessThanOrEqual(2000);
    expect(bot.discord.messages(dm)).toHaveLength(count);
  });

  /** `count` words (`word0 word1 …`, about 7 characters each) tagged so no two texts share one. */
  const words = (tag: string, count: number) => Array.from({ length: count }, (_, index) => `${tag}${index}`).join(' ');

  /**
   * In `channelId`: a first reply of three messages, then alternatives written and swiped to
   * under its last: each shown whole over the three (the parts it does not need cleared, one
   * longer than they hold cut in the last), nothing posted, nothing of another left.
   */
  async function swipeLongReply(channelId: string, fromBot: (message: FakeMessage) => boolean): Promise<void> {
    const { discord } = bot;
    const long = words('long', 600);
    bot.llm.setScript({ reply: long });
    const asked = discord.sendMessage({ channelId, author: alice, content: 'Tell me the whole story' });
    const partsOf = () => discord.messages(channelId).filter((message) => BigInt(message.id) > BigInt(asked.id) && fromBot(message));
    await discord.waitFor(() => buttons(partsOf().at(-1) ?? asked).position === '1/1', 15_000);
    const parts = partsOf();
    expect(parts).toHaveLength(3);
    expect(parts.map((part) => part.content).join(' ')).toBe(long);
    const ids = parts.map((part) => part.id);
    const last = ids.at(-1)!;
    const count = discord.messages(channelId).length;
    /** The texts of the reply's messages once its buttons are at `position` and `matches` holds for them. */
    const showing = (position: string, matches: (contents: string[]) => boolean) =>
      discord.waitFor(() => {
        const contents = ids.map((id) => current(channelId, id).content);
        return buttons(current(channelId, last)).position === position && matches(contents) ? contents : undefined;
      }, 15_000);
    const reads = (expected: string[], position: string) => showing(position, (contents) => contents.every((content, index) => content === expected[index]));

    // ▶ past the last: a short alternative, written into the first message; the other two cleared.
    bot.llm.setScript({ reply: 'In short: the ship came home.' });
    await press(channelId, current(channelId, last), next(current(channelId, last)));
    await reads(['In short: the ship came home.', clearedPart, clearedPart], '2/2');

    // ◀ shows the first alternative whole again, over all three messages.
    await press(channelId, current(channelId, last), previous(current(channelId, last)));
    await reads(parts.map((part) => part.content), '1/2');

    // ▶ to the short one, and ▶ past it: one longer than three messages hold, the last of them cut with the marker.
    await press(channelId, current(channelId, last), next(current(channelId, last)));
    await reads(['In short: the ship came home.', clearedPart, clearedPart], '2/2');
    const longer = words('longer', 1000);
    bot.llm.setScript({ reply: longer });
    await press(channelId, current(channelId, last), next(current(channelId, last)));
    const cut = await showing('3/3', (contents) => contents.at(-1)!.endsWith(cutMarker));
    expect(cut.every((content) => content.length <= 2000)).toBe(true);
    expect(longer.startsWith(cut.join(' ').slice(0, -cutMarker.length))).toBe(true);

    // ◀ to the short one clears what the longer one showed; ◀ again, the first whole.
    await press(channelId, current(channelId, last), previous(current(channelId, last)));
    await reads(['In short: the ship came home.', clearedPart, clearedPart], '2/3');
    await press(channelId, current(channelId, last), previous(current(channelId, last)));
    await reads(parts.map((part) => part.content), '1/3');
    expect(discord.messages(channelId)).toHaveLength(count);
  }

  // Each swipe edits all three messages: Discord's 5 edits per 5 s in a channel make them wait.
  it('swipes a reply of several bot messages (a DM) over all of them', async () => {
    await swipeLongReply(bot.discord.openDm(alice), (message) => message.author.id !== alice.id);
  });

  it('swipes a reply of several persona webhook messages over all of them', async () => {
    await swipeLongReply(thread.id, (message) => message.webhook_id !== undefined && message.webhook_id !== null);
  });

  it('refuses ◀ under a reply the conversation has gone on from, privately, changing nothing', async () => {
    const dm = bot.discord.openDm(alice);
    bot.llm.setScript({ reply: 'Older reply.' });
    bot.discord.sendMessage({ channelId: dm, author: alice, content: 'One' });
    const older = await settled(dm, (await bot.discord.waitFor(() => bot.discord.messages(dm).find((message) => message.content === 'Older reply.'), 10_000)).id, 'Older reply.', '1/1');
    bot.llm.setScript({ reply: 'Another.' });
    await press(dm, older, next(older));
    await settled(dm, older.id, 'Another.', '2/2');
    bot.llm.setScript({ reply: 'Newer reply.' });
    bot.discord.sendMessage({ channelId: dm, author: alice, content: 'Two' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Newer reply.'), 10_000);
    const refused = await press(dm, older, previous(current(dm, older.id)));
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(refused)).includes('moved on'), 10_000);
    expect(current(dm, older.id).content).toBe('Another.');
  });
});
