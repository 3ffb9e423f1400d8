import type { Attachment, Message } from 'discord.js';
import { checkDeclaredAudio, isDeclaredAudio } from '../../audio/audio-input.js';
import type { Chat, ChatInput } from '../../core/chat.js';
import { AppError } from '../../core/errors.js';
import { isImageMimeType } from '../../core/media.js';
import { checkAttachmentSize, downloadAttachment } from '../attachments.js';

/** What the core takes (its sizes, its duration, whether it can hear recordings), as it says itself. */
export type InputRules = Pick<Chat, 'inputLimits' | 'requireTranscription'>;

/**
 * A voice message carries exactly one recording. A message with more is refused whole, before
 * anything is downloaded, rather than answered on its first recording alone: the person learns
 * why, and nothing they said is silently left unheard.
 */
const maxRecordingsPerMessage = 1;
/**
 * The files of one message together may weigh this many of the core's largest files (a recording
 * and a few photos): ten attachments at the per-file limit would be held in memory at once.
 */
const largestFilesPerMessage = 3;

/** An attachment we take, with what it becomes. */
interface TakenFile {
  attachment: Attachment;
  kind: 'image' | 'audio';
  mimeType: string;
  maxBytes: number;
}

/**
 * What a Discord message says, as chat inputs in the order they are stored: its images, its
 * audio (a voice message, or any audio file: transcribed by the core), then its text. Whatever
 * the core would refuse by what Discord declares (no speech-to-text engine, too many recordings,
 * a file too large or too long, too much in all) is refused before anything is downloaded.
 * Other files (videos, documents) are not ours and are left alone; the text still counts.
 * `audio: false` leaves audio alone too (a message kept only as context).
 */
export async function inputsOf(message: Message, rules: InputRules, text: string = message.content, options: { audio?: boolean } = {}): Promise<ChatInput[]> {
  const limits = rules.inputLimits;
  const taken = [...message.attachments.values()].flatMap((attachment): TakenFile[] => {
    const type = attachment.contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
    if (isImageMimeType(type)) return [{ attachment, kind: 'image', mimeType: type, maxBytes: limits.maxImageBytes }];
    if (options.audio !== false && isDeclaredAudio({ name: attachment.name, contentType: type })) {
      return [{ attachment, kind: 'audio', mimeType: type || 'application/octet-stream', maxBytes: limits.maxAudioBytes }];
    }
    return [];
  });
  let remainingBytes = checkDeclared(taken, rules);
  const inputs: ChatInput[] = [];
  for (const file of taken) {
    // Discord's declared sizes were checked; the bound while reading holds if a file is bigger than declared.
    const bytes = await downloadAttachment(file.attachment, Math.min(file.maxBytes, remainingBytes));
    remainingBytes -= bytes.byteLength;
    inputs.push(file.kind === 'image' ? { image: bytes, mimeType: file.mimeType } : { audio: bytes, mimeType: file.mimeType });
  }
  if (text.trim()) inputs.push({ text });
  return inputs;
}

/** Refuses by what Discord declares; returns how many bytes the message's files may take in all. */
function checkDeclared(taken: TakenFile[], rules: InputRules): number {
  const limits = rules.inputLimits;
  const recordings = taken.filter((file) => file.kind === 'audio');
  if (recordings.length > 0) rules.requireTranscription();
  if (recordings.length > maxRecordingsPerMessage) {
    throw new AppError('VALIDATION_FAILED', `Send one recording per message: this one has ${recordings.length}, so none was heard.`, {
      details: { recordings: recordings.length, maxRecordings: maxRecordingsPerMessage },
    });
  }
  for (const { attachment, kind, mimeType } of taken) {
    if (kind === 'image') checkAttachmentSize(attachment, limits.maxImageBytes);
    else {
      checkDeclaredAudio(
        { name: attachment.name, size: attachment.size, contentType: mimeType, durationSeconds: attachment.duration },
        { maxBytes: limits.maxAudioBytes, maxDurationSeconds: limits.maxAudioSeconds },
      );
    }
  }
  const maxTotalBytes = largestFilesPerMessage * Math.max(limits.maxImageBytes, limits.maxAudioBytes);
  const totalBytes = taken.reduce((sum, file) => sum + file.attachment.size, 0);
  if (totalBytes > maxTotalBytes) {
    throw new AppError('PAYLOAD_TOO_LARGE', `The files of this message come to ${megabytes(totalBytes)} MB, more than the ${megabytes(maxTotalBytes)} MB I take from one message; send them over several messages.`, {
      details: { size: totalBytes, maxBytes: maxTotalBytes },
    });
  }
  return maxTotalBytes;
}

function megabytes(bytes: number): string {
  return String(Math.round((bytes / (1024 * 1024)) * 10) / 10);
}

/** Whether the message is a Discord voice message (recorded in the app, flag IS_VOICE_MESSAGE). */
export function isVoiceMessage(message: Message): boolean {
  return message.flags.has('IsVoiceMessage');
}
