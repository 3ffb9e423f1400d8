/**
 * The grammars that hold the embedded engine's answers to a response format's JSON schema,
 * built by node-llama-cpp (`llama.createGrammarForJsonSchema`) and kept per schema: each is
 * compiled into llama.cpp's grammar engine, and memory extraction asks with the same few
 * schemas again and again.
 *
 * node-llama-cpp 3.21.1 reads a subset of JSON Schema and turns what it does not know into
 * `null` without a word. `anyOf` (what zod writes for a nullable field) is read here as
 * `oneOf`, its union being the same grammar; `allOf`, `not` and `if` cannot be, and are
 * refused, as is any schema the library itself throws on (nesting past 512, an object `const`,
 * a `null` where a schema belongs). Refusals are `EngineError`s in our words.
 */
import type { LlamaGrammar } from 'node-llama-cpp';
import { EngineError } from '../../../core/errors.js';
import type { ChatResponseFormat } from '../../../core/ports.js';
import { EMBEDDED_PROVIDER } from './llama-runtime.js';

export type JsonSchema = Record<string, unknown>;

/** Builds one grammar: the loaded model's `llama.createGrammarForJsonSchema`, or a test's stand-in. */
export type GrammarBuilder = (schema: JsonSchema) => Promise<LlamaGrammar>;

/** Schemas whose grammars are kept; a caller that makes schemas on the fly must not fill memory. */
const defaultCapacity = 32;

export class JsonSchemaGrammars {
  /** By the schema's JSON text, oldest use first. */
  readonly #grammars = new Map<string, Promise<LlamaGrammar>>();

  constructor(
    private readonly build: GrammarBuilder,
    private readonly capacity = defaultCapacity,
  ) {}

  /** The grammar of `format`'s schema, built on its first use; rejects with an `EngineError` when none can be. */
  forFormat(format: ChatResponseFormat): Promise<LlamaGrammar> {
    const key = JSON.stringify(format.schema);
    const kept = this.#grammars.get(key);
    if (kept !== undefined) {
      this.#grammars.delete(key);
      this.#grammars.set(key, kept);
      return kept;
    }
    const building = this.#build(format).catch((error: unknown) => {
      // A failure is not kept: building again costs a millisecond, and the cause may pass.
      if (this.#grammars.get(key) === building) this.#grammars.delete(key);
      throw error;
    });
    this.#grammars.set(key, building);
    if (this.#grammars.size > this.capacity) this.#grammars.delete(this.#grammars.keys().next().value as string);
    return building;
  }

  async #build(format: ChatResponseFormat): Promise<LlamaGrammar> {
    const schema = grammarSchema(format.schema, format.name, '#');
    try {
      return await this.build(schema);
    } catch (error) {
      throw refusal(format.name, error instanceof Error ? error.message : String(error), error);
    }
  }
}

/** Keywords no grammar of node-llama-cpp's can hold; it would answer `null` for them. */
const unsupported = ['allOf', 'not', 'if'] as const;

/** A copy of `schema` in the subset node-llama-cpp reads; throws for what it cannot hold. */
function grammarSchema(schema: unknown, name: string, at: string): JsonSchema {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw refusal(name, `${at} is not a schema object`);
  }
  const copy: JsonSchema = { ...(schema as JsonSchema) };
  const keyword = unsupported.find((each) => copy[each] !== undefined);
  if (keyword !== undefined) throw refusal(name, `${at} uses "${keyword}", which the embedded engine's grammars cannot hold`);
  if (copy['anyOf'] !== undefined && copy['oneOf'] === undefined) {
    copy['oneOf'] = copy['anyOf'];
    delete copy['anyOf'];
  }
  const mapEach = (value: unknown, where: string): unknown =>
    Array.isArray(value) ? value.map((item, index) => grammarSchema(item, name, `${where}/${index}`)) : value;
  const mapValues = (value: unknown, where: string): unknown =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, grammarSchema(item, name, `${where}/${key}`)]))
      : value;
  if (copy['oneOf'] !== undefined) copy['oneOf'] = mapEach(copy['oneOf'], `${at}/oneOf`);
  if (copy['prefixItems'] !== undefined) copy['prefixItems'] = mapEach(copy['prefixItems'], `${at}/prefixItems`);
  if (copy['properties'] !== undefined) copy['properties'] = mapValues(copy['properties'], `${at}/properties`);
  if (copy['$defs'] !== undefined) copy['$defs'] = mapValues(copy['$defs'], `${at}/$defs`);
  if (copy['items'] !== undefined) copy['items'] = grammarSchema(copy['items'], name, `${at}/items`);
  const additional = copy['additionalProperties'];
  if (additional !== undefined && typeof additional !== 'boolean') copy['additionalProperties'] = grammarSchema(additional, name, `${at}/additionalProperties`);
  return copy;
}

function refusal(name: string, detail: string, cause?: unknown): EngineError {
  return new EngineError(`the response format "${name}" cannot be made into a grammar: ${detail}`, {
    provider: EMBEDDED_PROVIDER,
    purpose: 'chat',
    code: 'ENGINE_FAILED',
    retryable: false,
    publicMessage: 'The chat engine cannot answer in the form this feature asks of it. Nothing you sent is at fault; the operator has to fix it.',
    ...(cause === undefined ? {} : { cause }),
  });
}

