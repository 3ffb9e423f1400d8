/**
 * Discord's JSON error answers. Each has the status, numeric `code` and message text Discord
 * sends, so a bot's error handling sees what production would send (discord.js turns them into
 * `DiscordAPIError` with `code` and `status`).
 */

/** Nested field errors as Discord sends them: `{content: {_errors: [{code, message}]}}`. */
export interface FormErrors {
  [field: string]: FormErrors | Array<{ code: string; message: string }>;
}

/** A Discord error body. */
export interface DiscordErrorBody {
  message: string;
  code: number;
  errors?: FormErrors;
}

/** An error a route throws to answer with Discord's error body; the HTTP layer serialises it. */
export class DiscordHttpError extends Error {
  readonly status: number;
  readonly body: DiscordErrorBody;

  constructor(status: number, body: DiscordErrorBody) {
    super(body.message);
    this.name = 'DiscordHttpError';
    this.status = status;
    this.body = body;
  }
}

/** One invalid field: its path (`['embeds', 0, 'description']`), Discord's error code and text. */
export interface FieldProblem {
  path: Array<string | number>;
  code: string;
  message: string;
}

/** 400 Invalid Form Body (50035) with Discord's nested `errors` tree. */
export function invalidFormBody(problems: FieldProblem[]): DiscordHttpError {
  const errors: FormErrors = {};
  for (const problem of problems) {
    let node: FormErrors = errors;
    for (const key of problem.path) {
      const name = String(key);
      const child = node[name];
      if (child === undefined || Array.isArray(child)) {
        const created: FormErrors = {};
        node[name] = created;
        node = created;
      } else {
        node = child;
      }
    }
    const list = node['_errors'];
    const entry = { code: problem.code, message: problem.message };
    if (Array.isArray(list)) list.push(entry);
    else node['_errors'] = [entry];
  }
  return new DiscordHttpError(400, { message: 'Invalid Form Body', code: 50035, errors });
}

/** A too-long string field, as Discord words it. */
export function tooLong(path: Array<string | number>, maximum: number): FieldProblem {
  return { path, code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${maximum} or fewer in length.` };
}

const simple = (status: number, code: number, message: string) => (): DiscordHttpError =>
  new DiscordHttpError(status, { message, code });

export const unauthorized = simple(401, 0, '401: Unauthorized');
export const notFound = simple(404, 0, '404: Not Found');
export const methodNotAllowed = simple(405, 0, '405: Method Not Allowed');
export const unknownChannel = simple(404, 10003, 'Unknown Channel');
export const unknownGuild = simple(404, 10004, 'Unknown Guild');
export const unknownMember = simple(404, 10007, 'Unknown Member');
export const unknownMessage = simple(404, 10008, 'Unknown Message');
export const unknownUser = simple(404, 10013, 'Unknown User');
export const unknownWebhook = simple(404, 10015, 'Unknown Webhook');
export const unknownApplicationCommand = simple(404, 10063, 'Unknown application command');
export const unknownInteraction = simple(404, 10062, 'Unknown interaction');
export const invalidWebhookToken = simple(401, 50027, 'Invalid Webhook Token');
export const alreadyAcknowledged = simple(400, 40060, 'Interaction has already been acknowledged.');
export const emptyMessage = simple(400, 50006, 'Cannot send an empty message');
export const editOthersMessage = simple(403, 50005, 'Cannot edit a message authored by another user');
export const wrongChannelType = simple(400, 50024, 'Cannot execute action on this channel type');
export const invalidJson = simple(400, 50109, 'The request body contains invalid JSON.');
export const entityTooLarge = simple(413, 40005, 'Request entity too large');
export const threadAlreadyCreated = simple(400, 160004, 'A thread has already been created for this message');
export const threadArchived = simple(400, 50083, 'Thread is archived');
export const oldMessageEditLimit = simple(
  400,
  30046,
  'Maximum number of edits to messages older than 1 hour reached. Try again later.',
);

/** A 5xx answer as it reaches a client: a raw body and its content type. */
export interface ServerErrorAnswer {
  status: number;
  contentType: string;
  text: string;
}

const statusTexts: Record<number, string> = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

/**
 * Discord's own 500 is JSON (`{"message": "500: Internal Server Error", "code": 0}`); a 502,
 * 503 or 504 comes from Cloudflare in front of it, as an HTML page, so a client must not
 * count on a JSON body there.
 */
export function serverError(status: number): ServerErrorAnswer {
  if (status === 500) return { status, contentType: 'application/json', text: JSON.stringify({ message: '500: Internal Server Error', code: 0 }) };
  const title = `${status} ${statusTexts[status] ?? 'Server Error'}`;
  return {
    status,
    contentType: 'text/html',
    text: `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n`,
  };
}
