import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import type { Reply } from '../core/chat.js';
import type { Logger } from '../core/ports.js';
import { errorBody, toAppError } from './errors.js';

/**
 * Relays a reply as the spec's chunk objects over `text/event-stream`: one `data:` event per
 * piece, a last chunk with `finish_reason: "stop"`, then `data: [DONE]`. An engine failure
 * mid-stream ends with one `data: {"success":false,"error":{…}}` event and no `[DONE]`, so
 * clients that wait for `[DONE]` see the failure. If the client leaves, the reply still
 * completes and is stored.
 */
export function streamReply(context: Context, reply: Reply, logger: Logger) {
  context.header('Content-Type', 'text/event-stream; charset=utf-8');
  context.header('Cache-Control', 'no-cache');
  context.header('X-Accel-Buffering', 'no');
  const chunk = (content: string, finishReason: 'stop' | null) =>
    `data: ${JSON.stringify({
      id: reply.id,
      object: 'chat.completion.chunk',
      created: reply.createdSeconds,
      model: reply.model,
      system_fingerprint: null,
      choices: [{ index: 0, delta: { content }, finish_reason: finishReason }],
    })}\n\n`;
  return stream(context, async (output) => {
    let open = true;
    output.onAbort(() => {
      open = false;
    });
    try {
      for await (const piece of reply.pieces) {
        if (!open) break;
        await output.write(chunk(piece, null));
      }
      await reply.done;
      if (open) await output.write(`${chunk('', 'stop')}data: [DONE]\n\n`);
    } catch (error) {
      const appError = toAppError(error);
      logger.debug({ code: appError.code, replyId: reply.id }, 'stream ended with an error event');
      if (open) await output.write(`data: ${JSON.stringify(errorBody(appError))}\n\n`);
    }
  });
}
