import type { Message } from 'discord.js';
import { checkDeclaredAudio, isDeclaredAudio } from '../audio/audio-input.js';
import type { Chat, ChatInput } from '../core/chat.js';
import { isImageMimeType } from '../core/media.js';
import { downloadAttachment } from './attachments.js';

/** What the core takes (its sizes, its duration, whether it can hear recordings), as it says itself. */
export type InputRules = Pick<Chat, 'inputLimits' | 'requireTranscription'>;

/**
 * What a Discord message says, as chat inputs in the order they are stored: its images, its
 * audio (a voice message, or any audio file: transcribed by the core), then its text. What the
 * core would refuse by what Discord declares (a recording with no speech-to-text engine, a file
 * too large or too long by the core's own limits) is refused before it is downloaded; other
 * files are not ours and are left alone.
 */
export async function inputsOf(message: Message, rules: InputRules, text: string = message.content): Promise<ChatInput[]> {
  const limits = rules.inputLimits;
  const inputs: ChatInput[] = [];
  for (const attachment of message.attachments.values()) {
    const type = attachment.contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
    if (isImageMimeType(type)) {
      inputs.push({ image: await downloadAttachment(attachment, limits.maxImageBytes), mimeType: type });
    } else if (isDeclaredAudio({ name: attachment.name, contentType: type })) {
      rules.requireTranscription();
      checkDeclaredAudio(
        { name: attachment.name, size: attachment.size, contentType: type, durationSeconds: attachment.duration },
        { maxBytes: limits.maxAudioBytes, maxDurationSeconds: limits.maxAudioSeconds },
      );
      inputs.push({ audio: await downloadAttachment(attachment, limits.maxAudioBytes), mimeType: type || 'application/octet-stream' });
    }
  }
  if (text.trim()) inputs.push({ text });
  return inputs;
}

/** Whether the message is a Discord voice message (recorded in the app, flag IS_VOICE_MESSAGE). */
export function isVoiceMessage(message: Message): boolean {
  return message.flags.has('IsVoiceMessage');
}
