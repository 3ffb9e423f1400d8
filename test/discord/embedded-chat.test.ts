/**
 * The bot on the embedded engine: a thread answered by llama.cpp in the service's process, a
 * reply waiting for the one slot showing its place, and a missing model explained in words.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyModel } from '../fixtures/tiny-gguf.js';
import { type BotHarness, startBotHarness } from './harness.js';

const reply = 'Good evening, I am Ana.';
let models: string;

beforeAll(async () => {
  models = await mkdtemp(path.join(os.tmpdir(), 'likeness-bot-models-'));
});
afterAll(async () => {
  await rm(models, { recursive: true, force: true });
});

/** The service with DISCORD_TOKEN on the embedded engine, one slot. */
function embeddedBot(model: string, environment: Record<string, string> = {}): Promise<BotHarness> {
  return startBotHarness({ environment: { LLM_BASE_URL: '', LLM_MODEL: model, LLM_THREADS: '1', LLM_PARALLEL: '1', LLM_GPU: 'off', ...environment } });
}

async function openThread(bot: BotHarness, user: APIUser, first: string): Promise<APIChannel> {
  const { discord } = bot;
  const choices = await discord.sendAutocomplete({ user, channelId: discord.guild.textChannelId, name: 'chat', options: { character: '' }, focused: 'character' });
  const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
  const before = discord.threads.length;
  const sent = discord.sendSlashCommand({ user, channelId: discord.guild.textChannelId, name: 'chat', options: { character: String(own.value), message: first } });
  await sent.response;
  return discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
}

async function whenModelSettled(bot: BotHarness): Promise<void> {
  for (;;) {
    const ready = (await (await fetch(`${bot.url()}/readyz`)).json()) as { chatModel?: { state?: string; ready: boolean } };
    if (ready.chatModel?.ready || ready.chatModel?.state === 'failed') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the bot on the embedded engine', () => {
  let bot: BotHarness;
  let alice: APIUser;

  beforeAll(async () => {
    const known = await writeTinyModel(path.join(models, 'known.gguf'), { reply, contextLength: 4096 });
    bot = await embeddedBot(known.path, { LLM_MAX_REPLY_TOKENS: '64' });
    alice = bot.discord.createUser({ username: 'alice' });
    await whenModelSettled(bot);
  });
  afterAll(async () => {
    await bot.close();
  });

  it('answers in a thread with the model’s own words', async () => {
    const thread = await openThread(bot, alice, 'Hello there');
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes(reply) || undefined, 15_000);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'And how are you?' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).filter((text) => text === reply).length === 2 || undefined, 15_000);
  });
});

describe('the bot waiting for the embedded model', () => {
  let bot: BotHarness;

  afterAll(async () => {
    await bot?.close();
  });

  it('shows a reply its place while another holds the only slot, then writes it', async () => {
    const endless = await writeTinyModel(path.join(models, 'endless.gguf'), { reply: 'on and ever we go', endless: true, contextLength: 8192 });
    bot = await embeddedBot(endless.path, { LLM_MAX_REPLY_TOKENS: '1500', LLM_CONTEXT_TOKENS: '4096' });
    const [alice, bob] = [bot.discord.createUser({ username: 'alice' }), bot.discord.createUser({ username: 'bob' })];
    await whenModelSettled(bot);
    const first = await openThread(bot, alice, 'Talk for a long while');
    // The first reply holds the slot: its first words are out.
    await bot.discord.waitFor(() => bot.discord.messages(first.id).some((message) => message.content.startsWith('on and')) || undefined, 15_000);
    const second = await openThread(bot, bob, 'My turn, please');
    const notice = await bot.discord.waitFor(() => bot.discord.messages(second.id).find((message) => message.content.startsWith('⏳ Waiting for the model')), 15_000);
    expect(notice.content).toBe('⏳ Waiting for the model: next in line.');
    // Once the first reply ends, the notice becomes the second reply.
    await bot.discord.waitFor(() => bot.discord.messageHistory(notice.id).at(-1)?.content.startsWith('on and') || undefined, 60_000);
  });
});

describe('the bot without its model', () => {
  let bot: BotHarness;

  afterAll(async () => {
    await bot?.close();
  });

  it('says in words that the model is missing and that the message is kept', async () => {
    bot = await embeddedBot(path.join(models, 'not-there.gguf'));
    const alice = bot.discord.createUser({ username: 'alice' });
    await whenModelSettled(bot);
    const thread = await openThread(bot, alice, 'Anyone home?');
    const explained = await bot.discord.waitFor(() => bot.botTexts(thread.id).find((text) => text.startsWith('⚠️')), 15_000);
    expect(explained).toContain('The chat model is not available');
    expect(explained).not.toContain(models);
    expect(explained).toContain('Your message is saved.');
  });
});
