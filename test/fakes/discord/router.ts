/**
 * Route definitions and matching. Templates use Discord's documentation style
 * (`/channels/{channel.id}/messages/{message.id}`); literal segments such as `@original` and `@me`
 * win over parameters. Each route names its rate-limit bucket; the major parameter (channel,
 * guild, or webhook id + token) comes from the path the way Discord derives it.
 */
import type { UploadedFile } from './attachments.js';
import type { FakeContext } from './context.js';
import type { BucketName } from './rate-limiter.js';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** A request as a route handler sees it. */
export interface RouteRequest {
  /** A path parameter by its template name, e.g. `param('channel.id')`; `fallback` when the template has none. */
  param(name: string, fallback?: string): string;
  query: URLSearchParams;
  /** Parsed JSON, or multipart `payload_json`; undefined without a body. */
  body: unknown;
  files: UploadedFile[];
}

/** A handler's answer; 204 answers have no body. */
export interface RouteAnswer {
  status: number;
  body?: unknown;
}

export interface RouteDefinition {
  method: HttpMethod;
  path: string;
  /** True when the route needs `Authorization: Bot <token>`; interaction routes carry none. */
  auth: boolean;
  bucket: BucketName | null;
  /**
   * When set, the route only matches paths it accepts: interaction webhooks and channel webhooks
   * share Discord's `/webhooks/{id}/{token}` paths and are told apart by the id.
   */
  accepts?(params: Map<string, string>, context: FakeContext): boolean;
  handle(request: RouteRequest, context: FakeContext): RouteAnswer;
}

/** A matched route with its path parameters and the major parameter for rate limits. */
export interface RouteMatch {
  route: RouteDefinition;
  /** `METHOD /template`, the key used in records and rate-limit counts. */
  name: string;
  params: Map<string, string>;
  majorParameter: string;
}

interface CompiledRoute {
  route: RouteDefinition;
  segments: string[];
  literals: number;
}

const isParameter = (segment: string): boolean => segment.startsWith('{') && segment.endsWith('}');

export class Router {
  readonly #routes: CompiledRoute[];

  constructor(routes: RouteDefinition[]) {
    this.#routes = routes
      .map((route) => {
        const segments = route.path.split('/').slice(1);
        return { route, segments, literals: segments.filter((segment) => !isParameter(segment)).length };
      })
      .sort((left, right) => right.literals - left.literals);
  }

  /** The route for a decoded path, `'method-not-allowed'` when only the method is wrong, else null. */
  match(method: string, segments: string[], context?: FakeContext): RouteMatch | 'method-not-allowed' | null {
    let pathMatched = false;
    for (const compiled of this.#routes) {
      const params = this.#matchSegments(compiled.segments, segments);
      if (params === null) continue;
      if (compiled.route.accepts !== undefined && context !== undefined && !compiled.route.accepts(params, context)) continue;
      if (compiled.route.method !== method) {
        pathMatched = true;
        continue;
      }
      return {
        route: compiled.route,
        name: `${compiled.route.method} ${compiled.route.path}`,
        params,
        majorParameter: majorParameter(compiled.route.path, params),
      };
    }
    return pathMatched ? 'method-not-allowed' : null;
  }

  #matchSegments(template: string[], segments: string[]): Map<string, string> | null {
    if (template.length !== segments.length) return null;
    const params = new Map<string, string>();
    for (let index = 0; index < template.length; index += 1) {
      const expected = template[index]!;
      const actual = segments[index]!;
      if (isParameter(expected)) {
        if (actual === '') return null;
        params.set(expected.slice(1, -1), actual);
      } else if (expected !== actual) {
        return null;
      }
    }
    return params;
  }
}

/** Discord's major parameters: the channel, the guild, or the webhook id with its token. */
function majorParameter(path: string, params: Map<string, string>): string {
  if (path.startsWith('/channels/')) return `channel:${params.get('channel.id') ?? ''}`;
  if (path.startsWith('/guilds/')) return `guild:${params.get('guild.id') ?? ''}`;
  if (path.startsWith('/webhooks/{webhook.id}')) return `webhook:${params.get('webhook.id') ?? ''}`;
  if (path.startsWith('/webhooks/')) return `webhook:${params.get('application.id') ?? ''}/${params.get('interaction.token') ?? ''}`;
  return 'global';
}
