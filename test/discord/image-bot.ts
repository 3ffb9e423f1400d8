/**
 * The whole service with its bot on the fake Discord and its images from the fake Replicate
 * (predictions and trainings), plus what image tests do as users: run commands, press
 * buttons, read replies, balances and jobs.
 */
import type { APIUser } from 'discord-api-types/v10';
import { PNG } from 'pngjs';
import { expect } from 'vitest';
import type { FakeMessage, SlashOptionValue } from '../fakes/discord/fake-discord.js';
import { type FakeReplicate, startFakeReplicate } from '../fakes/images/fake-replicate.js';
import { type BotHarness, startBotHarness } from './harness.js';

/** Jobs poll the fake engine about once a second (trainings every 5 s); waits leave room for several polls. */
export const jobTimeoutMs = 15_000;

export interface Button {
  custom_id: string;
  style: number;
  label?: string;
  disabled?: boolean;
}

export function buttonsOf(message: FakeMessage | undefined): Button[] {
  return (message?.components ?? []).flatMap((row) => ('components' in row ? (row.components as unknown as Button[]) : []));
}

/** The job behind an /imagine message: its first button carries the job id. */
export const jobIdOf = (message: FakeMessage): string => buttonsOf(message)[0]!.custom_id.split(':')[2]!;

/** A small face photo; shades make each one different. */
export function photo(shade: number): { filename: string; contentType: string; bytes: Buffer } {
  const image = new PNG({ width: 16, height: 16 });
  image.data.fill(shade);
  return { filename: `face-${shade}.png`, contentType: 'image/png', bytes: PNG.sync.write(image) };
}

export interface JobOverHttp {
  status: string;
  outputFiles: { name: string; feedback: { like: boolean | null } }[];
}

export interface ImageBot {
  bot: BotHarness;
  replicate: FakeReplicate;
  /** Runs a slash command in `channelId` (default #general); resolves with its interaction id once acknowledged. */
  send(user: APIUser, name: string, options?: Record<string, SlashOptionValue>, subcommand?: string, channelId?: string): Promise<string>;
  /** The message that answers an interaction (its reply, or the one a deferral created). */
  reply(interactionId: string): FakeMessage | undefined;
  /** Waits until the interaction's reply satisfies `check`, and returns it. */
  replyWhen(interactionId: string, check: (message: FakeMessage) => boolean): Promise<FakeMessage>;
  /** Waits until everything the bot answered to an interaction, as JSON, contains `text`; returns that JSON. */
  answered(interactionId: string, text: string): Promise<string>;
  /** Presses a button; resolves with everything the bot answered to the press, as JSON. */
  press(user: APIUser, message: FakeMessage, customId: string): Promise<string>;
  balance(user: APIUser): Promise<number>;
  /** A fresh API key of the user's account, from the button under /account. */
  apiKey(user: APIUser): Promise<string>;
  jobOverHttp(key: string, jobId: string): Promise<JobOverHttp>;
  download(url: string): Promise<PNG>;
  close(): Promise<void>;
}

export async function startImageBot(): Promise<ImageBot> {
  const replicate = await startFakeReplicate({ stepMs: 2 });
  const bot = await startBotHarness({
    environment: {
      IMAGE_ENGINE: 'replicate',
      REPLICATE_API_TOKEN: 'test-token',
      REPLICATE_BASE_URL: replicate.apiURL,
      REPLICATE_IMAGE_MODEL: 'stability-ai/sdxl',
      REPLICATE_TRAINER_VERSION: 'replicate/sdxl-trainer:0123456789abcdef',
      REPLICATE_TRAINING_DESTINATION: 'likeness/faces',
      // One job at a time, so a second one visibly waits in the queue.
      IMAGE_CONCURRENCY: '1',
      DISCORD_COMMANDS_PER_MINUTE: '200',
    },
  });
  const interactionText = (interactionId: string): string => JSON.stringify(bot.discord.interactionResponses(interactionId).map((record) => record.body));

  const send: ImageBot['send'] = async (user, name, options = {}, subcommand, channelId = bot.discord.guild.textChannelId) => {
    const sent = bot.discord.sendSlashCommand({ user, channelId, name, options, ...(subcommand ? { subcommand } : {}) });
    expect(await sent.response).not.toBeNull();
    return sent.interactionId;
  };
  const reply: ImageBot['reply'] = (interactionId) => {
    const messageId = bot.discord.interactionResponses(interactionId).find((record) => record.messageId)?.messageId;
    return messageId ? bot.discord.message(messageId) : undefined;
  };
  const answered: ImageBot['answered'] = (interactionId, text) =>
    bot.discord.waitFor(() => {
      const json = interactionText(interactionId);
      return json.includes(text) && json;
    }, jobTimeoutMs);

  return {
    bot,
    replicate,
    send,
    reply,
    answered,
    replyWhen: (interactionId, check) =>
      bot.discord.waitFor(() => {
        const message = reply(interactionId);
        return message && check(message) ? message : undefined;
      }, jobTimeoutMs),
    async press(user, message, customId) {
      const pressed = bot.discord.sendButton({ user, message, customId });
      expect(await pressed.response).not.toBeNull();
      return interactionText(pressed.interactionId);
    },
    async balance(user) {
      const id = await send(user, 'balance');
      return Number(await bot.discord.waitFor(() => /\*\*(\d+)\*\* credits/.exec(interactionText(id))?.[1]));
    },
    async apiKey(user) {
      const account = await send(user, 'account');
      const shown = await bot.discord.waitFor(() => {
        const message = reply(account);
        return message && buttonsOf(message).length > 0 ? message : undefined;
      });
      const pressed = bot.discord.sendButton({ user, message: shown, customId: 'account:new-key' });
      await pressed.response;
      return bot.discord.waitFor(() => /lk_[A-Za-z0-9_-]+/.exec(interactionText(pressed.interactionId))?.[0]);
    },
    async jobOverHttp(key, jobId) {
      const response = await fetch(`${bot.url()}/api/v0/jobs/${jobId}`, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status).toBe(200);
      return ((await response.json()) as { job: JobOverHttp }).job;
    },
    async download(url) {
      const response = await fetch(url);
      expect(response.status).toBe(200);
      return PNG.sync.read(Buffer.from(await response.arrayBuffer()));
    },
    async close() {
      await bot.close();
      await replicate.close();
    },
  };
}
