import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { deployCommands } from '../src/bot/deploy-commands.js';
import { type FakeDiscord, startFakeDiscord } from '../test/fakes/discord/fake-discord.js';
import { type FakeVoice, startFakeVoice } from '../test/fakes/discord-voice/fake-voice.js';

/** The fake Discord and its voice server that the voice benchmarks run the service against. */
export interface VoiceWorld {
  discord: FakeDiscord;
  voice: FakeVoice;
  /** The voice server's certificate, for the service's NODE_EXTRA_CA_CERTS: made for this run. */
  certificate: string;
  /** What the service needs to run its bot in this world: the fake Discord, and trust in the voice server. */
  serviceEnvironment: Record<string, string>;
  close(): Promise<void>;
}

/** `guilds` guilds with the slash commands deployed, and a voice server the service will trust. */
export async function startVoiceWorld(guilds: number): Promise<VoiceWorld> {
  const discord = await startFakeDiscord({ guilds, recordRequests: false });
  const voice = await startFakeVoice(discord, { trust: false });
  const certificateDirectory = await mkdtemp(path.join(os.tmpdir(), 'likeness-voice-ca-'));
  const certificate = path.join(certificateDirectory, 'fake-voice.pem');
  await writeFile(certificate, voice.certificatePem);
  await deployCommands({ token: discord.token, apiBase: discord.apiBase });
  return {
    discord,
    voice,
    certificate,
    serviceEnvironment: { DISCORD_TOKEN: discord.token, DISCORD_API_BASE: discord.apiBase, DISCORD_COMMANDS_PER_MINUTE: '1000', NODE_EXTRA_CA_CERTS: certificate },
    async close() {
      await voice.close();
      await discord.close();
      await rm(certificateDirectory, { recursive: true, force: true });
    },
  };
}
