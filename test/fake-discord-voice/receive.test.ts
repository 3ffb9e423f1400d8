/**
 * Test users speak into the fake voice channel and the REAL @discordjs/voice receiver of a bot that
 * joined undeafened hears them: op 5 maps each SSRC, RTP arrives encrypted with the negotiated mode,
 * padded at speech boundaries with a header extension, five silence frames close each stretch, and
 * nothing comes in pauses. DAVE is off (the fake answers protocol version 0): see the fake's README.
 */
import { once } from 'node:events';
import { EndBehaviorType, type VoiceConnection, type VoiceReceiver } from '@discordjs/voice';
import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dominantFrequency, TRAILING_SILENCE_FRAMES } from '../fakes/discord-voice/fake-voice.js';
import { startVoiceWorld, type VoiceWorld } from './harness.js';
import { audioFrames, collect, decode, monoTone, stereoMs, tapUdp, type WirePacket } from './receiving.js';

const afterSilence = (duration: number) => ({ end: { behavior: EndBehaviorType.AfterSilence, duration } }) as const;

describe('fake Discord voice: people speaking to the bot', () => {
  let world: VoiceWorld;
  let connection: VoiceConnection;
  let receiver: VoiceReceiver;
  let wire: { packets: WirePacket[]; problems: string[] };
  let alice: APIUser;
  let bob: APIUser;
  let carol: APIUser;
  const packetsOf = (ssrc: number) => wire.packets.filter((packet) => packet.header.ssrc === ssrc);

  beforeAll(async () => {
    world = await startVoiceWorld();
    alice = world.discord.createUser({ username: 'alice' });
    bob = world.discord.createUser({ username: 'bob' });
    carol = world.discord.createUser({ username: 'carol' });
    for (const user of [alice, bob, carol]) world.voice.joinVoice(user, world.voiceChannelId);
    // A deafened bot gets no audio from Discord, and the library's default is deafened.
    connection = await world.join({ selfDeaf: false });
    receiver = connection.receiver;
    const record = await world.voice.waitFor((voice) => voice.connections.find((candidate) => candidate.secretKey !== null));
    wire = tapUdp(connection, record.secretKey!);
  });
  afterAll(() => world.stop());

  it('delivers espeak speech on the speaker’s stream, paced at 20 ms, byte for byte, ending after silence', async () => {
    const stream = receiver.subscribe(alice.id, afterSilence(150));
    const received = collect(stream);
    const since = performance.now();
    const spoken = await world.voice.speak(alice, { text: 'Hello there, keeper.' });
    const { frames, arrivals, endedAt } = await received;

    expect(receiver.ssrcMap.get(alice.id)?.audioSSRC).toBe(spoken.ssrc);
    const [stretch] = spoken.talk;
    // Padding and the header extension were stripped: the Opus frames are exactly what was sent.
    expect(audioFrames(frames)).toEqual(stretch!.opus);
    expect(frames.length - audioFrames(frames).length).toBe(TRAILING_SILENCE_FRAMES);
    const pcm = decode(audioFrames(frames));
    expect(Math.abs(stereoMs(pcm) - stretch!.pcmMs)).toBeLessThan(20);
    expect(stretch!.pcmMs).toBeGreaterThan(500);
    // Paced, not sent in a burst: the speaker sends frame k at 20·k ms after it starts, never
    // sooner (absolute times, as clients do), so the last audio frame cannot arrive before that
    // however busy the machine is; how evenly frames come is measured, not tested.
    const lastAudio = frames.length - 1 - TRAILING_SILENCE_FRAMES;
    expect(arrivals[lastAudio]! - since).toBeGreaterThanOrEqual(lastAudio * 20 - 1);
    // AfterSilence counts from the last frame that is not silence.
    const lastAudioAt = arrivals[frames.length - 1 - TRAILING_SILENCE_FRAMES]!;
    expect(endedAt - lastAudioAt).toBeGreaterThanOrEqual(145);
  });

  it('sends RTP as clients do: version 2, type 0x78, BE DE extension, padding at the boundaries, +1 and +960', () => {
    const packets = packetsOf(world.voice.speakerSsrc(world.guild.id, alice));
    expect(wire.problems).toEqual([]);
    expect(packets.length).toBeGreaterThan(50);
    for (const [index, packet] of packets.entries()) {
      const { header } = packet;
      expect(header.payloadType).toBe(0x78);
      expect(header.firstByte >> 6).toBe(2);
      expect(header.extensionWords).toBe(1);
      const padded = (header.firstByte & 0x20) !== 0;
      // The first and the last audio packet are padded; the padding's last byte counts it.
      expect(padded).toBe(index === 0 || index === packets.length - 1 - TRAILING_SILENCE_FRAMES);
      if (padded) expect(packet.payload.at(-1)).toBe(7);
      const previous = packets[index - 1];
      if (previous === undefined) continue;
      expect(header.sequence).toBe((previous.header.sequence + 1) % 65_536);
      expect(header.timestamp).toBe((previous.header.timestamp + 960) % 2 ** 32);
      expect(packet.counter).toBeGreaterThan(previous.counter);
    }
  });

  it('keeps two people talking at once apart, each on their own SSRC and stream (burst pace)', async () => {
    const aliceStream = collect(receiver.subscribe(alice.id, afterSilence(100)));
    const bobStream = collect(receiver.subscribe(bob.id, afterSilence(100)));
    const [aliceSpoke, bobSpoke] = await Promise.all([
      world.voice.speak(alice, monoTone(440, 600), { pace: 'burst' }),
      world.voice.speak(bob, monoTone(660, 400), { pace: 'burst' }),
    ]);
    const [aliceHeard, bobHeard] = await Promise.all([aliceStream, bobStream]);

    expect(aliceSpoke.ssrc).not.toBe(bobSpoke.ssrc);
    expect(audioFrames(aliceHeard.frames)).toEqual(aliceSpoke.talk[0]!.opus);
    expect(audioFrames(bobHeard.frames)).toEqual(bobSpoke.talk[0]!.opus);
    expect(stereoMs(decode(audioFrames(aliceHeard.frames)))).toBe(600);
    expect(stereoMs(decode(audioFrames(bobHeard.frames)))).toBe(400);
    expect(Math.round(dominantFrequency(decode(audioFrames(aliceHeard.frames))) / 10) * 10).toBe(440);
    expect(Math.round(dominantFrequency(decode(audioFrames(bobHeard.frames))) / 10) * 10).toBe(660);
  });

  it('sends nothing in pauses: a short pause stays in one stream, a long one ends it, and the clock runs on', async () => {
    const first = collect(receiver.subscribe(alice.id, afterSilence(200)));
    // Subscribing inside `start` (synchronously) still gets the first packet of the next stretch;
    // `start` fires again only after `end`, 100 ms without packets, so only in the long pause.
    const second = first.then(
      () =>
        new Promise<Awaited<typeof first>>((resolve, reject) => {
          const resubscribe = (userId: string): void => {
            if (userId !== alice.id) return;
            receiver.speaking.off('start', resubscribe);
            collect(receiver.subscribe(alice.id, afterSilence(100))).then(resolve, reject);
          };
          receiver.speaking.on('start', resubscribe);
        }),
    );
    const spoken = await world.voice.speak(alice, [monoTone(300, 200), { pauseMs: 60 }, monoTone(500, 200), { pauseMs: 400 }, monoTone(700, 200)], { pace: 'burst' });

    expect(spoken.talk.map((stretch) => stretch.opus.length)).toEqual([10, 10, 10]);
    expect(audioFrames((await first).frames)).toEqual([...spoken.talk[0]!.opus, ...spoken.talk[1]!.opus]);
    expect(audioFrames((await second).frames)).toEqual(spoken.talk[2]!.opus);
    // Across each pause the sequence goes on by one while the timestamp jumps by the time that passed.
    const packets = packetsOf(spoken.ssrc).slice(-3 * (10 + TRAILING_SILENCE_FRAMES));
    const jumps = packets.slice(1).map((packet, index) => ({ sequence: packet.header.sequence - packets[index]!.header.sequence, samples: packet.header.timestamp - packets[index]!.header.timestamp }));
    const pauses = jumps.filter((jump) => jump.samples > 960);
    expect(pauses.map((jump) => jump.sequence)).toEqual([1, 1]);
    expect(pauses[0]!.samples).toBeGreaterThanOrEqual(960 * 3);
    expect(pauses[1]!.samples).toBeGreaterThanOrEqual(960 * 20);
  });

  it('drops an SSRC no op 5 mapped (a rejoin Discord sent none for), until the next stretch announces it', async () => {
    const carolStream = receiver.subscribe(carol.id, afterSilence(100));
    const carolFrames: Buffer[] = [];
    carolStream.on('data', (frame: Buffer) => carolFrames.push(frame));
    const unmapped = await world.voice.speak(carol, monoTone(440, 200), { pace: 'burst', announce: false });
    // UDP on loopback keeps order: once Alice's later stream has ended, Carol's packets were all read.
    const aliceStream = collect(receiver.subscribe(alice.id, afterSilence(50)));
    await world.voice.speak(alice, monoTone(440, 100), { pace: 'burst' });
    await aliceStream;

    expect(packetsOf(unmapped.ssrc)).toHaveLength(10 + TRAILING_SILENCE_FRAMES);
    expect(carolFrames).toEqual([]);
    expect(receiver.ssrcMap.get(carol.id)).toBeUndefined();

    const ended = collect(carolStream);
    const announced = await world.voice.speak(carol, monoTone(440, 200), { pace: 'burst' });
    expect(audioFrames((await ended).frames)).toEqual(announced.talk[0]!.opus);
    expect(receiver.ssrcMap.get(carol.id)?.audioSSRC).toBe(unmapped.ssrc);
  });

  it('sends op 13 when someone leaves, and a new SSRC with op 5 when they come back and talk', async () => {
    const before = world.voice.speakerSsrc(world.guild.id, bob);
    const deleted = once(receiver.ssrcMap, 'delete');
    world.voice.leaveVoice(bob, world.guild.id);
    const [data] = (await deleted) as [{ userId: string; audioSSRC: number }];
    expect(data).toMatchObject({ userId: bob.id, audioSSRC: before });

    world.voice.joinVoice(bob, world.voiceChannelId);
    const stream = collect(receiver.subscribe(bob.id, afterSilence(50)));
    const spoken = await world.voice.speak(bob, monoTone(660, 100), { pace: 'burst' });
    expect(spoken.ssrc).not.toBe(before);
    expect(audioFrames((await stream).frames)).toEqual(spoken.talk[0]!.opus);
    expect(receiver.ssrcMap.get(bob.id)?.audioSSRC).toBe(spoken.ssrc);
  });

  it('after a rejoin mid-stretch, the new session gets no op 5 and drops that stretch; the next one is heard', async () => {
    const stretchMs = 1200;
    const speaking = world.voice.speak(alice, [monoTone(440, stretchMs), { pauseMs: 200 }, monoTone(660, 200)]);
    await new Promise<void>((resolve) => receiver.speaking.once('start', () => resolve()));
    connection.destroy();
    const rejoined = await world.join({ selfDeaf: false });
    const record = world.voice.connections.at(-1)!;
    const rejoinedWire = tapUdp(rejoined, record.secretKey!);
    const stream = collect(rejoined.receiver.subscribe(alice.id, afterSilence(100)));
    const spoken = await speaking;
    const heard = await stream;

    // The rest of the first stretch reached the new socket, on an SSRC the new receiver never mapped.
    const aliceOnWire = rejoinedWire.packets.filter((packet) => packet.header.ssrc === spoken.ssrc);
    expect(aliceOnWire.length).toBeGreaterThan(spoken.talk[1]!.opus.length + TRAILING_SILENCE_FRAMES);
    expect(audioFrames(heard.frames)).toEqual(spoken.talk[1]!.opus);
    expect(rejoined.receiver.ssrcMap.get(alice.id)?.audioSSRC).toBe(spoken.ssrc);
  });
});
