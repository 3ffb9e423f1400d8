import { z } from 'zod';
import { uuid } from '../validation.js';
import { type Answer, type Operation, operations, tags } from './operations.js';
import { documented } from './resources.js';

export type JsonSchema = { [keyword: string]: unknown };

/** The parts of an OpenAPI 3.1 document this service writes, for the reference page to read. */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, OpenApiResponse>;
    securitySchemes: Record<string, { type: string; scheme: string; description: string }>;
  };
}

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  security?: Record<string, string[]>[];
  parameters: { name: string; in: 'path' | 'query'; required: boolean; description?: string; schema: JsonSchema }[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, OpenApiResponse | { $ref: string }>;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, { description: string; schema: JsonSchema }>;
  content?: Record<string, { schema?: JsonSchema }>;
}

const schemaUri = (id: string) => `#/components/schemas/${id}`;
const errorResponse = { $ref: '#/components/responses/Error' };

/**
 * The OpenAPI 3.1 document of the app, built from the schemas the routes validate with
 * (their input side: what a client may send) and the documented answers (their output side).
 */
export function openApiDocument(): OpenApiDocument {
  const schemas = z.toJSONSchema(documented, { uri: schemaUri, io: 'output', override: tidyAnswer }).schemas;
  const paths: OpenApiDocument['paths'] = {};
  for (const operation of operations) {
    const path = operation.path.replace(/:(\w+)/g, '{$1}');
    paths[path] = { ...paths[path], [operation.method]: describe(operation) };
  }
  return {
    openapi: '3.1.1',
    info: {
      title: 'Likeness API',
      version: '0',
      description:
        'Characters with a face, a voice and a memory: conversations, accounts, characters, images and jobs. ' +
        'Bodies are JSON; every error is an Error with a stable code. Pages: pass `nextCursor` back as `cursor` until it is null.',
    },
    // Relative: wherever the document is read from; paths carry /api/v0 themselves.
    servers: [{ url: '/', description: 'This service' }],
    tags: Object.entries(tags).map(([name, description]) => ({ name, description })),
    security: [{ apiKey: [] }],
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, bare(schema)])),
      responses: { Error: { description: 'An error', content: { 'application/json': { schema: { $ref: schemaUri('Error') } } } } },
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: '`Authorization: Bearer <key>`: ADMIN_API_KEY may do everything; an account key (lk_…) acts as that account.',
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer <METRICS_TOKEN>`, for /metrics only.' },
      },
    },
  };
}

function describe(operation: Operation): OpenApiOperation {
  const pathParameters = [...operation.path.matchAll(/:(\w+)/g)].map(([, name]) => ({
    name: name!,
    in: 'path' as const,
    required: true,
    schema: requestSchema(operation.params?.[name!] ?? uuid.describe('A UUID')),
  }));
  const query = operation.query ? requestSchema(operation.query) : undefined;
  const required = new Set((query?.required as string[] | undefined) ?? []);
  const queryParameters = Object.entries((query?.properties ?? {}) as Record<string, JsonSchema>).map(([name, schema]) => ({
    name,
    in: 'query' as const,
    required: required.has(name),
    schema,
  }));
  const bodies = { ...(operation.body ? { 'application/json': operation.body } : {}), ...operation.uploads };
  const responses: OpenApiOperation['responses'] = Object.fromEntries(operation.answers.map((answer) => [String(answer.status), response(answer)]));
  if (operation.rateLimited) {
    responses['429'] = {
      description: `RATE_LIMITED: more than ${typeof operation.rateLimited === 'string' ? operation.rateLimited : 'API_RATE_LIMIT_PER_MINUTE'} requests of this kind a minute`,
      headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } },
      content: { 'application/json': { schema: { $ref: schemaUri('Error') } } },
    };
  }
  // /metrics answers in plain text, apart from the API's error handler.
  if (operation.access !== 'metricsToken') {
    responses['4XX'] = errorResponse;
    responses['5XX'] = errorResponse;
  }
  return {
    operationId: operationId(operation),
    tags: [operation.tag],
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    ...(operation.access ? { security: operation.access === 'open' ? [] : [{ [operation.access]: [] }] } : {}),
    parameters: [...pathParameters, ...queryParameters],
    ...(Object.keys(bodies).length > 0
      ? {
          requestBody: {
            // An empty body is read as `{}`: the body is optional when `{}` passes.
            required: operation.body ? !operation.body.safeParse({}).success : true,
            content: Object.fromEntries(Object.entries(bodies).map(([mediaType, schema]) => [mediaType, { schema: requestSchema(schema) }])),
          },
        }
      : {}),
    responses,
  };
}

/** `POST /api/v0/jobs/:jobId/cancel` → `postJobsByJobIdCancel`: unique as method and path are. */
function operationId(operation: Operation): string {
  const words = operation.path
    .replace(/^\/api\/v0/, '')
    .split(/[/.]/)
    .filter(Boolean)
    .map((segment) => (segment.startsWith(':') ? `By${capital(segment.slice(1))}` : capital(segment)));
  return operation.method + words.join('');
}

const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

function response(answer: Answer): OpenApiResponse {
  if (!answer.body) return { description: answer.description, ...(answer.mediaType ? { content: { [answer.mediaType]: {} } } : {}) };
  const id = documented.get(answer.body)?.id;
  if (!id) throw new Error(`An answer's schema is not in the documented registry: ${answer.description}`);
  return { description: answer.description, content: { [answer.mediaType ?? 'application/json']: { schema: { $ref: schemaUri(id) } } } };
}

/** What a client may send: the input side, before transforms and defaults. */
function requestSchema(schema: z.ZodType): JsonSchema {
  return bare(z.toJSONSchema(schema, { io: 'input', override: tidy }));
}

/**
 * Leaves out what says nothing to a reader: the pattern behind a named format (zod's date
 * pattern alone is 300 characters) and the bounds zod gives every integer.
 */
function tidy({ jsonSchema }: { jsonSchema: JsonSchema }): void {
  if (typeof jsonSchema.format === 'string' && ['uuid', 'date', 'date-time', 'uri'].includes(jsonSchema.format)) delete jsonSchema.pattern;
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
}

/** Answers may gain members in a later version: the document leaves them open for clients. */
function tidyAnswer(context: { jsonSchema: JsonSchema }): void {
  tidy(context);
  if (context.jsonSchema.additionalProperties === false) delete context.jsonSchema.additionalProperties;
}

/** Without the dialect and id keywords zod writes at the top: the document's dialect is 3.1's. */
function bare(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return rest;
}
