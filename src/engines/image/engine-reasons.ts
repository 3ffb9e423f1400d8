/**
 * The human reason inside an image engine's error body. Each engine wraps it differently:
 * AUTOMATIC1111 turns every exception into `{error: <class name>, detail, body, errors: str(e)}`,
 * FastAPI (A1111, Cog) lists validation failures as `detail: [{loc, msg, type}]`, coglet sends
 * `{error, status: 'failed'}` and Replicate `{title, detail, status}`. `upstreamMessage` would
 * pick A1111's class name over its reason, hence this reading first.
 */
import { truncate, upstreamMessage } from '../http.js';

/** The reason inside an error body, shortened; the raw text when no known shape fits. */
export function reasonOf(text: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    return upstreamMessage(text);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return upstreamMessage(text);
  const record = body as Record<string, unknown>;
  const detail = record['detail'];
  if (Array.isArray(detail)) {
    const issues = detail.map(issueText).filter((issue) => issue !== '');
    if (issues.length > 0) return truncate(issues.join('; '));
  }
  if (typeof detail === 'string' && detail.trim() !== '') return truncate(detail.trim());
  const error = record['error'];
  const errors = record['errors'];
  if (typeof error === 'string' && typeof errors === 'string' && errors.trim() !== '') return truncate(`${error}: ${errors.trim()}`);
  const title = record['title'];
  if (error === undefined && typeof title === 'string' && title.trim() !== '') return truncate(title.trim());
  return upstreamMessage(text);
}

/** One FastAPI validation issue as `input.width: must be at most 1024`. */
function issueText(issue: unknown): string {
  if (issue === null || typeof issue !== 'object') return typeof issue === 'string' ? issue : '';
  const { loc, msg } = issue as { loc?: unknown; msg?: unknown };
  const message = typeof msg === 'string' ? msg : '';
  // `body` is where every field lives, so it says nothing to the reader.
  const path = Array.isArray(loc) ? loc.filter((part) => part !== 'body').join('.') : '';
  return path === '' ? message : `${path}: ${message}`;
}
