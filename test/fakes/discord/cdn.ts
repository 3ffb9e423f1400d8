/**
 * The fake's CDN on loopback: uploaded attachments (`/cdn/attachments/...` and the `/media`
 * proxy path) and user avatars (`/cdn/avatars/{user}/{hash}.{ext}`, `/cdn/embed/avatars/{n}.png`).
 * Point discord.js at it with `rest: { cdn: fake.cdnBase }` so avatar URLs stay local too.
 * Avatars are served as uploaded whatever extension or `size` is asked for; Discord would convert.
 */
import type { ServerResponse } from 'node:http';
import type { FakeContext } from './context.js';

/** A 1×1 grey PNG standing in for Discord's default avatars. */
const DEFAULT_AVATAR = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

function sendBytes(response: ServerResponse, bytes: Buffer, contentType: string): void {
  response.writeHead(200, { 'content-type': contentType, 'content-length': bytes.length, 'cache-control': 'public, max-age=31536000' }).end(bytes);
}

function notFound(response: ServerResponse): void {
  response.writeHead(404, { 'content-type': 'text/plain' }).end('404: Not Found');
}

/** Answers a non-API GET; 404 for anything it does not hold. Each is kept in `state.cdnRequests`. */
export function serveCdn(context: FakeContext, url: URL, response: ServerResponse): void {
  const { state } = context;
  const [root, kind, , attachmentId] = url.pathname.split('/').slice(1);
  const isAttachment = (root === 'cdn' || root === 'media') && (kind === 'attachments' || kind === 'ephemeral-attachments');
  answerCdn(context, url, response);
  state.cdnRequests.push({ path: url.pathname, attachmentId: isAttachment ? (attachmentId ?? null) : null, status: response.statusCode });
  state.changed();
}

function answerCdn(context: FakeContext, url: URL, response: ServerResponse): void {
  let parts: string[];
  try {
    parts = url.pathname.split('/').slice(1).map((part) => decodeURIComponent(part));
  } catch {
    return notFound(response);
  }
  const [root, kind, ...rest] = parts;
  if ((root === 'cdn' || root === 'media') && (kind === 'attachments' || kind === 'ephemeral-attachments') && rest.length === 3) {
    const file = context.state.files.get(rest[1]!);
    if (file === undefined || file.filename !== rest[2]) return notFound(response);
    return sendBytes(response, file.bytes, file.contentType);
  }
  if (root === 'cdn' && kind === 'avatars' && rest.length === 2) {
    const record = context.state.users.get(rest[0]!);
    const hash = rest[1]!.replace(/\.\w+$/, '');
    if (record?.avatarBytes == null || record.user.avatar !== hash) return notFound(response);
    return sendBytes(response, record.avatarBytes.bytes, record.avatarBytes.contentType);
  }
  if (root === 'cdn' && kind === 'embed' && rest[0] === 'avatars' && rest.length === 2) {
    return sendBytes(response, DEFAULT_AVATAR, 'image/png');
  }
  notFound(response);
}
