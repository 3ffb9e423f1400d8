import { isDeepStrictEqual } from 'node:util';
import { chatModelContract } from './chat-model-contract.js';
import type { FakeFailure } from '../fakes/fake-openai.js';
import { useFakeChat } from './chat-helpers.js';

const context = useFakeChat();
const facts = { type: 'object', properties: { facts: { type: 'array', items: { type: 'string' } } }, required: ['facts'], additionalProperties: false };

chatModelContract('OpenAI-compatible (llama-server wire)', {
  async answering() {
    context.fake.setScript({ flavor: 'llama-server', tokens: ['Fair ', 'winds ', 'to ', 'you.'] });
    return { model: context.model(), reply: 'Fair winds to you.' };
  },
  async endless() {
    // The server stops at max_tokens; the fake says so as llama-server does.
    context.fake.setScript({ flavor: 'llama-server', tokens: ['on ', 'and ', 'on ', 'and ', 'on ', 'and '], finishReason: 'length', tokensPerSecond: 200 });
    return context.model();
  },
  async tooLong() {
    context.fake.setScript({ flavor: 'llama-server', slotContext: 16 });
    return { model: context.model(), request: { messages: [{ role: 'user', content: 'words '.repeat(200) }] } };
  },
  async textOnly() {
    context.fake.setScript({ flavor: 'llama-server', textOnly: true });
    return context.model();
  },
  async structured() {
    // The fake answers the JSON only when the request carries the format as the servers read it.
    const responseFormat = { type: 'json_schema', json_schema: { name: 'facts', schema: facts, strict: true } };
    context.fake.setScript((body) =>
      isDeepStrictEqual(body['response_format'], responseFormat)
        ? { flavor: 'llama-server', tokens: ['{"facts": ', '["The sea ', 'is calm."', ']}'] }
        : { flavor: 'llama-server', reply: 'The sea is calm, I remember.' },
    );
    return { model: context.model(), schema: facts, expected: { facts: ['The sea is calm.'] } };
  },
  midStreamFailures: [
    { name: 'the connection is cut', script: { kind: 'drop', afterTokens: 3 } },
    { name: 'the server sends an error event inside the stream', script: { kind: 'error-event', message: 'out of memory', afterTokens: 3 } },
    { name: "llama-server sends a bare error: line inside the stream", script: { kind: 'legacy-error-line', message: 'context shift is disabled', code: 500, afterTokens: 3 } },
  ].map(({ name, script }) => ({
    name,
    async start() {
      // Paced, so the pieces before the failure are read before it (a reset can discard what is unread).
      context.fake.setScript({ flavor: 'llama-server', tokens: ['one ', 'two ', 'three ', 'four ', 'five '], tokensPerSecond: 50, failure: script as FakeFailure });
      return { model: context.model(), afterTwoPieces: () => {} };
    },
  })),
});
