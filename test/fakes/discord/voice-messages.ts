/**
 * Discord's rules for voice messages (flag IS_VOICE_MESSAGE, 1 << 13), per the wire notes: exactly
 * one Ogg Opus attachment carrying `duration_secs` and a base64 `waveform` of at most 256 samples,
 * no content, embeds or other files, and SEND_VOICE_MESSAGES in a guild. Voice messages cannot be
 * edited afterwards.
 */
import { MessageFlags, PermissionFlagsBits } from 'discord-api-types/v10';
import { attachmentContentType } from './attachments.js';
import { requirePermissions, type FakeContext } from './context.js';
import { DiscordHttpError } from './errors.js';
import type { MessageInput } from './message-input.js';
import type { ChannelRecord, MessageRecord } from './state.js';

/**
 * Ogg, however the client labelled it: discord.js sniffs the bytes and may send `application/ogg` or
 * `audio/ogg; codecs=opus`; Discord stores a voice message's file as `audio/ogg` either way.
 */
export function isOgg(contentType: string | undefined): boolean {
  const base = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return base === 'audio/ogg' || base === 'application/ogg' || base === 'audio/opus';
}

const refuse = (code: number, message: string): DiscordHttpError => new DiscordHttpError(400, { message, code });

/** At most 256 one-byte samples, base64-encoded. */
const MAX_WAVEFORM_SAMPLES = 256;

/** Throws Discord's error when a new message sets IS_VOICE_MESSAGE but breaks its rules. */
export function checkVoiceMessage(context: FakeContext, channel: ChannelRecord, input: MessageInput): void {
  if (((input.flags ?? 0) & MessageFlags.IsVoiceMessage) === 0) return;
  if (channel.guildId !== null) requirePermissions(context, channel, PermissionFlagsBits.SendVoiceMessages);
  if ((input.content ?? '') !== '' || (input.embeds?.length ?? 0) > 0 || (input.components?.length ?? 0) > 0 || input.hasStickersOrPoll) {
    throw refuse(50159, 'Voice messages do not support additional content.');
  }
  const attachments = input.attachments ?? [];
  const only = attachments[0];
  if (attachments.length !== 1 || only === undefined || only.kind !== 'upload' || !isOgg(attachmentContentType(only.filename, only.file.contentType))) {
    throw refuse(50160, 'Voice messages must have a single audio attachment.');
  }
  const waveform = only.voice?.waveform;
  const duration = only.voice?.durationSecs;
  const samples = waveform === undefined ? -1 : Buffer.from(waveform, 'base64').length;
  if (duration === undefined || !(duration > 0) || samples < 1 || samples > MAX_WAVEFORM_SAMPLES) {
    throw refuse(50161, 'Voice messages must have supporting metadata.');
  }
}

/** Throws 50162 for an edit of a voice message. */
export function checkVoiceMessageEdit(message: MessageRecord): void {
  if ((message.flags & MessageFlags.IsVoiceMessage) !== 0) throw refuse(50162, 'Voice messages cannot be edited.');
}
