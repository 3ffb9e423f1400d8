/**
 * What `LLM_MODEL` names, and where a downloaded model is kept, worked out without touching the
 * network. Every name that becomes part of a path (from the setting, a URL or a repository
 * listing) is checked segment by segment, so no name can reach outside the models directory.
 */
import path from 'node:path';
import { ModelFileError } from './model-file-error.js';

/** One of the forms `LLM_MODEL` accepts. */
export type ModelSource =
  | { kind: 'path'; path: string }
  /** `file` may hold folders of the repository, e.g. `Q4_K_M/model-Q4_K_M.gguf`. */
  | { kind: 'hugging-face-file'; owner: string; repository: string; file: string }
  | { kind: 'hugging-face-quant'; owner: string; repository: string; quant: string }
  | { kind: 'url'; url: URL };

export const ACCEPTED_FORMS =
  'a path to a .gguf file, hf:owner/repo/file.gguf, hf:owner/repo:QUANT (e.g. hf:bartowski/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M) or an https:// URL of a .gguf file';

// Letters, digits and . _ + - only: what Hugging Face allows in names, and nothing a shell,
// a path or Windows would read specially.
const SAFE_SEGMENT = /^[\w.+-]+$/;
const QUANT_FORM = /^([^/:]+)\/([^/:]+):([^/:]+)$/;
const SPLIT_SUFFIX = /-\d{5}-of-\d{5}(?=\.gguf$)/i;

/** Reads the setting; throws `MODEL_INVALID` naming the accepted forms. */
export function parseModelSource(model: string, workingDirectory = process.cwd()): ModelSource {
  const value = model.trim();
  if (value.startsWith('hf:')) return parseHuggingFace(value, model);
  if (/^https?:\/\//i.test(value)) return parseUrl(value, model);
  if (value !== '' && value.toLowerCase().endsWith('.gguf')) return { kind: 'path', path: path.resolve(workingDirectory, value) };
  throw invalid(model, `it must be ${ACCEPTED_FORMS}.`);
}

function parseHuggingFace(value: string, model: string): ModelSource {
  const rest = value.slice('hf:'.length);
  const quant = QUANT_FORM.exec(rest);
  if (quant) {
    const [, owner = '', repository = '', name = ''] = quant;
    checkSegments(model, [owner, repository, name]);
    return { kind: 'hugging-face-quant', owner, repository, quant: name };
  }
  const [owner = '', repository = '', ...fileSegments] = rest.split('/');
  const file = fileSegments.join('/');
  if (fileSegments.length === 0 || !file.toLowerCase().endsWith('.gguf')) {
    throw invalid(model, `a Hugging Face model is hf:owner/repo/file.gguf or hf:owner/repo:QUANT; it must be ${ACCEPTED_FORMS}.`);
  }
  checkSegments(model, [owner, repository, ...fileSegments]);
  return { kind: 'hugging-face-file', owner, repository, file };
}

function parseUrl(value: string, model: string): ModelSource {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(model, `it is not a valid URL; it must be ${ACCEPTED_FORMS}.`);
  }
  if (!url.pathname.toLowerCase().endsWith('.gguf')) throw invalid(model, `the URL must end with the .gguf file's name; it must be ${ACCEPTED_FORMS}.`);
  if (url.username !== '' || url.password !== '') throw invalid(model, 'credentials in the URL would be written to logs; for Hugging Face, set HF_TOKEN instead.');
  return { kind: 'url', url };
}

/** Where a downloaded model is kept: `directory/owner/repo/file`, or `directory/url/host/path` for a URL. */
export function storedPath(directory: string, source: Extract<ModelSource, { kind: 'hugging-face-file' | 'url' }>): string {
  let segments: string[];
  if (source.kind === 'url') {
    // The URL parser has already resolved `.` and `..`; encoded ones (%2e%2e) are refused below.
    const pathSegments = source.url.pathname.split('/').filter((segment) => segment !== '').map((segment) => safeName(decodeURIComponentSafely(segment)));
    segments = ['url', safeName(source.url.host), ...pathSegments];
  } else {
    segments = [source.owner, source.repository, ...source.file.split('/')];
  }
  checkSegments(segments.join('/'), segments);
  const root = path.resolve(directory);
  const target = path.join(root, ...segments);
  // Belt and braces: whatever the checks above missed, nothing is written outside the directory.
  const relative = path.relative(root, target);
  if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) throw invalid(segments.join('/'), 'it would be stored outside the models directory.');
  return target;
}

/**
 * Picks the one .gguf of a repository whose name ends with `quant` (any case), e.g. `Q4_K_M`
 * matches `Model-Q4_K_M.gguf` but not `Model-IQ4_K_M.gguf`. Vision projectors (`mmproj-*`) are
 * never chosen. Returns undefined when none matches; throws `MODEL_INVALID` when the match is
 * ambiguous or split into parts (llama.cpp loads a split model from its first part, but we
 * would have to fetch and check every part: not supported yet).
 */
export function findQuantFile(files: readonly string[], quant: string, label: string): string | undefined {
  const wanted = quant.toLowerCase();
  const matches = files.filter((file) => {
    const name = path.posix.basename(file).toLowerCase();
    if (!name.endsWith('.gguf') || name.startsWith('mmproj')) return false;
    const stem = name.replace(SPLIT_SUFFIX, '').slice(0, -'.gguf'.length);
    if (!stem.endsWith(wanted)) return false;
    const before = stem.at(-wanted.length - 1);
    return before === undefined || !/[a-z0-9]/.test(before);
  });
  const whole = matches.filter((file) => !SPLIT_SUFFIX.test(file));
  if (whole.length === 1) return whole[0];
  if (whole.length > 1) {
    throw invalid(label, `several files match ${quant}: ${whole.join(', ')}. Name one: hf:owner/repo/<file>.`);
  }
  if (matches.length > 0) {
    throw invalid(label, `its ${quant} file is split into parts (${matches[0]}, …), which is not supported: choose a quant that fits in one file, or download the parts yourself and set LLM_MODEL to the path of the first one.`);
  }
  return undefined;
}

/** The quants a repository offers, for the message when the one asked for is missing. */
export function availableQuants(files: readonly string[]): string[] {
  return files.filter((file) => file.toLowerCase().endsWith('.gguf') && !path.posix.basename(file).toLowerCase().startsWith('mmproj')).slice(0, 20);
}

function checkSegments(label: string, segments: readonly string[]): void {
  for (const segment of segments) {
    if (!SAFE_SEGMENT.test(segment) || segment === '.' || segment === '..') {
      throw invalid(label, `"${segment}" is not an acceptable name (letters, digits and . _ + - only); it must be ${ACCEPTED_FORMS}.`);
    }
  }
}

/** A URL segment or host made safe as a file name; `.` and `..` stay as they are and are refused. */
function safeName(text: string): string {
  return text.replace(/[^\w.+-]/g, '_');
}

function decodeURIComponentSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function invalid(model: string, reason: string): ModelFileError {
  return new ModelFileError('MODEL_INVALID', `LLM_MODEL=${model} cannot be used: ${reason}`);
}
