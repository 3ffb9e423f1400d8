import {
  ApplicationCommandOptionType,
  type ChatInputCommandInteraction,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import { downloadAttachment } from '../src/bot/attachments.js';
import { type BotContext, type Command, answer } from '../src/bot/command.js';
import { characterCard, resolveCharacter, suggestCharacters } from '../src/bot/characters.js';
import { deliveryRecordFor } from '../src/bot/deliveries/delivery-records.js';
import { characterLimits } from '../src/core/characters.js';
import { AppError } from '../src/core/errors.js';
import { facePhotoLimits } from '../src/core/images/face-photos.js';
import type { TrainingPayload } from '../src/core/records.js';
import { memoryLimits } from '../src/core/memories.js';
import { executeExport, executeImport, exportSubcommand, importSubcommand } from './character/cards.js';
import { chosenCharacter, createSubcommand, optionLength, deleteSubcommand, executeCreate, executeDelete, whichOfYours } from './character/manage.js';

const { String: text, Boolean: boolean, Attachment: attachment, Subcommand: subcommand } = ApplicationCommandOptionType;

/** More photos for train-face: Discord has no repeatable option, so nine more attachment slots. */
const photoOptions = (['photo2', 'photo3', 'photo4', 'photo5', 'photo6', 'photo7', 'photo8', 'photo9', 'photo10'] as const).map(
  (name) => ({ type: attachment, name, description: 'Another face photo, or a zip of them' }) as const,
);

/** Largest single attachment read: a zip may hold many photos, up to the core's total. */
const maxAttachmentBytes = 25 * 1024 * 1024;

const data = {
  name: 'character',
  description: 'See and shape your character',
  options: [
    createSubcommand,
    deleteSubcommand,
    importSubcommand,
    exportSubcommand,
    {
      type: subcommand,
      name: 'show',
      description: 'Show a character',
      options: [{ type: text, name: 'character', description: 'Which one (yours by default)', autocomplete: true }],
    },
    {
      type: subcommand,
      name: 'edit',
      description: 'Change your character',
      options: [
        { type: text, name: 'name', description: 'Its name', max_length: characterLimits.name },
        { type: text, name: 'description', description: 'Who it is', max_length: optionLength(characterLimits.description) },
        { type: text, name: 'personality', description: 'How it speaks and behaves', max_length: optionLength(characterLimits.personalitySummary) },
        { type: boolean, name: 'public', description: 'Whether others may talk to it' },
        whichOfYours,
      ],
    },
    {
      type: subcommand,
      name: 'avatar',
      description: 'Give your character a picture (PNG, JPEG or WebP, up to 5 MB)',
      options: [{ type: attachment, name: 'image', description: 'The picture', required: true }, whichOfYours],
    },
    {
      type: subcommand,
      name: 'remember',
      description: 'Teach your character a fact it will bring up when relevant',
      options: [{ type: text, name: 'fact', description: 'A short fact', required: true, max_length: memoryLimits.text }, whichOfYours],
    },
    { type: subcommand, name: 'memories', description: "List your character's memories", options: [whichOfYours] },
    {
      type: subcommand,
      name: 'voice',
      description: 'Give your character a voice: a preset, or samples to clone (engines that clone)',
      options: [
        { type: text, name: 'preset', description: 'A voice the speech engine offers', autocomplete: true },
        { type: attachment, name: 'sample', description: 'A recording of the voice (mp3, wav, ogg…)' },
        { type: attachment, name: 'sample2', description: 'Another recording' },
        { type: attachment, name: 'sample3', description: 'Another recording' },
        whichOfYours,
      ],
    },
    {
      type: subcommand,
      name: 'train-face',
      description: `Train a face model of your character from ${facePhotoLimits.minPhotos} to ${facePhotoLimits.maxPhotos} photos, for /imagine`,
      options: [
        { type: attachment, name: 'photos', description: 'A face photo (PNG, JPEG or WebP), or a zip of them', required: true },
        whichOfYours,
        ...photoOptions,
      ],
    },
    {
      type: subcommand,
      name: 'forget',
      description: 'Make your character forget a memory',
      options: [{ type: text, name: 'memory', description: 'Which one', required: true, autocomplete: true }, whichOfYours],
    },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: true,
  // Downloads and engines take seconds; the rest answers at once.
  defer: { 'train-face': 'at-once', voice: 'at-once', avatar: 'at-once', import: 'at-once', export: 'at-once' },
  async autocomplete(interaction, context) {
    if (interaction.options.getSubcommand() === 'voice') {
      const query = String(interaction.options.getFocused()).toLowerCase();
      const voices = (await context.core.speech?.voices()) ?? [];
      await interaction.respond(
        voices
          .filter((voice) => `${voice.name} ${voice.id}`.toLowerCase().includes(query))
          .slice(0, 25)
          .map((voice) => ({ name: voice.name.slice(0, 100), value: voice.id.slice(0, 100) })),
      );
      return;
    }
    if (interaction.options.getFocused(true).name !== 'memory') {
      await suggestCharacters(interaction, context);
      return;
    }
    const { actor, account } = await context.accountOf(interaction.user);
    const query = String(interaction.options.getFocused()).toLowerCase();
    const option = interaction.options.getString('character');
    const characterId = option ? (await resolveCharacter(context.core, actor, option)).id : account.characterId;
    const memories = await context.core.memories.list(actor, characterId);
    await interaction.respond(
      memories
        .filter((memory) => memory.text.toLowerCase().includes(query))
        .slice(0, 25)
        .map((memory) => ({ name: memory.text.slice(0, 100), value: memory.id })),
    );
  },
  async execute(interaction, context) {
    const run = subcommands[interaction.options.getSubcommand() as keyof typeof subcommands];
    await run(interaction, context);
  },
} satisfies Command;

type Run = (interaction: ChatInputCommandInteraction, context: BotContext) => Promise<void>;

const subcommands: Record<'create' | 'delete' | 'import' | 'export' | 'show' | 'edit' | 'avatar' | 'remember' | 'memories' | 'forget' | 'voice' | 'train-face', Run> = {
  create: executeCreate,
  delete: executeDelete,
  import: executeImport,
  export: executeExport,
  async 'train-face'(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const character = await chosenCharacter(interaction, context);
    const attachments = ['photos', ...photoOptions.map((photo) => photo.name)].map((name) => interaction.options.getAttachment(name)).filter((item) => item !== null);
    const uploads = await Promise.all(attachments.map(async (item) => ({ filename: item.name, data: await downloadAttachment(item, maxAttachmentBytes) })));
    const { job, model, transaction } = await context.core.images.trainFace(actor, character.id, uploads);
    await context.deliveries.add(deliveryRecordFor(interaction, job.id, 'training', character.name));
    const photos = (job.payload as TrainingPayload).photoCount;
    await answer(
      interaction,
      `🧑‍🎨 Training a face model of **${character.name}** from ${photos} photos (model \`${model.id}\` is ${model.status}; ${transaction.amount} credits). ` +
        'It takes about 10 minutes; I will tell you in this channel when it is ready.',
    );
  },
  async voice(interaction, context) {
    const speech = context.core.speech;
    if (!speech) throw new AppError('NOT_CONFIGURED', 'Speech is not set up on this bot (TTS_ENGINE).');
    const { actor } = await context.accountOf(interaction.user);
    const { id: characterId } = await chosenCharacter(interaction, context);
    const preset = interaction.options.getString('preset');
    const attachments = ['sample', 'sample2', 'sample3'].map((name) => interaction.options.getAttachment(name)).filter((item) => item !== null);
    if (!preset && attachments.length === 0) throw new AppError('VALIDATION_FAILED', 'Choose a preset, or attach recordings of the voice to clone.');
    let character;
    if (preset) {
      character = await speech.train(actor, characterId, { voiceId: preset });
    } else {
      const samples = await Promise.all(
        attachments.map(async (item) => ({
          filename: item.name,
          mimeType: item.contentType ?? 'application/octet-stream',
          data: await downloadAttachment(item, maxAttachmentBytes),
        })),
      );
      character = await speech.train(actor, characterId, { samples });
    }
    await answer(interaction, `🗣️ **${character.name}** now speaks with the voice \`${character.ttsVoiceId}\`. Try \`/speak\`.`);
  },
  async show(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const option = interaction.options.getString('character');
    const character = option ? await resolveCharacter(context.core, actor, option) : await context.core.characters.get(actor, account.characterId);
    await answer(interaction, await characterCard(context.core, character));
  },
  async edit(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const change = {
      name: interaction.options.getString('name') ?? undefined,
      description: interaction.options.getString('description') ?? undefined,
      personalitySummary: interaction.options.getString('personality') ?? undefined,
      isPublic: interaction.options.getBoolean('public') ?? undefined,
    };
    if (Object.values(change).every((value) => value === undefined)) {
      throw new AppError('VALIDATION_FAILED', 'Give at least one of name, description, personality or public.');
    }
    const character = await context.core.characters.update(actor, (await chosenCharacter(interaction, context)).id, change);
    await answer(interaction, { content: 'Saved.', ...(await characterCard(context.core, character)) });
  },
  async avatar(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const { id: characterId } = await chosenCharacter(interaction, context);
    const image = interaction.options.getAttachment('image', true);
    // Checked before downloading anything.
    if (image.size > characterLimits.avatarBytes) throw new AppError('PAYLOAD_TOO_LARGE', 'The picture is larger than 5 MB.');
    const character = await context.core.characters.setAvatar(actor, characterId, await downloadAttachment(image, characterLimits.avatarBytes));
    await answer(interaction, { content: 'New picture saved.', ...(await characterCard(context.core, character)) });
  },
  async remember(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const { id: characterId } = await chosenCharacter(interaction, context);
    const memory = await context.core.memories.add(actor, characterId, interaction.options.getString('fact', true));
    await answer(interaction, `Remembered: “${memory.text}”`);
  },
  async memories(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const { id: characterId } = await chosenCharacter(interaction, context);
    const memories = await context.core.memories.list(actor, characterId);
    if (memories.length === 0) {
      await answer(interaction, 'Your character remembers nothing yet. Teach it with `/character remember`.');
      return;
    }
    const lines = memories.map((memory, index) => `${index + 1}. ${memory.text}`);
    const shown: string[] = [];
    // Leave room for the "more" line within Discord's 2,000 characters.
    while (shown.length < lines.length && [...shown, lines[shown.length]].join('\n').length <= 1950) shown.push(lines[shown.length]!);
    const more = lines.length > shown.length ? `\n…and ${lines.length - shown.length} more.` : '';
    await answer(interaction, shown.join('\n') + more);
  },
  async forget(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const { id: characterId } = await chosenCharacter(interaction, context);
    await context.core.memories.remove(actor, characterId, interaction.options.getString('memory', true));
    await answer(interaction, 'Forgotten.');
  },
};
