import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeDiscord } from '../fakes/discord/fake-discord.js';
import { type ImageBot, buttonsOf, jobIdOf, jobTimeoutMs, startImageBot } from './image-bot.js';
import { type BotHarness, startBotHarness } from './harness.js';

describe('/imagine, end to end through the fake Discord and a fake Replicate', () => {
  let images: ImageBot;
  let discord: FakeDiscord;
  const general = () => discord.guild.textChannelId;
  let alice: APIUser;
  let bob: APIUser;

  beforeAll(async () => {
    images = await startImageBot();
    discord = images.bot.discord;
    alice = discord.createUser({ username: 'alice' });
    bob = discord.createUser({ username: 'bob' });
  });
  afterAll(async () => {
    await images?.close();
  });

  it('shows queued, then progress, then the images with seed, settings and buttons', async () => {
    images.replicate.hold();
    const first = await images.send(alice, 'imagine', { prompt: 'a lighthouse at dusk', width: 256, height: 192, samples: 2, seed: 1234 });
    await images.replyWhen(first, (message) => message.content.includes('Generating… 50%'));
    const second = await images.send(bob, 'imagine', { prompt: 'a red fox in the snow', width: 128, height: 128 });
    const queued = await images.replyWhen(second, (message) => message.content.includes('Queued'));
    expect(queued.content).toContain('yours is next');
    expect(buttonsOf(queued).map((button) => button.custom_id)).toEqual([expect.stringMatching(/^imagine:cancel:/)]);
    images.replicate.release();

    const done = await images.replyWhen(first, (message) => message.attachments.length === 2);
    expect(done.content).toContain('a lighthouse at dusk');
    expect(done.content).toContain('seed `1234` · 256×192 · 2 images · guidance 7.5 · 30 steps');
    expect(done.attachments.map((attachment) => attachment.filename)).toEqual(['image-1.png', 'image-2.png']);
    const picture = await images.download(done.attachments[0]!.url);
    expect([picture.width, picture.height]).toEqual([256, 192]);
    const ids = buttonsOf(done).map((button) => button.custom_id);
    expect(ids[0]).toMatch(/^imagine:reroll:[0-9a-f-]{36}$/);
    expect(ids.slice(1)).toEqual([
      expect.stringMatching(/^imagine:like:.+:image-1\.png$/),
      expect.stringMatching(/^imagine:dislike:.+:image-1\.png$/),
      expect.stringMatching(/^imagine:like:.+:image-2\.png$/),
      expect.stringMatching(/^imagine:dislike:.+:image-2\.png$/),
    ]);
    // The reply went through queued (or progress) states before the images, as edits of one message.
    const versions = discord.messageHistory(done.id).map((version) => version.content);
    expect(versions.some((content) => content.includes('Generating… 50%'))).toBe(true);
    await images.replyWhen(second, (message) => message.attachments.length === 1);
    // Paced edits: Discord never had to refuse one.
    expect(discord.rateLimitHits.total).toBe(0);
  });

  it('re-rolls with a new seed for whoever presses, at their cost, and takes likes from the owner only', async () => {
    const asked = await images.send(alice, 'imagine', { prompt: 'a paper boat', width: 64, height: 64, seed: 77 });
    const done = await images.replyWhen(asked, (message) => message.attachments.length === 1);
    const jobId = jobIdOf(done);
    const bobBefore = await images.balance(bob);

    const reroll = discord.sendButton({ user: bob, message: done, customId: `imagine:reroll:${jobId}` });
    await reroll.response;
    const rerolled = await images.replyWhen(reroll.interactionId, (message) => message.attachments.length === 1);
    expect(rerolled.id).not.toBe(done.id);
    expect(rerolled.content).toContain('a paper boat');
    expect(/seed `(\d+)`/.exec(rerolled.content)?.[1]).not.toBe('77');
    expect(Buffer.from((await images.download(rerolled.attachments[0]!.url)).data)).not.toEqual(Buffer.from((await images.download(done.attachments[0]!.url)).data));
    expect(await images.balance(bob)).toBe(bobBefore - 1);

    const like = `imagine:like:${jobId}:image-1.png`;
    expect(await images.press(bob, done, like)).toContain('Only the person who asked for this image can rate its images');
    await images.press(alice, done, like);
    const liked = buttonsOf(discord.message(done.id)).find((button) => button.custom_id === like);
    expect(liked?.style).toBe(3);
    // The images stay on the message when only its buttons change.
    expect(discord.message(done.id)?.attachments).toHaveLength(1);
    const key = await images.apiKey(alice);
    expect((await images.jobOverHttp(key, jobId)).outputFiles[0]!.feedback.like).toBe(true);
    await images.press(alice, done, `imagine:dislike:${jobId}:image-1.png`);
    expect((await images.jobOverHttp(key, jobId)).outputFiles[0]!.feedback.like).toBe(false);
  });

  it('lets only the owner cancel a waiting job, and refunds it', async () => {
    images.replicate.hold();
    const carol = discord.createUser({ username: 'carol' });
    const before = await images.balance(carol);
    const asked = await images.send(carol, 'imagine', { prompt: 'a slow sunrise', width: 64, height: 64, samples: 3 });
    const waiting = await images.replyWhen(asked, (message) => message.content.includes('Generating'));
    expect(await images.balance(carol)).toBe(before - 3);
    const cancel = `imagine:cancel:${jobIdOf(waiting)}`;
    expect(await images.press(bob, waiting, cancel)).toContain('Only the person who asked for this image can cancel it');
    expect(await images.press(carol, waiting, cancel)).toContain('Canceled');
    const ended = await images.replyWhen(asked, (message) => message.content.includes('🚫 Canceled.'));
    expect(ended.content).toContain('refunded');
    expect(buttonsOf(ended).map((button) => button.label)).toEqual(['Try again']);
    images.replicate.release();
    expect(await images.balance(carol)).toBe(before);
  });

  it('shows an engine failure with its reason and gives the credits back', async () => {
    const dave = discord.createUser({ username: 'dave' });
    const before = await images.balance(dave);
    images.replicate.failNext('CUDA out of memory');
    const asked = await images.send(dave, 'imagine', { prompt: 'an enormous cathedral', width: 64, height: 64, samples: 2 });
    const failed = await images.replyWhen(asked, (message) => message.content.includes('could not be made'));
    // What the engine said stays in the log; the person reads our words.
    expect(failed.content).toContain('The image engine failed to answer.');
    expect(failed.content).not.toContain('CUDA out of memory');
    expect(failed.content).toContain('refunded');
    expect(failed.attachments).toHaveLength(0);
    expect(await images.balance(dave)).toBe(before);
  });

  it('finishes delivering a job that was running when the service restarted', async () => {
    images.replicate.hold();
    const asked = await images.send(alice, 'imagine', { prompt: 'a ship in a bottle', width: 96, height: 64, seed: 5 });
    await images.replyWhen(asked, (message) => message.content.includes('Generating… 50%'));
    await images.bot.restart();
    images.replicate.release();
    const done = await images.replyWhen(asked, (message) => message.attachments.length === 1);
    expect(done.content).toContain('seed `5`');
    const picture = await images.download(done.attachments[0]!.url);
    expect([picture.width, picture.height]).toEqual([96, 64]);
    // The buttons of messages from before the restart still work: they carry the job in their ids.
    const again = discord.sendButton({ user: alice, message: done, customId: `imagine:reroll:${jobIdOf(done)}` });
    await again.response;
    await images.replyWhen(again.interactionId, (message) => message.attachments.length === 1);
  });

  it('posts the result in the channel, mentioning the user, when the interaction token has expired', async () => {
    images.replicate.hold();
    const asked = await images.send(bob, 'imagine', { prompt: 'a glacier under stars', width: 64, height: 64 });
    const waiting = await images.replyWhen(asked, (message) => message.content.includes('Generating'));
    discord.expireInteractionToken(asked);
    images.replicate.release();
    const posted = await discord.waitFor(
      () => discord.messages(general()).find((message) => message.id !== waiting.id && message.content.includes('a glacier under stars') && message.attachments.length === 1),
      jobTimeoutMs,
    );
    expect(posted.content).toContain(`<@${bob.id}> your images are ready`);
    expect(posted.mentions.map((user) => user.id)).toEqual([bob.id]);
    expect(buttonsOf(posted)[0]!.custom_id).toMatch(/^imagine:reroll:/);
    expect(images.reply(asked)?.attachments).toHaveLength(0);
  });

  it('suggests characters, and says what is missing when a character has no face model', async () => {
    await images.send(alice, 'character', { name: 'Captain Alice' }, 'edit');
    const choices = await discord.sendAutocomplete({ user: alice, channelId: general(), name: 'imagine', options: { prompt: 'x', character: 'capt' }, focused: 'character' });
    expect(choices.map((choice) => choice.name)).toEqual(['Captain Alice (yours)']);
    const asked = await images.send(alice, 'imagine', { prompt: 'Captain Alice on deck', character: String(choices[0]!.value) });
    const refused = await images.answered(asked, 'cannot be drawn');
    expect(refused).toContain('no face model yet');
    expect(discord.interactionResponses(asked)[0]!.callbackType).toBe(4);
  });
});

describe('/imagine without an image engine', () => {
  let bot: BotHarness;

  beforeAll(async () => {
    bot = await startBotHarness();
  });
  afterAll(async () => {
    await bot?.close();
  });

  it('says privately what to configure, and charges nothing', async () => {
    const user = bot.discord.createUser({ username: 'frank' });
    const sent = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'imagine', options: { prompt: 'a cat' } });
    const callback = await sent.response;
    expect(callback?.type).toBe(4);
    const text = JSON.stringify(callback?.data);
    expect(text).toContain('No image engine is configured. Set IMAGE_ENGINE');
    expect((callback?.data as { flags?: number }).flags).toBe(64);
    const balance = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'balance' });
    await balance.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(balance.interactionId)).includes('**100** credits'));
  });

  it('lists /imagine and train-face in /help', async () => {
    const user = bot.discord.createUser({ username: 'gina' });
    const sent = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'help' });
    const text = JSON.stringify((await sent.response)?.data);
    expect(text).toContain('/imagine prompt');
    expect(text).toContain('/character train-face');
  });
});
