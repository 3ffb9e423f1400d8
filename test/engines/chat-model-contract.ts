/**
 * What every `ChatModel` adapter must do, as one suite each adapter's test file calls (the
 * OpenAI-compatible one against the fake server, the embedded one against a tiny model):
 * streaming pieces, one finish part, finish reasons `stop` and `length`, abort, a reader
 * leaving early, token usage, JSON answers to a response format, and the refusals the core
 * acts on (context, images).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EngineError } from '../../src/core/errors.js';
import type { ChatModel, ChatRequest, ChatStreamPart } from '../../src/core/ports.js';
import { collect } from './chat-helpers.js';

export interface ChatContractSubject {
  /** A model that answers `reply` to any prompt and stops by itself. */
  answering(): Promise<{ model: ChatModel; reply: string }>;
  /** A model that goes on until `maxTokens`, at most `tokensPerSecond` if it can be slowed. */
  endless(): Promise<ChatModel>;
  /** A model and a request longer than its context. */
  tooLong(): Promise<{ model: ChatModel; request: ChatRequest }>;
  /** A model that takes no image parts. */
  textOnly(): Promise<ChatModel>;
  /**
   * A model that, asked for `schema` (as the response format `facts`), answers the JSON of
   * `expected`, and unasked answers something that is not that JSON: the format must be what
   * made it (the fake is scripted so; a real model is held to the schema by the engine).
   */
  structured(): Promise<{ model: ChatModel; schema: Record<string, unknown>; expected: unknown }>;
  /**
   * Ways the engine fails in the middle of a stream (a cut connection, an error the server sends
   * inside the stream, the engine going away): each a model whose stream breaks once
   * `afterTwoPieces` is called after its second text part (or by itself, when scripted so).
   */
  midStreamFailures: ReadonlyArray<{ name: string; start(): Promise<{ model: ChatModel; afterTwoPieces(): void }> }>;
}

const says = (text: string): ChatRequest => ({ messages: [{ role: 'system', content: 'You are Ana, a sailor.' }, { role: 'user', content: text }] });

export function chatModelContract(name: string, subject: ChatContractSubject): void {
  describe(`ChatModel contract: ${name}`, () => {
    it('streams the reply in non-empty text parts and ends with one finish part: stop, with usage', async () => {
      const { model, reply } = await subject.answering();
      const { parts, text } = await collect(model.stream(says('Hello there')));
      expect(text).toBe(reply);
      const texts = parts.filter((part) => part.type === 'text');
      expect(texts.length).toBeGreaterThan(0);
      expect(texts.every((part) => part.text !== '')).toBe(true);
      const finishes = parts.filter((part) => part.type === 'finish');
      expect(finishes).toHaveLength(1);
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
      const usage = finishes[0]?.type === 'finish' ? finishes[0].usage : undefined;
      expect(usage?.promptTokens).toBeGreaterThan(0);
      expect(usage?.completionTokens).toBeGreaterThan(0);
    });

    it('answers whole with generate, the same text and finish reason', async () => {
      const { model, reply } = await subject.answering();
      const result = await model.generate(says('Hello again'));
      expect(result.text).toBe(reply);
      expect(result.finishReason).toBe('stop');
    });

    it('ends with finish reason length at maxTokens', async () => {
      const model = await subject.endless();
      const { parts } = await collect(model.stream({ ...says('Talk forever'), maxTokens: 6 }));
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' });
      const finish = parts.at(-1);
      if (finish?.type === 'finish' && finish.usage?.completionTokens !== undefined) expect(finish.usage.completionTokens).toBeLessThanOrEqual(6);
      expect((await model.generate({ ...says('Talk forever'), maxTokens: 6 })).finishReason).toBe('length');
    });

    it('throws the abort reason when aborted mid-stream, and answers the next request', async () => {
      const model = await subject.endless();
      const controller = new AbortController();
      const reason = new Error('the caller went away');
      const seen: string[] = [];
      await expect(
        (async () => {
          for await (const part of model.stream({ ...says('Talk'), maxTokens: 10_000 }, { signal: controller.signal })) {
            if (part.type === 'text') seen.push(part.text);
            if (seen.length === 2) controller.abort(reason);
          }
        })(),
      ).rejects.toBe(reason);
      const { model: next, reply } = await subject.answering();
      expect((await next.generate(says('Still there?'))).text).toBe(reply);
    });

    it('refuses at once a request whose signal is already aborted', async () => {
      const { model } = await subject.answering();
      const reason = new Error('gone before it began');
      await expect(collect(model.stream(says('hi'), { signal: AbortSignal.abort(reason) }))).rejects.toBe(reason);
    });

    it('stops reading when the reader leaves the stream early, and answers the next request', async () => {
      const model = await subject.endless();
      for await (const part of model.stream({ ...says('Talk'), maxTokens: 10_000 })) {
        if (part.type === 'text') break;
      }
      const { model: next, reply } = await subject.answering();
      expect((await collect(next.stream(says('Again')))).text).toBe(reply);
    });

    it('answers several requests at once', async () => {
      const { model, reply } = await subject.answering();
      const answers = await Promise.all(['one', 'two', 'three', 'four'].map((word) => collect(model.stream(says(`Conversation ${word}`)))));
      expect(answers.map((answer) => answer.text)).toEqual([reply, reply, reply, reply]);
    });

    it('refuses a prompt longer than its context as context-exceeded', async () => {
      const { model, request } = await subject.tooLong();
      const error = await collect(model.stream(request)).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(EngineError);
      expect(error).toMatchObject({ code: 'ENGINE_CONTEXT_EXCEEDED', reason: 'context-exceeded' });
    });

    for (const failure of subject.midStreamFailures) {
      it(`throws an EngineError after the text already given, with no finish part, when ${failure.name}`, async () => {
        const { model, afterTwoPieces } = await failure.start();
        const parts: ChatStreamPart[] = [];
        const error = await (async () => {
          for await (const part of model.stream({ ...says('Talk'), maxTokens: 10_000 })) {
            parts.push(part);
            if (parts.filter((each) => each.type === 'text').length === 2) afterTwoPieces();
          }
        })().catch((thrown: unknown) => thrown);
        expect(error).toBeInstanceOf(EngineError);
        expect(parts.filter((part) => part.type === 'text').length).toBeGreaterThanOrEqual(1);
        expect(parts.some((part) => part.type === 'finish')).toBe(false);
      });
    }

    it('answers JSON following a response format', async () => {
      const { model, schema, expected } = await subject.structured();
      const follows = z.fromJSONSchema(schema);
      const asked = says('What do you remember about the sea?');
      const request: ChatRequest = { ...asked, maxTokens: 200, responseFormat: { name: 'facts', schema } };
      const whole = await model.generate(request);
      const streamed = await collect(model.stream(request));
      expect(whole.finishReason).toBe('stop');
      for (const text of [whole.text, streamed.text]) expect(follows.parse(JSON.parse(text))).toEqual(expected);

      const unasked = (await model.generate({ ...asked, maxTokens: 200 })).text;
      expect(() => follows.parse(JSON.parse(unasked))).toThrow();
    });

    it('refuses image parts as images-unsupported when the model cannot see', async () => {
      const model = await subject.textOnly();
      const request: ChatRequest = {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', mimeType: 'image/png', data: new Uint8Array([137, 80, 78, 71]) }] }],
      };
      const error = await model.generate(request).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(EngineError);
      expect(error).toMatchObject({ reason: 'images-unsupported' });
      // What the engine said stays in the log: the message a person reads is ours.
      expect((error as EngineError).message).not.toMatch(/What is this/);
    });
  });
}
