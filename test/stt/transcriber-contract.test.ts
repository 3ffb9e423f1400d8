/** Every `Transcriber` adapter, and each server flavour it speaks to, through the one contract. */
import { createOpenAITranscriber, type OpenAITranscriptionOptions } from '../../src/engines/stt/openai-transcription.js';
import { type FakeTranscriptionOptions, startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { type TranscriberSubject, describeTranscriberContract } from './transcriber-contract.js';

async function openAICompatible(fakeOptions: FakeTranscriptionOptions, options: Partial<OpenAITranscriptionOptions>, root = false): Promise<TranscriberSubject> {
  const fake = await startFakeTranscription(fakeOptions);
  // A small limit, so the oversized case does not build 25 MB.
  const transcriber = createOpenAITranscriber({ baseURL: root ? fake.loopback.url : fake.apiURL, maxAudioBytes: 512 * 1024, ...options });
  return {
    transcriber,
    hears: (text) => (fake.script = { text }),
    failsWith: (status, words) => (fake.script = { failWith: { status, message: words } }),
    requestCount: () => fake.loopback.requests.length,
    close: async () => (await transcriber.close(), await fake.close()),
  };
}

describeTranscriberContract('OpenAI (json)', () => openAICompatible({ apiKey: 'sk-contract-0123456789' }, { apiKey: 'sk-contract-0123456789' }));
describeTranscriberContract('OpenAI (verbose_json)', () => openAICompatible({ flavor: 'openai' }, { responseFormat: 'verbose_json' }));
describeTranscriberContract('speaches (verbose_json)', () => openAICompatible({ flavor: 'speaches' }, { responseFormat: 'verbose_json', model: 'Systran/faster-whisper-small' }));
describeTranscriberContract('whisper.cpp (/inference)', () => openAICompatible({}, { path: '/inference' }, true));
