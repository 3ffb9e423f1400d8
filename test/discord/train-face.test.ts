import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeDiscord } from '../fakes/discord/fake-discord.js';
import { type ImageBot, jobTimeoutMs, photo, startImageBot } from './image-bot.js';

describe('/character train-face, end to end through the fake Discord and fake Replicate trainings', () => {
  let images: ImageBot;
  let discord: FakeDiscord;
  const general = () => discord.guild.textChannelId;

  beforeAll(async () => {
    images = await startImageBot();
    discord = images.bot.discord;
  });
  afterAll(async () => {
    await images?.close();
  });

  it('trains a face model from attached photos, tells the owner when it is ready, and draws it', async () => {
    const erin = discord.createUser({ username: 'erin' });
    await images.send(erin, 'character', { name: 'Erin the Bold' }, 'edit');
    const trained = await images.send(erin, 'character', { photos: photo(10), photo2: photo(60), photo3: photo(110), photo4: photo(160), photo5: photo(210) }, 'train-face');
    const started = await images.answered(trained, 'Training a face model');
    expect(started).toContain('from 5 photos');
    expect(started).toContain('IN_PROGRESS');
    const notice = await discord.waitFor(
      () => discord.messages(general()).find((message) => message.content.includes(`<@${erin.id}>`) && message.content.includes('face model')),
      jobTimeoutMs,
    );
    expect(notice.content).toContain('**Erin the Bold** is ready');
    expect(notice.content).toContain('/imagine character:Erin the Bold');
    expect(images.replicate.trainings.at(-1)?.photoCount).toBe(5);

    const drawn = await images.send(erin, 'imagine', { prompt: 'Erin the Bold climbing a mountain', character: 'Erin the Bold', width: 64, height: 64, seed: 9 });
    const done = await images.replyWhen(drawn, (message) => message.attachments.length === 1);
    expect(done.content).toContain('Erin the Bold climbing a mountain');
    const prediction = images.replicate.predictions.at(-1)!;
    expect(prediction.input['prompt']).toBe('<s0><s1> climbing a mountain');
    expect(prediction.input['lora_1']).toEqual(expect.stringContaining('http://127.0.0.1:'));
    expect(prediction.status).toBe('succeeded');
  });

  it('tells the owner by direct message when training fails and the channel is closed to the bot', async () => {
    const studio = discord.createTextChannel(discord.guild.id, 'studio');
    const hana = discord.createUser({ username: 'hana' });
    const before = await images.balance(hana);
    images.replicate.failNext('No face found in 3 of 5 photos');
    const sent = discord.sendSlashCommand({
      user: hana,
      channelId: studio.id,
      name: 'character',
      subcommand: 'train-face',
      options: { photos: photo(20), photo2: photo(70), photo3: photo(120), photo4: photo(170), photo5: photo(220) },
    });
    await sent.response;
    await images.answered(sent.interactionId, 'Training a face model');
    discord.setBotPermissions(studio.id, 0n);
    const dm = discord.openDm(hana);
    const notice = await discord.waitFor(() => discord.messages(dm).find((message) => message.content.includes('face model')), jobTimeoutMs);
    expect(notice.content).toContain('Training the face model of **hana** failed');
    // The trainer's own words stay in the log.
    expect(notice.content).toContain('The training engine');
    expect(notice.content).not.toContain('No face found');
    expect(notice.content).toContain('refunded');
    // Only the private "training started" answer is in the closed channel.
    expect(discord.messages(studio.id).filter((message) => ((message.flags ?? 0) & 64) === 0)).toHaveLength(0);
    expect(await images.balance(hana)).toBe(before);
  });
});
