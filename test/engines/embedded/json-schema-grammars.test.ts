import type { GbnfJsonSchema, Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../../src/core/errors.js';
import { type JsonSchema, JsonSchemaGrammars } from '../../../src/engines/chat/embedded/json-schema-grammars.js';
import { disposeLlama, openLlama } from '../../../src/engines/chat/embedded/llama-runtime.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
let llama: Llama;
const facts = { type: 'object', properties: { facts: { type: 'array', items: { type: 'string' } } }, required: ['facts'] };

/** Grammars on the real library, counting what it is asked to build. */
function counted(capacity?: number): { grammars: JsonSchemaGrammars; built: JsonSchema[] } {
  const built: JsonSchema[] = [];
  const grammars = new JsonSchemaGrammars(async (schema) => {
    built.push(schema);
    return llama.createGrammarForJsonSchema<GbnfJsonSchema>(schema as GbnfJsonSchema);
  }, capacity);
  return { grammars, built };
}

beforeAll(async () => {
  // No model: the grammar engine needs only the binding. One thread, as every test here.
  llama = await openLlama({ gpu: 'off', threads: 1, logger: silent });
});
afterAll(() => disposeLlama(llama));

describe('embedded engine: grammars of response formats', () => {
  it('builds a schema’s grammar once, for the same schema given again or as an equal copy, even asked at once', async () => {
    const { grammars, built } = counted();
    const [first, second] = await Promise.all([grammars.forFormat({ name: 'facts', schema: facts }), grammars.forFormat({ name: 'facts', schema: facts })]);
    const copy = await grammars.forFormat({ name: 'memories', schema: structuredClone(facts) });
    expect(built).toHaveLength(1);
    expect(second).toBe(first);
    expect(copy).toBe(first);
    expect(first.grammar).toContain('"\\"facts\\""');

    await grammars.forFormat({ name: 'mood', schema: { type: 'string' } });
    expect(built).toHaveLength(2);
  });

  it('keeps a bounded number of grammars, dropping the one used longest ago', async () => {
    const { grammars, built } = counted(2);
    const schemas = [{ type: 'string' }, { type: 'integer' }, { type: 'boolean' }];
    const ask = (index: number) => grammars.forFormat({ name: 'value', schema: schemas[index]! });
    await ask(0);
    await ask(1);
    await ask(0); // now the freshest
    await ask(2); // drops 1
    await ask(0);
    expect(built).toHaveLength(3);
    await ask(1);
    expect(built).toHaveLength(4);
  });

  it('refuses, as an EngineError in our words, a schema the library throws on, and tries it again next time', async () => {
    let nested: JsonSchema = { type: 'string' };
    for (let depth = 0; depth < 600; depth += 1) nested = { type: 'array', items: nested };
    const throwing: JsonSchema[] = [nested, { const: { an: 'object' } }, { type: 'object', properties: { missing: null } }];
    const { grammars, built } = counted();
    for (const schema of throwing) {
      const error = await grammars.forFormat({ name: 'broken', schema }).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(EngineError);
      expect(error).toMatchObject({ code: 'ENGINE_FAILED', provider: 'embedded', purpose: 'chat', retryable: false });
      expect((error as EngineError).message).toMatch(/cannot answer in the form this feature asks/);
      expect((error as EngineError).upstream).toMatch(/response format "broken" cannot be made into a grammar/);
    }
    const builds = built.length;
    await grammars.forFormat({ name: 'broken', schema: nested }).catch(() => undefined);
    expect(built.length).toBe(builds + 1);
  });

  it('refuses allOf, not and if, which the library would silently turn into null', async () => {
    const { grammars, built } = counted();
    for (const schema of [{ allOf: [{ type: 'string' }] }, { type: 'object', properties: { a: { not: { type: 'null' } } } }, { type: 'array', items: { if: { type: 'string' } } }]) {
      const error = await grammars.forFormat({ name: 'combined', schema }).catch((thrown: unknown) => thrown);
      expect(error).toMatchObject({ code: 'ENGINE_FAILED', retryable: false });
      expect((error as EngineError).upstream).toMatch(/uses "(allOf|not|if)"/);
    }
    expect(built).toHaveLength(0);
  });

  it('reads anyOf (zod’s nullable) as oneOf, where the library alone would allow only null', async () => {
    const { grammars, built } = counted();
    const nullable = { type: 'object', properties: { place: { anyOf: [{ type: 'string' }, { type: 'null' }] } }, required: ['place'] };
    const grammar = await grammars.forFormat({ name: 'place', schema: nullable });
    expect(built[0]).toEqual({ type: 'object', properties: { place: { oneOf: [{ type: 'string' }, { type: 'null' }] } }, required: ['place'] });
    expect(grammar.grammar).toMatch(/string-rule/);
    // The caller's schema is left as it was.
    expect(nullable.properties.place).toHaveProperty('anyOf');
    expect((await llama.createGrammarForJsonSchema<GbnfJsonSchema>(nullable as GbnfJsonSchema)).grammar).not.toMatch(/string-rule/);
  });
});
