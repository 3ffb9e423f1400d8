/**
 * `Speech.streamAs` hands its caller's signal to the engine: a reply talked over in a call
 * cancels the HTTP request for its speech, not only its playback.
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Characters } from '../../src/core/characters.js';
import type { AudioEncoder, FileStore } from '../../src/core/ports.js';
import type { CharacterRecord } from '../../src/core/records.js';
import type { RepositoryStore } from '../../src/core/repositories.js';
import { Speech } from '../../src/core/speech.js';
import { createElevenLabsSpeechEngine } from '../../src/engines/speech/elevenlabs.js';
import { createOpenAISpeechEngine } from '../../src/engines/speech/openai-speech.js';
import { startFakeElevenLabs } from '../fakes/speech/fake-elevenlabs.js';
import type { FakeServer } from '../fakes/speech/fake-http.js';
import { startFakeOpenAISpeech } from '../fakes/speech/fake-openai-speech.js';

const subjects = {
  'openai-compatible': async () => {
    const fake = await startFakeOpenAISpeech();
    const engine = createOpenAISpeechEngine({ baseURL: fake.apiURL });
    // Its voices are looked up once, before the server stops answering.
    await engine.listVoices();
    return { fake, engine, voiceId: 'alloy' };
  },
  elevenlabs: async () => {
    const fake = await startFakeElevenLabs();
    const engine = createElevenLabsSpeechEngine({ baseURL: fake.baseURL, apiKey: 'test-key' });
    const [voice] = await engine.listVoices();
    return { fake, engine, voiceId: voice!.id };
  },
};

describe.each(Object.keys(subjects) as Array<keyof typeof subjects>)('Speech.streamAs on %s', (name) => {
  let subject: Awaited<ReturnType<(typeof subjects)[typeof name]>>;
  beforeAll(async () => {
    subject = await subjects[name]();
  });
  afterAll(async () => {
    await subject.engine.close();
    await subject.fake.close();
  });

  it('aborts the request at the engine when its signal aborts, while the engine has not answered', async () => {
    const fake: FakeServer = subject.fake;
    fake.script = { failure: { kind: 'hang' } };
    // Only streamAs is used: the store, files, characters and encoder are never reached.
    const speech = new Speech({} as RepositoryStore, {} as FileStore, {} as Characters, subject.engine, {} as AudioEncoder);
    const character = { id: 'c1', name: 'Wren', ttsVoiceId: subject.voiceId } as CharacterRecord;
    const abort = new AbortController();
    const arrived = new Promise<ServerResponse>((resolve) => {
      const onRequest = (request: IncomingMessage, response: ServerResponse) => {
        if (!request.url?.includes('speech')) return;
        fake.server.off('request', onRequest);
        resolve(response);
      };
      fake.server.on('request', onRequest);
    });

    const reading = (async () => {
      for await (const piece of speech.streamAs(character, 'The harbour is quiet tonight.', { signal: abort.signal })) void piece;
    })();
    reading.catch(() => undefined);
    const response = await arrived;
    const closed = once(response, 'close');
    abort.abort();

    await closed;
    await expect(reading).rejects.toThrow();
  });
});
