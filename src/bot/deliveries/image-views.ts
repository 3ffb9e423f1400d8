import { ActionRowBuilder, AttachmentBuilder, ButtonBuilder, ButtonStyle } from 'discord.js';
import type { ImagePayload } from '../../core/ports.js';
import type { JobRecord, OutputFileRecord } from '../../core/records.js';
import { customIdLimit, imageButtonId } from './image-buttons.js';

/** A message as the delivery writes it: an edit of the reply, or a new message. */
export interface JobMessage {
  content: string;
  components: ActionRowBuilder<ButtonBuilder>[];
  files?: AttachmentBuilder[];
}

/** An output image with its bytes, read from storage. */
export interface OutputImage {
  file: OutputFileRecord;
  bytes: Buffer;
}

const refundNote = 'The credits it cost were refunded.';

/** Longest prompt shown: the settings, reasons and mention must still fit in 2,000 characters. */
const titleLimit = 900;

function shorten(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

function quote(title: string): string {
  return `> ${shorten(title, titleLimit).replaceAll('\n', ' ')}`;
}

/** Seed and settings: with the prompt, what reproduces the images. */
export function settingsLine(payload: ImagePayload): string {
  const parts = [
    `seed \`${payload.seed}\``,
    `${payload.width}×${payload.height}`,
    `${payload.samples} image${payload.samples === 1 ? '' : 's'}`,
    `guidance ${payload.guidanceScale}`,
    `${payload.steps} steps`,
  ];
  if (payload.loraScale !== undefined) parts.push(`face ${payload.loraScale}`);
  const negative = payload.negativePrompt ? `\nwithout: ${shorten(payload.negativePrompt, 300)}` : '';
  return parts.join(' · ') + negative;
}

/** The reply while a job waits or runs: where it stands, and a cancel button. */
export function waitingView(job: JobRecord, title: string, progress: number | null, position: number | undefined): JobMessage {
  let status: string;
  if (job.status === 'CREATED') {
    status = position === undefined || position === 0 ? '⏳ Queued: yours is next.' : `⏳ Queued: ${position} job${position === 1 ? '' : 's'} ahead of yours.`;
  } else {
    status = progress === null ? '🎨 Generating…' : `🎨 Generating… ${Math.floor(progress * 100)}%`;
  }
  const cancel = new ButtonBuilder().setCustomId(imageButtonId({ action: 'cancel', jobId: job.id })).setLabel('Cancel').setStyle(ButtonStyle.Secondary);
  return {
    content: [status, quote(title), settingsLine(job.payload as ImagePayload)].join('\n'),
    components: [new ActionRowBuilder<ButtonBuilder>().addComponents(cancel)],
  };
}

/** The finished job: its images attached, the settings, re-roll and per-image feedback. */
export function resultView(job: JobRecord, title: string, images: readonly OutputImage[], mention?: string): JobMessage {
  const missing = job.outputFiles.length - images.length;
  const lines = [
    mention ? `${mention} your images are ready:` : '🖼️ Done:',
    quote(title),
    settingsLine(job.payload as ImagePayload),
    ...(missing > 0 ? [`(${missing} image${missing === 1 ? '' : 's'} could not be read from storage.)`] : []),
  ];
  return {
    content: lines.join('\n'),
    components: resultButtons(job),
    files: images.map((image) => new AttachmentBuilder(image.bytes, { name: image.file.name })),
  };
}

/**
 * Re-roll, then one row per image with like and dislike; the verdict given is coloured in.
 * Four images make five rows, Discord's limit.
 */
export function resultButtons(job: JobRecord): ActionRowBuilder<ButtonBuilder>[] {
  const reroll = new ButtonBuilder().setCustomId(imageButtonId({ action: 'reroll', jobId: job.id })).setLabel('Re-roll').setEmoji('🎲').setStyle(ButtonStyle.Primary);
  const rows = [new ActionRowBuilder<ButtonBuilder>().addComponents(reroll)];
  const numbered = job.outputFiles.length > 1;
  for (const [index, file] of job.outputFiles.slice(0, 4).entries()) {
    const like = imageButtonId({ action: 'like', jobId: job.id, output: file.name });
    const dislike = imageButtonId({ action: 'dislike', jobId: job.id, output: file.name });
    if (dislike.length > customIdLimit) continue;
    const button = (customId: string, emoji: string, chosen: boolean, chosenStyle: ButtonStyle) => {
      const built = new ButtonBuilder().setCustomId(customId).setEmoji(emoji).setStyle(chosen ? chosenStyle : ButtonStyle.Secondary);
      return numbered ? built.setLabel(String(index + 1)) : built;
    };
    rows.push(
      new ActionRowBuilder<ButtonBuilder>().addComponents(
        button(like, '👍', file.feedback.like === true, ButtonStyle.Success),
        button(dislike, '👎', file.feedback.like === false, ButtonStyle.Danger),
      ),
    );
  }
  return rows;
}

/** A job that failed or was canceled: why, the refund, and a button to try again. */
export function endedView(job: JobRecord, title: string, mention?: string): JobMessage {
  const reason =
    job.status === 'CANCELED' ? '🚫 Canceled.' : `⚠️ The image could not be made: ${shorten(job.failure?.message ?? 'the engine gave no reason.', 600)}`;
  const again = new ButtonBuilder().setCustomId(imageButtonId({ action: 'reroll', jobId: job.id })).setLabel('Try again').setEmoji('🎲').setStyle(ButtonStyle.Secondary);
  return {
    content: [mention ? `${mention} ${reason}` : reason, refundNote, quote(title), settingsLine(job.payload as ImagePayload)].join('\n'),
    components: [new ActionRowBuilder<ButtonBuilder>().addComponents(again)],
  };
}

/** What the owner of a face-model training is told when it ends. */
export function trainingNotice(job: JobRecord, characterName: string, mention: string): string {
  switch (job.status) {
    case 'SUCCESS':
      return `${mention} ✅ The face model of **${characterName}** is ready. Draw it with \`/imagine character:${characterName}\`.`;
    case 'CANCELED':
      return `${mention} 🚫 Training the face model of **${characterName}** was canceled. ${refundNote}`;
    default:
      return `${mention} ⚠️ Training the face model of **${characterName}** failed: ${shorten(job.failure?.message ?? 'the trainer gave no reason.', 600)} ${refundNote}`;
  }
}
