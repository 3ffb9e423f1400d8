/**
 * `npm run model:fetch`: fetches the embedded chat engine's model ahead of the first start, with
 * the same code the service uses (so the same place, lock and resume). Prints progress lines,
 * then the file's path; exits 1 with a message saying what to do when it cannot.
 */
import { pino } from 'pino';
import { resolveModelFile, type ModelFileState } from './engines/chat/embedded/model-file.js';
import { ConfigError, parseConfig } from './config.js';
import { createLogger } from './logger.js';

/** What to fetch and where, as the service reads it: LLM_MODEL, DATA_DIR, HF_ENDPOINT, HF_TOKEN. */
function modelSettings(environment: NodeJS.ProcessEnv) {
  const { llm } = parseConfig(environment);
  return { engine: llm.engine, model: llm.model, directory: llm.embedded.modelsDir, huggingFace: llm.embedded.huggingFace };
}

/** At most one progress line a second: enough to watch, few enough to read in a CI log. */
const PRINT_INTERVAL_MS = 1000;

async function main(): Promise<number> {
  let settings: ReturnType<typeof modelSettings>;
  try {
    settings = modelSettings(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    return 2;
  }
  if (settings.engine !== 'embedded') {
    console.error('LLM_BASE_URL is set: chats go to that server, which has its own models. Unset it to fetch the embedded engine\'s model.');
    return 2;
  }
  // Progress goes to stdout as plain lines; the log keeps to warnings, on stderr.
  const logger = createLogger('warn', pino.destination(2));
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort(new Error('Stopped; what arrived is kept and the next run resumes it.')));
  process.once('SIGTERM', () => stop.abort(new Error('Stopped; what arrived is kept and the next run resumes it.')));

  let lastPrintAt = Number.NEGATIVE_INFINITY;
  const onState = (state: ModelFileState): void => {
    if (state.state === 'checking') console.log(`Model ${settings.model}`);
    if (state.state === 'waiting-for-other-process') console.log('Another process is fetching this model; waiting for it…');
    if (state.state !== 'downloading') return;
    const now = Date.now();
    if (now - lastPrintAt < PRINT_INTERVAL_MS && state.percent !== 100) return;
    lastPrintAt = now;
    console.log(progressLine(state));
  };

  try {
    const file = await resolveModelFile({ model: settings.model, directory: settings.directory, huggingFace: settings.huggingFace, logger, onState, signal: stop.signal });
    console.log(file);
    return 0;
  } catch (error) {
    console.error(stop.signal.aborted ? String((stop.signal.reason as Error).message) : error instanceof Error ? error.message : String(error));
    return 1;
  }
}

/** `42.0% · 420.0 of 1000.0 MB · 12.3 MB/s · 47 s left`. */
function progressLine(progress: Extract<ModelFileState, { state: 'downloading' }>): string {
  const megabytes = (bytes: number): string => (bytes / 1_000_000).toFixed(1);
  const parts = [
    progress.percent === undefined ? undefined : `${progress.percent.toFixed(1)}%`,
    progress.totalBytes === undefined ? `${megabytes(progress.receivedBytes)} MB` : `${megabytes(progress.receivedBytes)} of ${megabytes(progress.totalBytes)} MB`,
    progress.bytesPerSecond === undefined ? undefined : `${megabytes(progress.bytesPerSecond)} MB/s`,
    progress.secondsLeft === undefined ? undefined : `${duration(progress.secondsLeft)} left`,
  ];
  return parts.filter((part) => part !== undefined).join(' · ');
}

function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

process.exitCode = await main();
