/**
 * A character's reply as a Discord voice message: its speech in the character's voice, one Ogg
 * Opus attachment with `duration_secs` and `waveform`, the IS_VOICE_MESSAGE flag and nothing
 * else. Every wire shape of voice messages stays in this file.
 */
import { AttachmentBuilder, DiscordAPIError, HTTPError, MessageFlags, type MessageCreateOptions, type SendableChannels } from 'discord.js';
import { concatPcm } from '../../audio/pcm.js';
import { encodeVoiceMessage } from '../../audio/voice-message.js';
import type { Logger, PcmAudio } from '../../core/ports.js';
import type { CharacterRecord } from '../../core/records.js';
import { speakableText } from '../../core/speakable-text.js';
import type { Speech } from '../../core/speech.js';
import { splitSentences } from '../../engines/speech/speech-text.js';
import { explainError } from '../explain-error.js';

/** What a voice reply needs of the core's `Speech`. */
export type VoiceReplySpeech = Pick<Speech, 'maxTextLength' | 'streamAs'>;

export interface VoiceReplyRequest {
  /** Where the reply goes: a DM or a conversation thread. */
  channel: SendableChannels;
  /** Who speaks; its `ttsVoiceId` is the voice. */
  character: CharacterRecord;
  /** The reply as written; see `VoiceReplies.send` for how long text is shortened. */
  text: string;
  /** The user's voice message being answered, shown as a reply to it (Discord's message reference). */
  replyTo?: string;
}

/** Why no voice message was sent; `reason` is a sentence a person can read (nothing from the engine or Discord's own words). */
export type VoiceReplyRefusal =
  | { kind: 'no-speech-engine'; reason: string }
  | { kind: 'no-voice'; reason: string }
  | { kind: 'nothing-to-say'; reason: string }
  /** Discord said 50013: SEND_VOICE_MESSAGES (or another send permission) is missing here. */
  | { kind: 'not-permitted'; reason: string }
  /** The speech engine failed; what it said is in the log only. */
  | { kind: 'speech-failed'; reason: string }
  /** Discord refused the message for another reason (gone channel, archived thread, 5xx). */
  | { kind: 'refused'; status: number; code: number | string | undefined; reason: string };

export type VoiceReplyOutcome =
  | {
      kind: 'sent';
      messageId: string;
      /** The attachment's `duration_secs`. */
      durationSeconds: number;
      /** What was spoken: the reply, or its first sentences when it was too long for the engine. */
      spokenText: string;
      shortened: boolean;
    }
  | VoiceReplyRefusal;

/** Discord's "Missing Permissions". */
const MISSING_PERMISSIONS = 50013;

/**
 * Sends characters' replies as voice messages. Built per process from the core's speech (absent
 * when no speech engine is configured) and a logger; `send` never throws for what Discord or the
 * speech engine refuse: it answers a `VoiceReplyOutcome` the caller can log or explain.
 */
export class VoiceReplies {
  constructor(
    private readonly speech: VoiceReplySpeech | undefined,
    private readonly logger: Logger,
  ) {}

  /**
   * Speaks `text` as `character` and posts it. Text longer than the speech engine's
   * `maxTextLength` is cut at the last sentence end that fits (at a word when even the first
   * sentence does not), so the message says whole sentences; `shortened` tells the caller.
   * The permission is Discord's to judge: the send itself is the check (50013 → `not-permitted`).
   */
  async send(request: VoiceReplyRequest): Promise<VoiceReplyOutcome> {
    const { channel, character } = request;
    if (!this.speech) return missingEngine;
    const noVoice = voiceReplyObstacle(this.speech, character);
    if (noVoice) return noVoice;
    // What is said aloud of the reply (no actions between asterisks, links or code), then cut to fit.
    const { text: spokenText, shortened } = cutAtSentence(speakableText(request.text), this.speech.maxTextLength);
    if (spokenText === '') return { kind: 'nothing-to-say', reason: 'The reply has nothing to say aloud (only actions, links or code).' };
    const log = { channelId: channel.id, characterId: character.id };

    let pcm: PcmAudio;
    try {
      pcm = concatPcm(await collect(this.speech.streamAs(character, spokenText)));
    } catch (error) {
      this.logger.warn({ ...log, err: error, textLength: spokenText.length }, 'voice reply not spoken');
      return { kind: 'speech-failed', reason: 'The reply could not be spoken.' };
    }
    if (pcm.samples.length === 0) {
      this.logger.warn({ ...log, textLength: spokenText.length }, 'voice reply not spoken: the engine gave no audio');
      return { kind: 'speech-failed', reason: 'The reply could not be spoken.' };
    }
    const audio = await encodeVoiceMessage(pcm);

    const attachment = new AttachmentBuilder(Buffer.from(audio.file), { name: audio.filename })
      .setDuration(audio.durationSeconds)
      .setWaveform(audio.waveform);
    const message: MessageCreateOptions = {
      files: [attachment],
      flags: MessageFlags.IsVoiceMessage,
      allowedMentions: { parse: [], repliedUser: false },
      ...(request.replyTo === undefined ? {} : { reply: { messageReference: request.replyTo, failIfNotExists: false } }),
    };
    try {
      const sent = await channel.send(message);
      return { kind: 'sent', messageId: sent.id, durationSeconds: audio.durationSeconds, spokenText, shortened };
    } catch (error) {
      if (error instanceof DiscordAPIError && error.code === MISSING_PERMISSIONS) {
        this.logger.info({ ...log, code: error.code }, 'voice reply not permitted');
        return { kind: 'not-permitted', reason: 'I need the Send Voice Messages permission here to answer with voice messages.' };
      }
      if (error instanceof DiscordAPIError || error instanceof HTTPError) {
        const code = error instanceof DiscordAPIError ? error.code : undefined;
        this.logger.warn({ ...log, err: error, status: error.status, code }, 'voice reply refused by Discord');
        return { kind: 'refused', status: error.status, code, reason: explainError(error) };
      }
      throw error;
    }
  }
}

const missingEngine = { kind: 'no-speech-engine', reason: 'Voice replies need a speech engine, and none is configured (TTS_ENGINE).' } as const;

/** What stops `character` from answering by voice message before anything is tried: no engine, or no voice. */
export function voiceReplyObstacle(speech: VoiceReplySpeech | undefined, character: CharacterRecord): VoiceReplyRefusal | undefined {
  if (!speech) return missingEngine;
  if (!character.ttsVoiceId) {
    return { kind: 'no-voice', reason: `${character.name} has no voice yet; its owner can give it one with /character voice.` };
  }
  return undefined;
}

/**
 * `text` trimmed to at most `maxLength` characters: whole sentences while they fit, else the
 * first sentence cut after its last whole word (or, for one endless word, at the limit).
 */
export function cutAtSentence(text: string, maxLength: number): { text: string; shortened: boolean } {
  const whole = text.trim();
  if (whole.length <= maxLength) return { text: whole, shortened: false };
  let kept = '';
  for (const sentence of splitSentences(whole, 1)) {
    const joined = kept === '' ? sentence : `${kept} ${sentence}`;
    if (joined.length > maxLength) break;
    kept = joined;
  }
  if (kept === '') {
    const start = whole.slice(0, maxLength + 1);
    const lastSpace = start.search(/\s\S*$/);
    kept = (lastSpace > 0 ? start.slice(0, lastSpace) : withoutHalfCharacter(whole.slice(0, maxLength))).trim();
  }
  return { text: kept, shortened: true };
}

/** Drops a lone high surrogate a cut left at the end (half of an emoji). */
function withoutHalfCharacter(text: string): string {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}

async function collect(pieces: AsyncIterable<PcmAudio>): Promise<PcmAudio[]> {
  const collected: PcmAudio[] = [];
  for await (const piece of pieces) collected.push(piece);
  return collected;
}
