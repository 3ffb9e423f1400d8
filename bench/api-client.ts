import { createParser } from 'eventsource-parser';
import { Agent, request } from 'undici';

/** A client of the service under benchmark: plain undici, no connection limit. */
export class ApiClient {
  readonly agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 30_000 });

  constructor(
    readonly url: string,
    readonly key: string,
  ) {}

  async json(method: 'GET' | 'POST', route: string, body?: unknown, key = this.key): Promise<any> {
    const response = await request(`${this.url}${route}`, {
      method,
      dispatcher: this.agent,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const parsed = await response.body.json();
    if (response.statusCode >= 400) throw new Error(`${method} ${route} answered ${response.statusCode}: ${JSON.stringify(parsed)}`);
    return parsed;
  }

  /**
   * Streams a chat; calls `onPiece` with each content piece and the time it was read.
   * Resolves with the whole text and whether `[DONE]` arrived.
   */
  async stream(
    conversationId: string,
    data: string,
    onPiece: (content: string, readAt: number) => void = () => undefined,
    key = this.key,
  ): Promise<{ text: string; done: boolean; error?: string }> {
    return this.streamFrom(`/api/v0/conversations/${conversationId}/chat/stream`, data, onPiece, key);
  }

  /** Streams from any route answering the chat stream's request body with SSE chunks. */
  async streamFrom(
    route: string,
    data: string,
    onPiece: (content: string, readAt: number) => void,
    key = this.key,
  ): Promise<{ text: string; done: boolean; error?: string }> {
    const response = await request(`${this.url}${route}`, {
      method: 'POST',
      dispatcher: this.agent,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data }),
    });
    if (response.statusCode !== 200) {
      return { text: '', done: false, error: `status ${response.statusCode}: ${await response.body.text()}` };
    }
    let text = '';
    let done = false;
    let error: string | undefined;
    const parser = createParser({
      onEvent: (event) => {
        if (event.data === '[DONE]') {
          done = true;
          return;
        }
        const chunk = JSON.parse(event.data);
        if (chunk.error) {
          error = chunk.error.message;
          return;
        }
        const content: string | undefined = chunk.choices?.[0]?.delta?.content;
        if (content) {
          text += content;
          onPiece(content, performance.now());
        }
      },
    });
    const decoder = new TextDecoder();
    for await (const bytes of response.body) parser.feed(decoder.decode(bytes, { stream: true }));
    return { text, done, ...(error ? { error } : {}) };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
