import {
  ApplicationCommandOptionType,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import { resolveCharacter, suggestCharacters } from '../src/bot/characters.js';
import { type BotContext, type Command, answer } from '../src/bot/command.js';
import { deliveryRecordFor } from '../src/bot/deliveries/delivery-records.js';
import { parseImageButton } from '../src/bot/deliveries/image-buttons.js';
import { failureFields } from '../src/bot/deliveries/job-deliveries.js';
import { describeImageJob, promptWithCharacter } from '../src/bot/deliveries/image-prompts.js';
import { resultButtons, waitingView } from '../src/bot/deliveries/image-views.js';
import { AppError } from '../src/core/errors.js';
import { imageDefaults, imageLimits } from '../src/core/images/image-request.js';
import type { JobRecord } from '../src/core/records.js';

const { String: text, Integer: integer, Number: number } = ApplicationCommandOptionType;
const side = { min_value: imageLimits.minSide, max_value: imageLimits.maxSide };

const data = {
  name: 'imagine',
  description: 'Draw images from a prompt, with a character’s trained face if you like',
  options: [
    { type: text, name: 'prompt', description: 'What to draw', required: true, max_length: imageLimits.promptCharacters },
    { type: text, name: 'character', description: 'Whose face to draw (the character needs a trained face model)', autocomplete: true },
    { type: text, name: 'negative', description: 'What to keep out of the image', max_length: imageLimits.promptCharacters },
    { type: integer, name: 'width', description: `Width in pixels, a multiple of 8 (default ${imageDefaults.width})`, ...side },
    { type: integer, name: 'height', description: `Height in pixels, a multiple of 8 (default ${imageDefaults.height})`, ...side },
    { type: integer, name: 'samples', description: 'How many images (default 1)', min_value: 1, max_value: imageLimits.maxSamples },
    { type: integer, name: 'seed', description: 'The same seed and settings draw the same image (default: random)', min_value: 0, max_value: imageLimits.maxSeed },
    {
      type: number,
      name: 'guidance',
      description: `How closely to follow the prompt (default ${imageDefaults.guidanceScale})`,
      min_value: imageLimits.guidanceScale.min,
      max_value: imageLimits.guidanceScale.max,
    },
    {
      type: number,
      name: 'lora_scale',
      description: `How strongly the character’s face applies (default ${imageDefaults.loraScale})`,
      min_value: imageLimits.loraScale.min,
      max_value: imageLimits.loraScale.max,
    },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: false,
  autocomplete: suggestCharacters,
  async execute(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const { options } = interaction;
    const prompt = options.getString('prompt', true);
    const option = options.getString('character');
    const character = option ? await resolveCharacter(context.core, actor, option) : undefined;
    // Created before the reply is deferred, so a refusal (no engine, short balance, no face
    // model) is told privately; the deferral then makes the reply public for everyone to see.
    const { job } = await context.core.images.create(actor, {
      prompt: character ? promptWithCharacter(prompt, character.name, `<${character.id}>`) : prompt,
      negativePrompt: options.getString('negative') ?? undefined,
      width: options.getInteger('width') ?? undefined,
      height: options.getInteger('height') ?? undefined,
      samples: options.getInteger('samples') ?? undefined,
      seed: options.getInteger('seed') ?? undefined,
      guidanceScale: options.getNumber('guidance') ?? undefined,
      loraScale: options.getNumber('lora_scale') ?? undefined,
    });
    await startDelivery(interaction, context, job, character ? promptWithCharacter(prompt, character.name, character.name) : prompt.trim());
  },
  async button(interaction, context) {
    const button = parseImageButton(interaction.customId);
    if (!button) throw new AppError('NOT_FOUND', 'This button comes from an older version of the bot and no longer works.');
    const { actor, account } = await context.accountOf(interaction.user);
    const job = await context.core.images.find(button.jobId);
    if (!job || job.type !== 'IMAGE_INFERENCE') throw new AppError('NOT_FOUND', 'That image job no longer exists.');
    if (button.action === 'reroll') {
      // Anyone may draw the same prompt again for themselves, with a new seed, at their own cost.
      const { job: rerolled } = await context.core.images.reroll(actor, job);
      await startDelivery(interaction, context, rerolled, await describeImageJob(context.core, actor, rerolled));
      return;
    }
    if (job.accountId !== account.id) {
      const what = button.action === 'cancel' ? 'cancel it' : 'rate its images';
      throw new AppError('FORBIDDEN', `Only the person who asked for this image can ${what}. Press 🎲 Re-roll to draw your own.`);
    }
    if (button.action === 'cancel') {
      await context.core.images.cancel(actor, job.id);
      await answer(interaction, '🚫 Canceled. The credits it cost were refunded.');
      return;
    }
    const wanted = button.action === 'like';
    const current = job.outputFiles.find((file) => file.name === button.output)?.feedback.like;
    // Pressing the verdict already given takes it back.
    const rated = await context.core.images.feedback(actor, job.id, button.output, { like: current === wanted ? null : wanted });
    await interaction.update({ components: resultButtons(rated) });
  },
} satisfies Command;

/** Makes the reply public and hands the job to the deliveries, which keep it up to date. */
async function startDelivery(interaction: ChatInputCommandInteraction | ButtonInteraction, context: BotContext, job: JobRecord, title: string): Promise<void> {
  // The first answer already shows the queued state: one request fewer per job than a
  // deferral and an edit, and requests are what many jobs at once run short of.
  const view = waitingView(job, title, null, await context.core.images.position(job));
  let shown: typeof view | undefined = view;
  await answer(interaction, { content: view.content, components: view.components }, false).catch((error: unknown) => {
    shown = undefined;
    // The job is paid for and runs: without a reply to edit, its result is posted in the channel.
    context.logger.warn({ ...failureFields(error), jobId: job.id }, 'could not answer /imagine');
  });
  await context.deliveries.add(deliveryRecordFor(interaction, job.id, 'image', title), shown);
}
