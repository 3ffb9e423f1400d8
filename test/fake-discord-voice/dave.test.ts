/**
 * DAVE (end-to-end encryption) negotiated by the fake voice server with the bot's REAL
 * @discordjs/voice and @snazzah/davey: the fake is the voice gateway (MLS delivery service and
 * external sender), the test users' clients are davey sessions in the fake. The group is made and
 * changed as people come and go, the bot's audio is decrypted as the other members would, and what
 * people say reaches the bot's receive streams end-to-end encrypted and comes out byte for byte.
 */
import { createAudioPlayer, EndBehaviorType, joinVoiceChannel, type AudioPlayer, type VoiceConnection, type VoiceReceiver } from '@discordjs/voice';
import type { APIUser } from 'discord-api-types/v10';
import { VoiceCloseCodes, VoiceOpcodes } from 'discord-api-types/voice/v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dominantFrequency, TRAILING_SILENCE_FRAMES, type DaveGroupView } from '../fakes/discord-voice/fake-voice.js';
import { daveOf, daveSettled } from './dave-client.js';
import { startVoiceWorld, toneResource, type VoiceWorld } from './harness.js';
import { audioFrames, collect, decode, monoTone, tapUdp, type WirePacket } from './receiving.js';

const TRANSITION_TIMEOUT_MS = 600;
const afterSilence = (duration: number) => ({ end: { behavior: EndBehaviorType.AfterSilence, duration } }) as const;
/** The Opus frame of an RTP payload: the padding (last byte counts it) taken off. */
const unpadded = (packet: WirePacket): Buffer => ((packet.header.firstByte & 0x20) === 0 ? packet.payload : packet.payload.subarray(0, packet.payload.length - packet.payload.at(-1)!));
const endsWithMarker = (frame: Buffer): boolean => frame.at(-1) === 0xfa && frame.at(-2) === 0xfa;

describe('fake Discord voice with DAVE', () => {
  let world: VoiceWorld;
  let connection: VoiceConnection;
  let receiver: VoiceReceiver;
  let player: AudioPlayer;
  let wire: { packets: WirePacket[]; problems: string[] };
  let alice: APIUser;
  let bob: APIUser;
  let carol: APIUser;
  let place: { guildId: string; channelId: string };
  const group = (): DaveGroupView => world.voice.daveGroup(place.guildId, place.channelId)!;
  const sentTo = (userId: string, op: number) => group().log.filter((event) => event.direction === 'sent' && event.userId === userId && event.op === op);
  const botId = () => world.discord.botUser.id;

  /** The bot plays a tone; resolves with what the fake heard of it, decrypted as the members would. */
  async function play(frequency: number, durationMs: number) {
    const since = performance.now();
    player.play(toneResource(frequency, durationMs));
    return world.voice.waitForAudio(place.guildId, (heard) => heard.durationMs >= durationMs && heard.packets.at(-1)?.silence === true, { since });
  }

  /**
   * Resolves when the library says the user went quiet, 100 ms after the last packet it read. Call
   * once `speak` has resolved (the last packet sent): an earlier quiet may still be pending before.
   */
  function quietAgain(user: APIUser): Promise<void> {
    return new Promise((resolve) => {
      const ended = (userId: string): void => {
        if (userId !== user.id) return;
        receiver.speaking.off('end', ended);
        resolve();
      };
      receiver.speaking.on('end', ended);
    });
  }

  /** A person says a tone in burst; resolves with what was sent and what the bot's stream yielded. */
  async function hear(user: APIUser, frequency: number, durationMs: number) {
    const stream = collect(receiver.subscribe(user.id, afterSilence(100)));
    const spoken = await world.voice.speak(user, monoTone(frequency, durationMs), { pace: 'burst' });
    return { spoken, heard: await stream };
  }

  beforeAll(async () => {
    world = await startVoiceWorld({ dave: { transitionTimeoutMs: TRANSITION_TIMEOUT_MS } });
    place = { guildId: world.guild.id, channelId: world.voiceChannelId };
    alice = world.discord.createUser({ username: 'alice' });
    bob = world.discord.createUser({ username: 'bob' });
    carol = world.discord.createUser({ username: 'carol' });
    world.voice.joinVoice(alice, world.voiceChannelId);
    connection = await world.join({ selfDeaf: false });
    receiver = connection.receiver;
    player = createAudioPlayer();
    connection.subscribe(player);
    wire = tapUdp(connection, world.voice.connections.at(-1)!.secretKey!);
  });
  afterAll(() => world.stop());

  it('negotiates DAVE: the bot and alice, both pending, make the group at epoch 1 (transition 0), with one privacy code', async () => {
    const settled = await daveSettled(world.voice, connection, place);
    const record = world.voice.connections.at(-1)!;
    expect(record.maxDaveProtocolVersion).toBe(1);
    expect(record.daveProtocolVersion).toBe(1);
    const dave = daveOf(connection)!;
    expect(dave.protocolVersion).toBe(1);
    expect(dave.session?.ready).toBe(true);
    expect(settled).toMatchObject({ id: 0, epoch: 1 });
    expect(group().members.map((member) => member.userId).sort()).toEqual([alice.id, botId()].sort());
    // The epoch authenticator is the same for every member: the bot is in alice's group.
    expect(connection.voicePrivacyCode).toMatch(/^\d{30}$/);
    expect(connection.voicePrivacyCode).toBe(world.voice.daveMember(place.guildId, alice)!.session.voicePrivacyCode);
    expect(sentTo(botId(), VoiceOpcodes.DaveMlsExternalSender)).toHaveLength(1);
    expect(group().log.some((event) => event.direction === 'received' && event.userId === botId() && event.op === VoiceOpcodes.DaveMlsKeyPackage)).toBe(true);
    expect(group().problems).toEqual([]);
    expect(world.voice.daveMember(place.guildId, alice)!.problems).toEqual([]);
  });

  it('plays audio the other members decrypt: every audio frame leaves the bot end-to-end encrypted', async () => {
    const heard = await play(440, 1000);
    const audio = heard.packets.filter((packet) => !packet.silence);
    expect(audio.length).toBeGreaterThanOrEqual(50);
    expect(audio.every((packet) => packet.endToEnd)).toBe(true);
    expect(Math.round(dominantFrequency(heard.segments.at(-1)!.pcm) / 10) * 10).toBe(440);
    expect(world.voice.connections.at(-1)!.problems).toEqual([]);
  });

  it('delivers a person’s speech end-to-end encrypted on the wire and decrypted, byte for byte, on the bot’s stream', async () => {
    const { spoken, heard } = await hear(alice, 440, 600);
    const [stretch] = spoken.talk;
    expect(stretch!.endToEndFrames).toBe(stretch!.opus.length);
    expect(audioFrames(heard.frames)).toEqual(stretch!.opus);
    expect(heard.frames.length - audioFrames(heard.frames).length).toBe(TRAILING_SILENCE_FRAMES);
    // On the wire, under the transport encryption, each audio frame is a DAVE frame; silence frames pass as they are.
    const onWire = wire.packets.filter((packet) => packet.header.ssrc === spoken.ssrc).map(unpadded);
    const audioOnWire = onWire.filter((frame) => frame.length > 3);
    expect(audioOnWire).toHaveLength(stretch!.opus.length);
    expect(audioOnWire.every(endsWithMarker)).toBe(true);
    expect(audioOnWire.some((frame, index) => frame.equals(stretch!.opus[index]!))).toBe(false);
  });

  it('takes in a member joining mid-call: Add proposal, commit, welcome, a new epoch, and both are heard after it', async () => {
    const before = connection.voicePrivacyCode;
    world.voice.joinVoice(bob, world.voiceChannelId);
    const settled = await daveSettled(world.voice, connection, place);
    expect(settled).toMatchObject({ epoch: 2, added: [bob.id], removed: [], timedOut: false });
    expect(settled.id).toBeGreaterThan(0);
    expect(connection.voicePrivacyCode).not.toBe(before);
    expect(daveOf(connection)!.lastTransitionId).toBe(settled.id);
    // The bot answered the transition before the gateway executed it.
    expect(group().log.find((event) => event.userId === botId() && event.op === VoiceOpcodes.DaveTransitionReady && event.transitionId === settled.id)).toBeDefined();

    const [aliceTalk, bobTalk] = await Promise.all([hear(alice, 440, 400), hear(bob, 660, 300)]);
    expect(audioFrames(aliceTalk.heard.frames)).toEqual(aliceTalk.spoken.talk[0]!.opus);
    expect(audioFrames(bobTalk.heard.frames)).toEqual(bobTalk.spoken.talk[0]!.opus);
    expect(bobTalk.spoken.talk[0]!.endToEndFrames).toBe(bobTalk.spoken.talk[0]!.opus.length);
    expect(Math.round(dominantFrequency(decode(audioFrames(bobTalk.heard.frames))) / 10) * 10).toBe(660);
    const heard = await play(330, 400);
    expect(heard.packets.filter((packet) => !packet.silence).every((packet) => packet.endToEnd)).toBe(true);
  });

  it('keeps the stream alive across a key change while someone talks, losing at most the frames sent in the instant of the switch', async () => {
    const stream = collect(receiver.subscribe(alice.id, afterSilence(150)));
    const speaking = world.voice.speak(alice, monoTone(500, 1500), { pace: 'realtime' });
    await new Promise<void>((resolve) => receiver.speaking.once('start', () => resolve()));
    world.voice.joinVoice(carol, world.voiceChannelId);
    const spoken = await speaking;
    const heard = await stream;
    const settled = await daveSettled(world.voice, connection, place);
    expect(settled.added).toEqual([carol.id]);
    const sent = spoken.talk[0]!.opus;
    const received = audioFrames(heard.frames);
    // What came through is what was sent, in order; davey senders switch keys as soon as they commit.
    let cursor = 0;
    for (const frame of received) {
      while (cursor < sent.length && !sent[cursor]!.equals(frame)) cursor += 1;
      expect(cursor, 'a received frame that was not sent, or out of order').toBeLessThan(sent.length);
      cursor += 1;
    }
    expect(sent.length - received.length).toBeLessThanOrEqual(3);
    expect(received.at(-1)).toEqual(sent.at(-1));
  });

  it('removes a member who leaves (Remove proposal, new epoch) and waits out one who never answers a transition', async () => {
    world.voice.daveMember(place.guildId, alice)!.behaviour.answersTransitions = false;
    const since = performance.now();
    world.voice.leaveVoice(carol, place.guildId);
    const settled = await daveSettled(world.voice, connection, { ...place, since });
    expect(settled).toMatchObject({ removed: [carol.id], added: [], timedOut: true });
    expect(settled.executedAt! - settled.announcedAt).toBeGreaterThanOrEqual(TRANSITION_TIMEOUT_MS - 5);
    expect(group().members.map((member) => member.userId)).not.toContain(carol.id);
    world.voice.daveMember(place.guildId, alice)!.behaviour.answersTransitions = true;
    const { spoken, heard } = await hear(bob, 660, 200);
    expect(audioFrames(heard.frames)).toEqual(spoken.talk[0]!.opus);
  });

  it('tells the bot, left alone, to start a new group (op 24 epoch 1, op 21 transition 0): it plays plain until someone comes back', async () => {
    const since = performance.now();
    world.voice.leaveVoice(bob, place.guildId);
    await daveSettled(world.voice, connection, { ...place, since });
    world.voice.leaveVoice(alice, place.guildId);
    await world.voice.waitFor(() => group().log.find((event) => event.userId === botId() && event.direction === 'received' && event.op === VoiceOpcodes.DaveMlsKeyPackage && event.at > sentTo(botId(), VoiceOpcodes.DavePrepareEpoch).at(-1)!.at));
    expect(sentTo(botId(), VoiceOpcodes.DavePrepareEpoch).at(-1)).toMatchObject({ epoch: 1 });
    expect(sentTo(botId(), VoiceOpcodes.DavePrepareTransition).at(-1)).toMatchObject({ transitionId: 0 });
    expect(group().epoch).toBe(0);
    expect(daveOf(connection)!.session?.ready).toBe(false);
    const alone = await play(440, 200);
    expect(alone.packets.some((packet) => packet.endToEnd)).toBe(false);

    world.voice.joinVoice(alice, world.voiceChannelId);
    const settled = await daveSettled(world.voice, connection, place);
    expect(settled).toMatchObject({ id: 0, epoch: 1 });
    const { spoken, heard } = await hear(alice, 440, 200);
    expect(audioFrames(heard.frames)).toEqual(spoken.talk[0]!.opus);
    expect(world.voice.connections.at(-1)!.problems).toEqual([]);
    expect(group().problems).toEqual([]);
  });

  it('fails the receive stream after 36 undecryptable frames when no transition was executed yet (a client sending plain Opus)', async () => {
    expect(daveOf(connection)!.lastTransitionId).toBe(0);
    const stream = receiver.subscribe(alice.id, afterSilence(100));
    const failed = new Promise<Error>((resolve) => stream.once('error', resolve));
    const spoken = await world.voice.speak(alice, monoTone(440, 1000), { pace: 'burst', endToEnd: false });
    const read = quietAgain(alice);
    expect(spoken.talk[0]!.endToEndFrames).toBe(0);
    expect((await failed).message).toContain('UnencryptedWhenPassthroughDisabled');
    expect(stream.destroyed).toBe(true);
    // Once the library has read her last packet, a new stream hears her encrypted speech.
    await read;
    const { spoken: again, heard } = await hear(alice, 440, 200);
    expect(audioFrames(heard.frames)).toEqual(again.talk[0]!.opus);
  });

  it('recovers from a welcome the bot cannot process: op 31 and a new key package, removed and added again', async () => {
    world.voice.joinVoice(bob, world.voiceChannelId);
    await daveSettled(world.voice, connection, place);
    connection.destroy();
    // Alice or bob commits the bot's Add; whoever does sends a damaged welcome.
    for (const user of [alice, bob]) world.voice.daveMember(place.guildId, user)!.corruptNextWelcome();
    connection = await world.join({ selfDeaf: false });
    receiver = connection.receiver;
    connection.subscribe(player);
    const flagged = await world.voice.waitFor(() => group().log.find((event) => event.userId === botId() && event.op === VoiceOpcodes.DaveMlsInvalidCommitWelcome));
    const settled = await daveSettled(world.voice, connection, { ...place, since: flagged.at });
    expect(settled.added).toEqual([botId()]);
    // Removed (the gateway had it as a member since the commit that welcomed it) and added again,
    // in one commit or two, depending on whether its new key package came before the removal was committed.
    const since = group().transitions.filter((transition) => transition.announcedAt > flagged.at);
    expect(since.flatMap((transition) => transition.removed)).toEqual([botId()]);
    for (const user of [alice, bob]) expect(world.voice.daveMember(place.guildId, user)!.problems).toEqual([]);
    const { spoken, heard } = await hear(bob, 660, 200);
    expect(audioFrames(heard.frames)).toEqual(spoken.talk[0]!.opus);
  });

  it('after an executed transition, undecryptable frames make the library start over instead (op 31, new key package), and hearing resumes', async () => {
    const last = daveOf(connection)!.lastTransitionId!;
    expect(last).toBeGreaterThan(0);
    const stream = receiver.subscribe(bob.id, { end: { behavior: EndBehaviorType.Manual } });
    const frames: Buffer[] = [];
    const errors: Error[] = [];
    stream.on('data', (frame: Buffer) => frames.push(frame));
    stream.on('error', (error) => errors.push(error));
    const since = performance.now();
    const plain = await world.voice.speak(bob, monoTone(660, 1000), { pace: 'burst', endToEnd: false });
    const flagged = await world.voice.waitFor(() => group().log.find((event) => event.at > since && event.userId === botId() && event.op === VoiceOpcodes.DaveMlsInvalidCommitWelcome));
    expect(flagged.transitionId).toBe(last);
    const settled = await daveSettled(world.voice, connection, { ...place, since: flagged.at });
    expect(settled.added).toEqual([botId()]);
    const spoken = await world.voice.speak(bob, monoTone(660, 200), { pace: 'burst' });
    await quietAgain(bob);
    expect(errors).toEqual([]);
    expect(stream.destroyed).toBe(false);
    stream.destroy();
    // 37 plain frames failed; the rest came while the library had no keys, and passed as they were.
    const received = audioFrames(frames);
    const passedThrough = received.slice(0, received.length - spoken.talk[0]!.opus.length);
    expect(received.slice(passedThrough.length)).toEqual(spoken.talk[0]!.opus);
    expect(passedThrough).toEqual(plain.talk[0]!.opus.slice(37));
  });

  it('flags a bot that goes back to plain audio though nobody told it to start over', async () => {
    const record = world.voice.connections.at(-1)!;
    expect((await play(440, 200)).packets.filter((packet) => !packet.silence).every((packet) => packet.endToEnd)).toBe(true);
    expect(record.problems).toEqual([]);
    // Its keys thrown away behind the gateway's back: the library sends plain Opus from then on.
    const dave = daveOf(connection)!;
    dave.session!.reinit(1, dave.userId, dave.channelId);
    player.play(toneResource(440, 400));
    const flagged = await world.voice.waitFor(() => record.problems.find((problem) => problem.includes('plain Opus frame after end-to-end encrypted ones')));
    expect(flagged).toBeDefined();
  });

  it('refuses a client that offers no DAVE with close code 4017, as Discord does', async () => {
    connection.destroy();
    const refused = joinVoiceChannel({ guildId: place.guildId, channelId: place.channelId, adapterCreator: world.guild.voiceAdapterCreator, daveEncryption: false });
    try {
      const code = await new Promise<number>((resolve) => {
        refused.on('stateChange', (_old, next) => {
          if ('networking' in next) next.networking.once('close', resolve);
        });
      });
      expect(code).toBe(VoiceCloseCodes.EndToEndEncryptionDAVEProtocolRequired);
    } finally {
      refused.destroy();
    }
  });
});
