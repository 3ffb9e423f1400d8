/**
 * VoiceTalk's bookkeeping of calls, without a voice connection: joining is stubbed out
 * (`TalkSession.start`), since what is checked here happens before and around it. The voice
 * itself is tested end to end in test/discord/voice-talk.test.ts.
 */
import { Collection, type Guild } from 'discord.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TalkSession, type TalkSessionDependencies } from '../../src/bot/voice/talk-session.js';
import { VoiceTalk, type VoiceTalkDependencies } from '../../src/bot/voice/voice-talk.js';
import type { VoiceRules } from '../../src/bot/voice/voice-rules.js';
import { adminActor } from '../../src/core/actor.js';
import type { Core } from '../../src/core/core.js';
import type { CharacterRecord } from '../../src/core/records.js';
import { createLogger } from '../../src/logger.js';

const character = { id: 'character-1', name: 'Ada' } as CharacterRecord;
const logger = createLogger('silent');

/** A guild whose voice channels hold `members` (id → is a bot), and where the bot is in `botChannelId`. */
function fakeGuild(channels: Record<string, Record<string, boolean>>, botChannelId: string | null): Guild & { botChannelId: string | null } {
  const guild = {
    id: 'guild-1',
    botChannelId,
    client: { user: { id: 'bot-self' } },
    members: {
      get me() {
        return { voice: { channelId: guild.botChannelId } };
      },
    },
    channels: {
      cache: new Map(
        Object.entries(channels).map(([id, members]) => [
          id,
          { isVoiceBased: () => true, members: new Collection(Object.entries(members).map(([memberId, bot]) => [memberId, { id: memberId, user: { bot } }])) },
        ]),
      ),
    },
  };
  return guild as unknown as Guild & { botChannelId: string | null };
}

/** Rules whose thresholds are read only when the test says so: both starts wait on them at once. */
function slowRules() {
  let release: () => void = () => undefined;
  const read = new Promise<void>((resolve) => (release = resolve));
  const rules = { thresholds: async () => (await read, {}), ignores: async () => false } as unknown as VoiceRules;
  return { rules, release: () => release() };
}

const options = { turns: {}, aggressiveness: 2 as const, joinTimeoutMs: 1_000, idleMs: 60_000, transcriptionTimeoutMs: 1_000 };

afterEach(() => vi.restoreAllMocks());

describe('VoiceTalk', () => {
  it('holds one call when /voice talk is started twice at once in a guild; the other start fails and nothing of it lives on', async () => {
    const start = vi.spyOn(TalkSession.prototype, 'start').mockResolvedValue(undefined);
    const { rules, release } = slowRules();
    const talk = new VoiceTalk({ core: {} as VoiceTalkDependencies['core'], logger, accountOf: vi.fn(), rules }, options);
    const guild = fakeGuild({ voice: { alice: false } }, 'voice');
    const first = talk.start(guild, 'voice', character, 'conversation-1');
    const second = talk.start(guild, 'voice', character, 'conversation-1');
    release();
    const [a, b] = await Promise.allSettled([first, second]);
    const held = [a, b].flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    expect(held).toHaveLength(1);
    expect(talk.session(guild.id)).toBe(held[0]);
    // The start that gave way never made a session that would listen alongside.
    expect(start).toHaveBeenCalledTimes(1);
    expect([a, b].find((result) => result.status === 'rejected')).toMatchObject({ reason: { code: 'CONFLICT' } });
    talk.leaveAll();
  });

  it('follows the bot when it is moved to another channel: who is in the call, and when it is alone', async () => {
    vi.spyOn(TalkSession.prototype, 'start').mockResolvedValue(undefined);
    const { rules, release } = slowRules();
    release();
    const ended: string[] = [];
    const talk = new VoiceTalk({ core: {} as VoiceTalkDependencies['core'], logger, accountOf: vi.fn(), rules }, options);
    const guild = fakeGuild({ lobby: { alice: false, jukebox: true }, stage: { bob: false } }, 'lobby');
    const session = await talk.start(guild, 'lobby', character, 'conversation-1');
    vi.spyOn(session, 'end').mockImplementation((reason) => void ended.push(reason));
    // Other bots are not people in the call.
    expect(session.people()).toEqual(['alice']);
    guild.botChannelId = 'stage';
    expect(session.voiceChannelId).toBe('stage');
    expect(session.people()).toEqual(['bob']);
    // Alice leaving the old channel neither ends the call nor is heard as leaving it.
    const left = vi.spyOn(session, 'left');
    talk.voiceStateChanged(guild, 'alice', 'lobby', null);
    expect(left).not.toHaveBeenCalled();
    expect(ended).toEqual([]);
    // Bob leaving the channel the bot is in now does both.
    (guild.channels.cache.get('stage') as unknown as { members: Collection<string, unknown> }).members.delete('bob');
    talk.voiceStateChanged(guild, 'bob', 'stage', null);
    expect(left).toHaveBeenCalledWith('bob');
    expect(ended).toEqual(['Everyone left the voice channel.']);
  });
});

describe('TalkSession', () => {
  it('stops an answer still being asked for when the call ends: the request is aborted and nothing is spoken', async () => {
    let asked: (signal: AbortSignal) => void = () => undefined;
    const respondCalled = new Promise<AbortSignal>((resolve) => (asked = resolve));
    let answer: (reply: unknown) => void = () => undefined;
    const pulled = vi.fn();
    const streamAs = vi.fn();
    // The session gives up the reply it no longer wants by handling its `done`.
    let givenUp: () => void = () => undefined;
    const replyGivenUp = new Promise<void>((resolve) => (givenUp = resolve));
    const done = Promise.resolve();
    done.catch = ((onRejected: () => void) => (givenUp(), Promise.prototype.catch.call(done, onRejected))) as typeof done.catch;
    const core = {
      conversations: { get: async () => ({ characterIds: [character.id] }), messages: async () => [{ id: 'message-1' }] },
      characters: { get: async () => ({ ...character, ttsVoiceId: 'voice-1' }) },
      speech: { streamAs, voicedCast: async () => [] },
      chat: {
        respond: (_actor: unknown, _conversationId: string, _messageId: string, mode: { signal: AbortSignal }) => {
          asked(mode.signal);
          return new Promise((resolve) => (answer = resolve));
        },
      },
    } as unknown as Core;
    const dependencies: TalkSessionDependencies = { core, logger, detectors: {} as TalkSessionDependencies['detectors'], accountOf: vi.fn(), ignores: async () => false, ended: vi.fn() };
    const session = new TalkSession(fakeGuild({ voice: { alice: false } }, 'voice'), 'voice', character, 'conversation-1', dependencies, options);
    // /scene next: the character answers what was said last, aloud.
    session.cue(adminActor, character.id);
    const signal = await respondCalled;
    session.end('Left with /voice leave.');
    expect(signal.aborted).toBe(true);
    answer({
      pieces: (async function* () {
        pulled();
        yield 'Hello there.';
      })(),
      done,
    });
    await replyGivenUp;
    expect(pulled).not.toHaveBeenCalled();
    expect(streamAs).not.toHaveBeenCalled();
  });
});
