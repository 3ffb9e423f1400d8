/**
 * The worker thread that owns the one espeak-ng instance. espeak synthesises synchronously
 * (about 40 to 300 ms per sentence); on the main thread that would stall Discord's 20 ms voice
 * packets and the gateway. A worker handles one message at a time, which also serialises
 * calls to espeak, whose global state (voice, rate, pitch) is not re-entrant.
 *
 * This file is loaded by path, as JavaScript in a build and as TypeScript (Node's type
 * stripping, or tsx) from source, so it imports nothing of ours but types.
 */
import { parentPort } from 'node:worker_threads';
import initialize, { type EspeakModule, type EspeakWorker } from '@echogarden/espeak-ng-emscripten';
import type { EspeakCatalogue, EspeakReply, EspeakSynthesisRequest } from './espeak-protocol.js';

const VARIANTS_DIRECTORY = '/usr/share/espeak-ng-data/voices/!v';

function post(reply: EspeakReply, transfer: ArrayBuffer[] = []): void {
  parentPort?.postMessage(reply, transfer);
}

function catalogueOf(module: EspeakModule, espeak: EspeakWorker): EspeakCatalogue {
  const voices = espeak.list_voices().map((voice) => ({
    identifier: voice.identifier,
    name: voice.name.trim(),
    languages: voice.languages.map((language) => ({ name: language.name.toLowerCase(), priority: language.priority })),
  }));
  const variants = module.FS.readdir(VARIANTS_DIRECTORY).filter((name) => name !== '.' && name !== '..' && !/\s/.test(name));
  return { voices, variants };
}

function synthesize(espeak: EspeakWorker, request: EspeakSynthesisRequest): void {
  if (espeak.set_voice(request.voice) !== 0) {
    post({ kind: 'error', id: request.id, message: `espeak has no voice ${request.voice}` });
    return;
  }
  // set_voice keeps the previous rate and pitch, so both are set for every request.
  espeak.set_rate(request.rate);
  espeak.set_pitch(request.pitch);
  const chunks: Int16Array[] = [];
  let length = 0;
  espeak.synthesize(request.text, (samples) => {
    chunks.push(samples);
    length += samples.length;
    return 0;
  });
  const joined = new Int16Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.length;
  }
  post({ kind: 'audio', id: request.id, sampleRate: espeak.get_samplerate(), samples: joined }, [joined.buffer]);
}

async function start(): Promise<void> {
  let module: EspeakModule;
  let espeak: EspeakWorker;
  try {
    // Its own output goes nowhere: failures are reported through messages.
    module = await initialize({ print: () => undefined, printErr: () => undefined });
    espeak = new module.eSpeakNGWorker();
    post({ kind: 'ready', catalogue: catalogueOf(module, espeak) });
  } catch (thrown) {
    post({ kind: 'failed-to-start', message: thrown instanceof Error ? thrown.message : String(thrown) });
    return;
  }
  parentPort?.on('message', (request: EspeakSynthesisRequest) => {
    try {
      synthesize(espeak, request);
    } catch (thrown) {
      post({ kind: 'error', id: request.id, message: thrown instanceof Error ? thrown.message : String(thrown) });
    }
  });
}

void start();
