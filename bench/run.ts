/**
 * `npm run bench`: the service's speed and memory targets, measured side by side in one run
 * on this machine. The service runs in its own process (as `npm start` runs it); the load
 * generator and the fake chat engine share this one. Figures go to stdout and to
 * bench/results/latest.json; bench/README.md keeps the ones we quote.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { benchmarkAppends } from './append-throughput.js';
import { benchmarkHostileCards } from './card-hostile.js';
import { benchmarkConversationRead } from './conversation-read.js';
import { benchmarkDiscordPersonas } from './discord-personas.js';
import { benchmarkDiscordStreams } from './discord-streams.js';
import { benchmarkEmbedded } from './embedded.js';
import { benchmarkLorebook } from './lorebook.js';
import { benchmarkMemories } from './memories.js';
import { benchmarkImageJobs } from './images.js';
import { benchmarkDiscordImages } from './discord-images.js';
import { benchmarkManyStreams, benchmarkStreamRelay } from './streaming.js';
import { benchmarkScale } from './scale.js';
import { benchmarkStore } from './store.js';
import { benchmarkSpeechSynthesis, benchmarkVoice } from './voice.js';
import { benchmarkVoiceCalls } from './voice-calls.js';
import { benchmarkVoiceTalk } from './voice-talk.js';
import { measureTurnAudio } from './turn-audio.js';

const only = process.argv.slice(2);
const selected = (name: string) => only.length === 0 || only.includes(name);
const results: Record<string, unknown> = { machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version }, at: new Date().toISOString() };
const scratch = await mkdtemp(path.join(os.tmpdir(), 'likeness-bench-'));
try {
  if (selected('read')) results.conversationRead = await benchmarkConversationRead(path.join(scratch, 'read'));
  if (selected('read-postgres')) results.conversationReadPostgres = await benchmarkConversationRead(path.join(scratch, 'read-postgres'), 'postgres');
  if (selected('store')) results.store = await benchmarkStore();
  if (selected('scale')) results.scale = await benchmarkScale(path.join(scratch, 'scale'));
  if (selected('discord-shards')) results.discordStreamsTwoShards = await benchmarkDiscordStreams(path.join(scratch, 'discord-shards'), { shards: 2 });
  if (selected('relay')) results.streamRelay = await benchmarkStreamRelay(path.join(scratch, 'relay'));
  if (selected('streams')) results.manyStreams = await benchmarkManyStreams(path.join(scratch, 'streams'));
  if (selected('append')) results.appends = await benchmarkAppends(path.join(scratch, 'append'));
  if (selected('discord')) results.discordStreams = await benchmarkDiscordStreams(path.join(scratch, 'discord'));
  if (selected('discord-personas')) results.discordPersonas = await benchmarkDiscordPersonas(path.join(scratch, 'discord-personas'));
  if (selected('speech')) results.speechSynthesis = await benchmarkSpeechSynthesis();
  if (selected('voice')) results.voice = await benchmarkVoice(path.join(scratch, 'voice'));
  if (selected('voice-talk')) results.voiceTalk = await benchmarkVoiceTalk(path.join(scratch, 'voice-talk'));
  // Issue 23's ten calls at once: part of `voice-talk`, or alone as `voice-calls`.
  if (selected('voice-talk') || selected('voice-calls')) results.voiceCalls = await benchmarkVoiceCalls(path.join(scratch, 'voice-calls'));
  if (selected('turn-audio')) results.turnAudio = measureTurnAudio();
  if (selected('images')) results.imageJobs = await benchmarkImageJobs(path.join(scratch, 'images'));
  if (selected('memories')) results.memories = await benchmarkMemories(path.join(scratch, 'memories'));
  if (selected('lorebook')) results.lorebook = await benchmarkLorebook(await mkdir(path.join(scratch, 'lorebook'), { recursive: true }).then(() => path.join(scratch, 'lorebook')));
  if (selected('embedded')) results.embedded = await benchmarkEmbedded(path.join(scratch, 'embedded'));
  if (selected('discord-images')) results.discordImages = await benchmarkDiscordImages(path.join(scratch, 'discord-images'));
  if (selected('cards')) results.hostileCards = await benchmarkHostileCards(path.join(scratch, 'cards'));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
const output = path.join(import.meta.dirname, 'results');
await mkdir(output, { recursive: true });
await writeFile(path.join(output, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log(JSON.stringify(results, null, 2));
