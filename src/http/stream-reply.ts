import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import type { Reply } from '../core/chat.js';
import type { Logger } from '../core/ports.js';
import type { HttpEnv } from './context.js';
import { errorBody, toAppError } from './errors.js';

/**
 * Relays a reply as the spec's chunk objects over `text/event-stream`: one `data:` event per
 * piece, a last chunk with the reply's finish reason (`stop`, or `length` when it was cut,
 * or what else the engine said), then `data: [DONE]`. Nothing is answered before the engine
 * has begun: a failure before any text (engine down, refused key, conversation too long) is
 * thrown to the error handler and becomes a proper 4xx/5xx JSON answer. A failure after the
 * first piece ends with one `data: {"success":false,"error":{…}}` event and no `[DONE]`, so
 * clients that wait for `[DONE]` see it. If the client leaves, generation stops (see
 * `callerLeaving`) and the unfinished reply is not stored; the message is.
 *
 * Events are written straight to Node's response: going through a web ReadableStream cost
 * several times more CPU per piece than everything else on the relay path.
 */
/**
 * Aborts when the caller hangs up before its answer is complete: a reply nobody will read
 * stops at once and gives its engine slot (the embedded engine has a few) to the next one.
 */
export function callerLeaving(context: Context<HttpEnv>): AbortSignal {
  const controller = new AbortController();
  const response = context.env.outgoing;
  response.once('close', () => {
    if (!response.writableFinished) controller.abort(new Error('The caller closed the connection before the answer was complete.'));
  });
  return controller.signal;
}

export async function streamReply(context: Context<HttpEnv>, reply: Reply, logger: Logger): Promise<Response> {
  await reply.started;
  const response = context.env.outgoing;
  response.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    'X-Accel-Buffering': 'no',
  });
  response.flushHeaders();
  // Everything but the piece is the same in every chunk of a reply: build it once.
  const prefix = `data: {"id":${JSON.stringify(reply.id)},"object":"chat.completion.chunk","created":${reply.createdSeconds},"model":${JSON.stringify(reply.model)},"system_fingerprint":null,"choices":[{"index":0,"delta":{"content":`;
  const chunk = (content: string, finishReason: string | null) =>
    `${prefix}${JSON.stringify(content)}},"finish_reason":${finishReason === null ? 'null' : JSON.stringify(finishReason)}}]}\n\n`;
  const open = () => !response.destroyed && !response.writableEnded;
  try {
    for await (const piece of reply.pieces) {
      if (!open()) {
        // The client's choice, not a failure: `callerLeaving` has stopped the generation.
        logger.info({ replyId: reply.id }, 'client left the stream; the reply was stopped');
        break;
      }
      response.write(chunk(piece, null));
    }
    const stored = await reply.done;
    if (open()) response.end(`${chunk('', stored.finishReason ?? 'stop')}data: [DONE]\n\n`);
  } catch (error) {
    const appError = toAppError(error);
    logger.debug({ code: appError.code, replyId: reply.id }, 'stream ended with an error event');
    if (open()) response.end(`data: ${JSON.stringify(errorBody(appError))}\n\n`);
  }
  return RESPONSE_ALREADY_SENT;
}
