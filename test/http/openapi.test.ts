import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { Core } from '../../src/core/core.js';
import { createApp } from '../../src/http/app.js';
import { operations } from '../../src/http/openapi/operations.js';
import { errorBody, streamChunk } from '../../src/http/openapi/resources.js';
import { UrlSigner } from '../../src/http/signed-urls.js';
import { createLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { adminKey, type Harness, readEvents, startHarness } from './harness.js';

describe('the OpenAPI document', () => {
  let harness: Harness;
  let document: any;

  beforeAll(async () => {
    harness = await startHarness();
    const answer = await harness.call('GET', '/api/v0/openapi.json', { key: null });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    document = answer.body;
  });
  afterAll(() => harness.close());

  it('is OpenAPI 3.1 with info, paths, components and the bearer key scheme', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(Object.keys(document.paths).length).toBeGreaterThan(30);
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.security).toEqual([{ apiKey: [] }]);
    for (const [path, byMethod] of Object.entries<any>(document.paths)) {
      expect(path).toMatch(/^\/[\w./{}-]*$/);
      for (const operation of Object.values<any>(byMethod)) {
        expect(operation.summary).toEqual(expect.any(String));
        expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
        // Every path parameter is declared, as OpenAPI requires.
        const declared = operation.parameters.filter((parameter: any) => parameter.in === 'path').map((parameter: any) => parameter.name);
        expect(declared).toEqual([...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => name));
      }
    }
    const operationIds = Object.values<any>(document.paths).flatMap((byMethod) => Object.values<any>(byMethod).map((operation) => operation.operationId));
    expect(new Set(operationIds).size).toBe(operationIds.length);
    // Every reference points at a component that is there.
    const references = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/(\w+)\/(\w+)"/g)];
    expect(references.length).toBeGreaterThan(30);
    for (const [, kind, name] of references) expect(document.components[kind!]?.[name!], `${kind}/${name}`).toBeDefined();
  });

  it('lists every route the app serves, and no other', () => {
    // The routes are enumerated, never called: the app needs no working core for that.
    const app = createApp({
      core: {} as Core,
      signer: new UrlSigner({ publicBaseUrl: 'http://127.0.0.1', secret: 'secret', ttlSeconds: 60 }),
      logger: createLogger('silent'),
      rateLimitPerMinute: 10,
      synchronousImageWaitMs: 1,
      // With a token and no port of its own, /metrics is served by the app too.
      metrics: new Metrics({ processMetrics: false }),
      metricsToken: 'metrics-token-0123456789',
    });
    // HEAD is GET without the body: the GET entry stands for it.
    const served = app.routes.filter((route) => route.method !== 'ALL').map((route) => `${route.method === 'HEAD' ? 'GET' : route.method} ${route.path}`);
    const documented = Object.entries<any>(document.paths).flatMap(([path, byMethod]) =>
      Object.keys(byMethod).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...new Set(served)].sort());
  });

  it('needs the key everywhere but on the document itself, the files, the health checks and the metrics', () => {
    const open = Object.entries<any>(document.paths).flatMap(([path, byMethod]) =>
      Object.entries<any>(byMethod).filter(([, operation]) => operation.security?.length === 0).map(([method]) => `${method} ${path}`),
    );
    expect(open.sort()).toEqual(['get /api/v0/docs', 'get /api/v0/openapi.json', 'get /files/{key}', 'get /healthz', 'get /readyz']);
    expect(document.paths['/metrics'].get.security).toEqual([{ metricsToken: [] }]);
  });

  it('describes the chat body the route validates', async () => {
    const chat = document.paths['/api/v0/conversations/{conversationId}/chat'].post;
    const schema = chat.requestBody.content['application/json'].schema;
    expect(chat.requestBody.required).toBe(true);
    expect(schema.required).toEqual(['data']);
    expect(Object.keys(schema.properties).sort()).toEqual(['allow', 'characterId', 'data', 'mimeType']);
    expect(schema.properties.allow).toMatchObject({ type: 'array', maxItems: 20 });
    expect(document.paths['/api/v0/conversations/{conversationId}/regenerate'].post.requestBody.required).toBe(false);
    expect(document.paths['/api/v0/accounts'].get.parameters.map((parameter: any) => parameter.name)).toEqual(['limit', 'cursor']);

    // And the route holds to it: `data` is required, nothing else is.
    const account = await harness.account('openapi-chat');
    const conversation = await harness.call('POST', '/api/v0/conversations', { key: account.key, body: { characterId: account.characterId } });
    const route = `/api/v0/conversations/${conversation.body.id}/chat`;
    const missing = await harness.call('POST', route, { key: account.key, body: { mimeType: 'text/plain' } });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.fields.map((issue: { field: string }) => issue.field)).toEqual(['data']);
    expect((await harness.call('POST', route, { key: account.key, body: { data: 'Hi' } })).status).toBe(200);
  });

  it('documents the answers the routes send, member for member', async () => {
    const check = async (method: string, path: string, route: string, options: Parameters<Harness['call']>[2] = {}) => {
      const answer = await harness.call(method, route, options);
      const schema = operations.find((operation) => operation.method === method.toLowerCase() && operation.path === path)
        ?.answers.find((documented) => documented.status === answer.status)?.body as z.ZodType | undefined;
      expect(schema, `${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`).toBeDefined();
      // Parsing drops members the schema does not name: equal means none is missing or extra.
      expect(schema!.parse(answer.body)).toEqual(answer.body);
      return answer.body;
    };
    const created = await check('POST', '/api/v0/accounts', '/api/v0/accounts', { body: { username: 'openapi-answers' } });
    const key = created.apiKey as string;
    const accountId = created.account.id as string;
    const characterId = created.account.characterId as string;
    await check('GET', '/api/v0/accounts', '/api/v0/accounts?limit=1');
    await check('GET', '/api/v0/accounts/:accountId', `/api/v0/accounts/${accountId}`, { key });
    await check('GET', '/api/v0/accounts/:accountId/balance', `/api/v0/accounts/${accountId}/balance`, { key });
    await check('POST', '/api/v0/accounts/:accountId/balance', `/api/v0/accounts/${accountId}/balance`, { body: { amount: 5, reason: 'test' } });
    await check('GET', '/api/v0/accounts/:accountId/transactions', `/api/v0/accounts/${accountId}/transactions`, { key });
    await check('GET', '/api/v0/characters/:characterId', `/api/v0/characters/${characterId}`, { key });
    await check('POST', '/api/v0/characters/:characterId/memories', `/api/v0/characters/${characterId}/memories`, { key, body: { text: 'Likes tea.' } });
    await check('GET', '/api/v0/characters/:characterId/memories', `/api/v0/characters/${characterId}/memories`, { key });
    await check('GET', '/api/v0/characters/:characterId/images/models', `/api/v0/characters/${characterId}/images/models`, { key });
    const opened = await check('POST', '/api/v0/conversations', '/api/v0/conversations', { key, body: { characterId } });
    const conversation = `/api/v0/conversations/${opened.id}`;
    await check('POST', '/api/v0/conversations/:conversationId/chat', `${conversation}/chat`, { key, body: { data: 'Hello' } });
    await check('GET', '/api/v0/conversations/:conversationId', conversation, { key });
    const streamed = await fetch(`${harness.url}${conversation}/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'Hello again' }),
    });
    const events = await readEvents(streamed);
    expect(events.pop()).toBe('[DONE]');
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) expect(streamChunk.parse(JSON.parse(event))).toEqual(JSON.parse(event));
    await check('GET', '/api/v0/conversations', '/api/v0/conversations', { key });
    await check('GET', '/api/v0/jobs', '/api/v0/jobs', { key });
    await check('POST', '/api/v0/conversations/:conversationId/clear', `${conversation}/clear`, { key });
    await check('GET', '/healthz', '/healthz', { key: null });
    await check('GET', '/readyz', '/readyz', { key: null });

    const refused = await harness.call('GET', `/api/v0/accounts/${accountId}`, { key: null });
    expect(refused.status).toBe(401);
    expect(errorBody.parse(refused.body)).toEqual(refused.body);
  });

  it('serves a reference page that needs nothing from elsewhere, without a key', async () => {
    const page = await fetch(`${harness.url}/api/v0/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    const elsewhere = [...html.matchAll(/(?:https?:)?\/\/[^\s"'<>)]*/g)].map(([url]) => url).filter((url) => !url.startsWith(harness.url));
    expect(elsewhere).toEqual([]);
    expect(html).not.toMatch(/<script|<link|@import|url\(/i);
    for (const path of Object.keys(document.paths)) expect(html).toContain(`<code>${path}</code>`);
    expect(html).toContain('href="openapi.json"');
  });
});
