/**
 * The bot's side of DAVE as a test reads it: the DAVE session @discordjs/voice keeps for a
 * connection, and a wait until the bot and everyone in its channel share the group's latest epoch.
 */
import { VoiceConnectionStatus, type DAVESession, type VoiceConnection } from '@discordjs/voice';
import type { DaveTransition, FakeVoice } from '../fakes/discord-voice/fake-voice.js';
import { patient } from '../support/patience.js';

/** The library's DAVE session of a Ready connection, when the voice server negotiated one. */
export function daveOf(connection: VoiceConnection): DAVESession | undefined {
  if (connection.state.status !== VoiceConnectionStatus.Ready) return undefined;
  const networking = connection.state.networking.state;
  return 'dave' in networking ? networking.dave : undefined;
}

/**
 * Whether the bot's DAVE session has the keys of the epoch whose privacy code (drawn from the
 * epoch authenticator, so the same for every member of the same epoch) is `privacyCode`, and has
 * executed transition `transitionId`.
 */
function botAt(connection: VoiceConnection, privacyCode: string, transitionId: number): boolean {
  const dave = daveOf(connection);
  return dave?.session?.ready === true && dave.session.voicePrivacyCode === privacyCode && dave.lastTransitionId === transitionId;
}

/**
 * Waits until the group of the bot's channel is settled: the fake executed its latest transition
 * (one announced after `since`, a `performance.now()` time, when given),
 * every test user in the channel has keys for that epoch, and so has the bot, which executed the
 * transition too (the library's `transitioned` event, re-checked on each). Resolves with it.
 */
export async function daveSettled(
  voice: FakeVoice,
  connection: VoiceConnection,
  place: { guildId: string; channelId: string; since?: number },
  timeoutMs = 5000,
): Promise<DaveTransition & { privacyCode: string }> {
  const { guildId, channelId, since = -Infinity } = place;
  const settled = await voice.waitFor(() => {
    const group = voice.daveGroup(guildId, channelId);
    const latest = group?.transitions.at(-1);
    if (group === undefined || latest === undefined || latest.announcedAt < since || latest.executedAt === null || latest.epoch !== group.epoch) return undefined;
    // Test users' clients (the bot has none in the fake) must all have keys for the epoch.
    const clients = voice.occupants(guildId, channelId).flatMap((userId) => voice.daveMember(guildId, userId)?.session ?? []);
    const privacyCode = clients[0]?.voicePrivacyCode;
    const allThere = clients.every((session) => session.ready && session.epoch === BigInt(group.epoch) && session.voicePrivacyCode === privacyCode);
    return allThere && privacyCode !== undefined ? { ...latest, privacyCode } : undefined;
  }, timeoutMs);
  if (botAt(connection, settled.privacyCode, settled.id)) return settled;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      connection.off('transitioned', check);
      reject(new Error(`daveSettled: the bot did not reach epoch ${settled.epoch} (transition ${settled.id}) within ${patient(timeoutMs)} ms`));
    }, patient(timeoutMs));
    function check(): void {
      if (!botAt(connection, settled.privacyCode, settled.id)) return;
      clearTimeout(timer);
      connection.off('transitioned', check);
      resolve();
    }
    connection.on('transitioned', check);
    check();
  });
  return settled;
}
