import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MessageFlags, PermissionFlagsBits } from 'discord-api-types/v10';
import type { SendableChannels } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPUS_PRE_SKIP } from '../../src/audio/ogg-opus.js';
import { createAudioEncoder } from '../../src/audio/mp3.js';
import { concatPcm } from '../../src/audio/pcm.js';
import { VoiceReplies, type VoiceReplySpeech, cutAtSentence } from '../../src/bot/voice/voice-reply.js';
import { accountActor, adminActor } from '../../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../../src/core/clock.js';
import { type Core, createCore } from '../../src/core/core.js';
import { EngineError } from '../../src/core/errors.js';
import type { PcmAudio } from '../../src/core/ports.js';
import type { CharacterRecord } from '../../src/core/records.js';
import { createOpenAICompatibleChatModel } from '../../src/engines/chat/openai-compatible.js';
import { type EspeakSpeechEngine, createEspeakSpeechEngine } from '../../src/engines/speech/espeak.js';
import { createSharpImageCodec } from '../../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../../src/store/file-store.js';
import { type SqlStore, openSqlStore } from '../../src/store/sql/sql-store.js';
import { decode, demux, rms } from '../audio/ogg-opus-reader.js';
import { startWithClient } from '../fake-discord/harness.js';
import { DEFAULT_BOT_PERMISSIONS } from '../fakes/discord/permissions.js';

type Setup = Awaited<ReturnType<typeof startWithClient>>;

/** Log lines as the logger port receives them. */
function recordingLogger() {
  const lines: Array<{ level: string; fields: object; message: string }> = [];
  const at = (level: string) => (fields: object, message: string) => void lines.push({ level, fields, message });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

/** The core's speech, keeping what it synthesised so the test can compare the file with it. */
function recordingSpeech(speech: VoiceReplySpeech, maxTextLength = speech.maxTextLength) {
  const spoken: Array<{ text: string; pcm: PcmAudio }> = [];
  const wrapped: VoiceReplySpeech = {
    maxTextLength,
    streamAs(character, text) {
      const pieces = speech.streamAs(character, text);
      return (async function* () {
        const collected: PcmAudio[] = [];
        for await (const piece of pieces) {
          collected.push(piece);
          yield piece;
        }
        spoken.push({ text, pcm: concatPcm(collected) });
      })();
    },
  };
  return { spoken, speech: wrapped };
}

describe('voice-message replies through discord.js to the fake Discord', () => {
  let setup: Setup;
  let directory: string;
  let repositories: SqlStore;
  let engine: EspeakSpeechEngine;
  let core: Core;
  let singer: CharacterRecord;
  let mute: CharacterRecord;

  const channel = async (id: string) => (await setup.client.channels.fetch(id)) as SendableChannels;

  beforeAll(async () => {
    setup = await startWithClient();
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-voice-reply-'));
    repositories = await openSqlStore(`sqlite://${path.join(directory, 'likeness.sqlite')}`);
    engine = createEspeakSpeechEngine();
    core = createCore({
      repositories,
      files: new DiskFileStore(path.join(directory, 'files')),
      // Voice replies never chat; this adapter is never called.
      chatModel: createOpenAICompatibleChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'unused' }),
      imageCodec: createSharpImageCodec(),
      speech: { engine, encoder: createAudioEncoder() },
      clock: createSystemClock(),
      ids: createRandomIds(),
      links: { sign: (key) => `http://127.0.0.1:9/files/${key}` },
      logger: { debug() {}, info() {}, warn() {}, error() {} },
      options: { startingBalance: 0, adminApiKey: undefined, chat: { contextTokens: 4096, maxReplyTokens: 256 } },
    });
    const singing = (await core.accounts.create(adminActor, { username: 'singer' })).account;
    singer = await core.speech!.train(accountActor(singing.id), singing.characterId, { voiceId: 'en-us+f3' });
    const quiet = (await core.accounts.create(adminActor, { username: 'quiet' })).account;
    mute = await core.characters.get(adminActor, quiet.characterId);
  });
  afterAll(async () => {
    await setup?.stop();
    await engine?.close();
    await repositories?.close();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('answers a DM with a voice message: flag 8192, one Ogg file whose decoded length is the speech’s', async () => {
    const { logger } = recordingLogger();
    const { spoken, speech } = recordingSpeech(core.speech!);
    const dm = setup.fake.openDm(setup.user);
    const asked = setup.fake.sendMessage({ channelId: dm, author: setup.user, content: 'Say something?' });
    const text = 'The lighthouse keeper counted every ship that passed. Then he slept.';

    const outcome = await new VoiceReplies(speech, logger).send({ channel: await channel(dm), character: singer, text, replyTo: asked.id });

    expect(outcome).toMatchObject({ kind: 'sent', spokenText: text, shortened: false });
    if (outcome.kind !== 'sent') throw new Error('not sent');
    const message = setup.fake.message(outcome.messageId)!;
    expect(message.author.id).toBe(setup.fake.botUser.id);
    expect(message.flags! & MessageFlags.IsVoiceMessage).toBe(MessageFlags.IsVoiceMessage);
    expect(message.content).toBe('');
    expect(message.message_reference?.message_id).toBe(asked.id);
    expect(message.attachments).toHaveLength(1);
    const attachment = message.attachments[0]!;
    expect(attachment).toMatchObject({ filename: 'voice-message.ogg', content_type: 'audio/ogg', duration_secs: outcome.durationSeconds });
    const bars = Buffer.from(attachment.waveform!, 'base64');
    expect(bars.length).toBeGreaterThan(10);
    expect(bars.length).toBeLessThanOrEqual(256);
    expect(Math.max(...bars)).toBe(255);

    // The file as any client gets it: from the CDN, demuxed and decoded.
    const download = await fetch(attachment.url);
    expect(download.status).toBe(200);
    const { head, packets } = await demux(new Uint8Array(await download.arrayBuffer()));
    expect(head.toString('latin1', 0, 8)).toBe('OpusHead');
    const decoded = decode(packets);
    const playedSeconds = (decoded.length - OPUS_PRE_SKIP) / 48_000;
    const [synthesised] = spoken;
    expect(synthesised?.text).toBe(text);
    const speechSeconds = synthesised!.pcm.samples.length / synthesised!.pcm.sampleRate;
    expect(attachment.duration_secs).toBeCloseTo(speechSeconds, 6);
    expect(speechSeconds).toBeGreaterThan(2);
    // The last 20 ms frame is padded with silence: never shorter, less than a frame longer.
    expect(playedSeconds).toBeGreaterThanOrEqual(speechSeconds);
    expect(playedSeconds - speechSeconds).toBeLessThan(0.02);
    expect(rms(decoded)).toBeGreaterThan(500);
  });

  it('answers in a guild thread once the bot may send voice messages there, and says "not permitted" before, sending nothing', async () => {
    const { lines, logger } = recordingLogger();
    const replies = new VoiceReplies(core.speech!, logger);
    const parent = setup.fake.createTextChannel(setup.fake.guild.id, 'voice-notes');
    const thread = setup.fake.createThread(parent.id, { name: 'a conversation' });
    const request = { channel: await channel(thread.id), character: singer, text: 'Hello from the thread.' };

    const refused = await replies.send(request);
    expect(refused).toEqual({ kind: 'not-permitted', reason: expect.stringContaining('Send Voice Messages') });
    expect(setup.fake.messages(thread.id).filter((message) => message.author.id === setup.fake.botUser.id)).toHaveLength(0);
    expect(lines.map((line) => line.message)).toContain('voice reply not permitted');

    setup.fake.setBotPermissions(parent.id, DEFAULT_BOT_PERMISSIONS | PermissionFlagsBits.SendVoiceMessages);
    const sent = await replies.send(request);
    expect(sent.kind).toBe('sent');
    const [message] = setup.fake.messages(thread.id);
    expect(message?.flags! & MessageFlags.IsVoiceMessage).toBe(MessageFlags.IsVoiceMessage);
  });

  it('answers "no voice" for a character without one and "no speech engine" without one, sending nothing', async () => {
    const dm = setup.fake.openDm(setup.user);
    const before = setup.fake.messages(dm).length;
    const { logger } = recordingLogger();
    const noVoice = await new VoiceReplies(core.speech!, logger).send({ channel: await channel(dm), character: mute, text: 'Hello.' });
    expect(noVoice).toEqual({ kind: 'no-voice', reason: 'quiet has no voice yet; its owner can give it one with /character voice.' });
    const noEngine = await new VoiceReplies(undefined, logger).send({ channel: await channel(dm), character: singer, text: 'Hello.' });
    expect(noEngine.kind).toBe('no-speech-engine');
    const nothing = await new VoiceReplies(core.speech!, logger).send({ channel: await channel(dm), character: singer, text: '  \n ' });
    expect(nothing.kind).toBe('nothing-to-say');
    expect(setup.fake.messages(dm)).toHaveLength(before);
  });

  it('says aloud only what a voice would: no actions between asterisks, links or markup', async () => {
    const dm = setup.fake.openDm(setup.user);
    const { logger } = recordingLogger();
    const { spoken, speech } = recordingSpeech(core.speech!);
    const sent = await new VoiceReplies(speech, logger).send({ channel: await channel(dm), character: singer, text: '*waves* Hello there, **friend**! See <https://example.com/x>' });
    expect(sent).toMatchObject({ kind: 'sent', spokenText: 'Hello there, friend! See' });
    expect(spoken.map((each) => each.text)).toEqual(['Hello there, friend! See']);
    const before = setup.fake.messages(dm).length;
    const nothing = await new VoiceReplies(speech, logger).send({ channel: await channel(dm), character: singer, text: '*nods slowly*' });
    expect(nothing.kind).toBe('nothing-to-say');
    expect(setup.fake.messages(dm)).toHaveLength(before);
  });

  it('logs a speech engine failure and tells the caller without the engine’s words', async () => {
    const { lines, logger } = recordingLogger();
    const failing: VoiceReplySpeech = {
      maxTextLength: 100,
      streamAs: () =>
        (async function* (): AsyncGenerator<PcmAudio> {
          throw new EngineError('espeak crashed: secret internal detail', { provider: 'espeak', purpose: 'speech', status: 500 });
        })(),
    };
    const dm = setup.fake.openDm(setup.user);
    const before = setup.fake.messages(dm).length;
    const outcome = await new VoiceReplies(failing, logger).send({ channel: await channel(dm), character: singer, text: 'Hello.' });
    expect(outcome.kind).toBe('speech-failed');
    expect(JSON.stringify(outcome)).not.toContain('secret');
    expect(lines).toEqual([expect.objectContaining({ level: 'warn', message: 'voice reply not spoken' })]);
    expect(setup.fake.messages(dm)).toHaveLength(before);
  });

  it('answers "refused" when Discord keeps failing, with our words, not Discord’s', async () => {
    const { lines, logger } = recordingLogger();
    const dm = setup.fake.openDm(setup.user);
    const before = setup.fake.messages(dm).length;
    // discord.js tries a 5xx three more times before giving up.
    setup.fake.forceServerError({ route: 'POST /channels/{channel.id}/messages', status: 502, count: 4 });
    const outcome = await new VoiceReplies(core.speech!, logger).send({ channel: await channel(dm), character: singer, text: 'Hello.' });
    expect(outcome).toMatchObject({ kind: 'refused', status: 502, reason: expect.stringContaining('Try again') });
    expect(lines.map((line) => line.message)).toEqual(['voice reply refused by Discord']);
    expect(setup.fake.messages(dm)).toHaveLength(before);
  });

  it('speaks only the whole sentences that fit the engine’s limit', async () => {
    const { logger } = recordingLogger();
    const { spoken, speech } = recordingSpeech(core.speech!, 60);
    const dm = setup.fake.openDm(setup.user);
    const text = 'First comes a short sentence. Then a second one that fits. A third would be too much.';
    const outcome = await new VoiceReplies(speech, logger).send({ channel: await channel(dm), character: singer, text });
    expect(outcome).toMatchObject({ kind: 'sent', spokenText: 'First comes a short sentence. Then a second one that fits.', shortened: true });
    expect(spoken.map((each) => each.text)).toEqual(['First comes a short sentence. Then a second one that fits.']);
  });
});

describe('cutAtSentence', () => {
  it('keeps text that fits, trimmed', () => {
    expect(cutAtSentence('  Hello there.  ', 20)).toEqual({ text: 'Hello there.', shortened: false });
  });

  it('keeps whole sentences, then whole words of a first sentence that is too long alone, then the limit for one endless word', () => {
    expect(cutAtSentence('One. Two! Three? Four.', 16)).toEqual({ text: 'One. Two! Three?', shortened: true });
    expect(cutAtSentence('A very long first sentence without an end', 20)).toEqual({ text: 'A very long first', shortened: true });
    expect(cutAtSentence('Supercalifragilistic', 5)).toEqual({ text: 'Super', shortened: true });
    expect(cutAtSentence('Hiii😀😀', 5)).toEqual({ text: 'Hiii', shortened: true });
  });
});
