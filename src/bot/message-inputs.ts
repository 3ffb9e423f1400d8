import type { Message } from 'discord.js';
import { checkDeclaredAudio, isDeclaredAudio } from '../audio/audio-input.js';
import type { ChatInput } from '../core/chat.js';
import { isImageMimeType } from '../core/media.js';
import { downloadAttachment } from './attachments.js';

/** Largest image the bot downloads to send to the character. */
const maxImageBytes = 10 * 1024 * 1024;
/** Voice messages are a few hundred kilobytes; this is a ten-minute recording at a high bitrate. */
const maxAudioBytes = 25 * 1024 * 1024;

/**
 * What a Discord message says, as chat inputs in the order they are stored: its images, its
 * audio (a voice message, or any audio file: transcribed by the core), then its text. An audio
 * file too large or too long by what Discord declares is refused before it is downloaded; other
 * files are not ours and are left alone. `audio: false` leaves audio alone too.
 */
export async function inputsOf(message: Message, text: string = message.content, options: { audio?: boolean } = {}): Promise<ChatInput[]> {
  const inputs: ChatInput[] = [];
  for (const attachment of message.attachments.values()) {
    const type = attachment.contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
    if (isImageMimeType(type)) {
      inputs.push({ image: await downloadAttachment(attachment, maxImageBytes), mimeType: type });
    } else if (options.audio !== false && isDeclaredAudio({ name: attachment.name, contentType: type })) {
      checkDeclaredAudio({ name: attachment.name, size: attachment.size, contentType: type, durationSeconds: attachment.duration });
      inputs.push({ audio: await downloadAttachment(attachment, maxAudioBytes), mimeType: type || 'application/octet-stream' });
    }
  }
  if (text.trim()) inputs.push({ text });
  return inputs;
}

/** Whether the message is a Discord voice message (recorded in the app, flag IS_VOICE_MESSAGE). */
export function isVoiceMessage(message: Message): boolean {
  return message.flags.has('IsVoiceMessage');
}
