/**
 * Benchmark 13 (issue 22): what a lorebook adds to building a prompt, in process. A card's book
 * of 500 entries, a quarter of them with regular-expression keys, scanned four messages deep:
 * the time to decide which entries go in (keys matched, secondary logic, budget counted with the
 * service's token estimate) and to make their contents what the prompt holds (macros), from the
 * newest messages of a conversation that names a few of them. p99 over 5,000 prompts after 500
 * not counted, each prompt with other messages, as a conversation has; once with the book's
 * recursion on (three steps) beside it. Beside them, reading the book from the default SQLite
 * store (and through the cache a prompt reads it with, per lorebook revision), and the import of a 2 MB PNG card (bench/card-import.ts).
 */
import path from 'node:path';
import { LorebookCache } from '../src/core/lorebook/lorebook-cache.js';
import { expandMacros } from '../src/core/macros.js';
import { measureCardImport } from './card-import.js';
import { activateLorebook } from '../src/core/lorebook/activation.js';
import { type Lorebook, type LorebookEntry, defaultLorebookEntry, defaultLorebookSettings } from '../src/core/lorebook/lorebook.js';
import { LearningTokenEstimator } from '../src/core/tokens.js';
import type { RegexKeyRunner } from '../src/core/ports.js';
import { WorkerRegexRunner } from '../src/engines/regex/worker-regex-runner.js';
import { openSqlStore } from '../src/store/sql/sql-store.js';
import { newAccountRecords, uniqueUsername } from '../test/store/repository-fixtures.js';
import { percentile, round } from './stats.js';

const entryCount = 500;
const prompts = 5_000;
const warmUp = 500;
/** The regular-expression keys run as a process runs them: in the worker thread, within the default bound. */
const worker = new WorkerRegexRunner({ boundMs: 50, logger: { debug() {}, info() {}, warn: (fields, message) => console.warn(message, fields), error() {} } });
/**
 * The same keys run on the calling thread, unbounded, as activation ran them before the worker:
 * measured beside it, under the same load, to show what the hop to the thread costs.
 */
const compiled = new Map<string, RegExp>();
const inThread: RegexKeyRunner = {
  boundMs: Infinity,
  refusal: () => undefined,
  run: async (texts, checks) =>
    checks.map(({ key, text }) => {
      const id = `${key.flags}/${key.source}`;
      let expression = compiled.get(id);
      if (!expression) compiled.set(id, (expression = new RegExp(key.source, key.flags)));
      return expression.test(texts[text]!);
    }),
};
const places = ['harbour', 'tower', 'market', 'temple', 'forest', 'mine', 'bridge', 'keep', 'well', 'gate'];

function entry(index: number): LorebookEntry {
  const place = `${places[index % places.length]}${index}`;
  const regex = index % 4 === 0;
  return {
    ...defaultLorebookEntry,
    id: `entry-${index}`,
    name: place,
    keys: regex ? [`/\\b(?:old|new) ${place}s?\\b/i`, `/${place}-(?:north|south)/`] : [place, `keeper of ${place}`, `${place} guild`],
    secondaryKeys: index % 7 === 0 ? ['night', 'storm'] : [],
    secondaryLogic: index % 2 === 0 ? 'and_any' : 'not_all',
    content: `{{char}} knows the ${place} well: ${'its streets, its people and the stories told about it at night, '.repeat(3)}and {{user}} has heard of it.`,
    constant: index % 100 === 0,
    insertionOrder: index % 50,
    priority: index % 10,
    position: index % 3 === 0 ? 'at_depth' : index % 3 === 1 ? 'before_character' : 'after_character',
  };
}

/** The four newest messages of prompt `turn`: talk that names three places (one through a regex key). */
function messages(turn: number): string[] {
  const named = (offset: number) => `${places[(turn + offset) % places.length]}${(turn * 7 + offset * 13) % entryCount}`;
  const filler = 'We walked for a long while and talked about the weather, the road and what we would eat tonight. ';
  return [
    `Sam: ${filler}Shall we go to the ${named(1)} before the storm?`,
    `Ada: ${filler}The old ${places[(turn * 4) % places.length]}${(turn * 4) % entryCount} is closed at night.`,
    `Sam: ${filler}Then the ${named(2)} guild, or the keeper of ${named(3)}.`,
    `Ada: ${filler}As you wish.`,
  ];
}

async function measure(book: Lorebook, regexes: RegexKeyRunner): Promise<{ p50Ms: number; p99Ms: number; maxMs: number; cpuP50Ms: number; cpuP99Ms: number; entriesIn: number; tokensIn: number }> {
  const tokens = new LearningTokenEstimator();
  const samples: number[] = [];
  // CPU time beside wall time: on a shared two-core machine the wall tail is mostly other processes' turns.
  const cpuSamples: number[] = [];
  let entriesIn = 0;
  let tokensIn = 0;
  for (let turn = 0; turn < warmUp + prompts; turn++) {
    const recent = messages(turn);
    const cpuStarted = process.cpuUsage();
    const started = performance.now();
    const activation = await activateLorebook({
      book,
      messages: recent,
      contextTokens: 8192,
      tokens,
      render: (content) => expandMacros(content, { character: 'Ada', user: 'Sam', pickSeed: 'conversation' }),
      regexes,
    });
    const elapsed = performance.now() - started;
    const cpu = process.cpuUsage(cpuStarted);
    if (turn >= warmUp) {
      samples.push(elapsed);
      cpuSamples.push((cpu.user + cpu.system) / 1000);
      entriesIn += activation.entryIds.length;
      tokensIn += activation.tokens;
    }
  }
  return {
    p50Ms: round(percentile(samples, 0.5), 3),
    p99Ms: round(percentile(samples, 0.99), 3),
    maxMs: round(Math.max(...samples), 3),
    cpuP50Ms: round(percentile(cpuSamples, 0.5), 3),
    cpuP99Ms: round(percentile(cpuSamples, 0.99), 3),
    entriesIn: round(entriesIn / prompts, 1),
    tokensIn: Math.round(tokensIn / prompts),
  };
}

/**
 * p50 and p99 of reading the book from a SQLite file (`lorebooks.get`), and of getting it as
 * ContextWindow does for every prompt: through the cache kept per lorebook revision, which the
 * character row read for the reply carries.
 */
async function measureRead(scratch: string, book: Lorebook): Promise<{ p50Ms: number; p99Ms: number; cachedP50Ms: number; cachedP99Ms: number }> {
  const store = await openSqlStore(`sqlite://${path.join(scratch, 'lorebook.sqlite')}`);
  try {
    const owner = newAccountRecords(uniqueUsername('keeper'));
    await store.accounts.create(owner);
    await store.lorebooks.replace(owner.character.id, book);
    const character = (await store.characters.get(owner.character.id))!;
    const cache = new LorebookCache(store);
    const time = async (read: () => Promise<unknown>) => {
      const samples: number[] = [];
      for (let each = 0; each < 1_100; each++) {
        const started = performance.now();
        await read();
        if (each >= 100) samples.push(performance.now() - started);
      }
      return samples;
    };
    const raw = await time(() => store.lorebooks.get(owner.character.id));
    const cached = await time(() => cache.of(character));
    return {
      p50Ms: round(percentile(raw, 0.5), 3),
      p99Ms: round(percentile(raw, 0.99), 3),
      cachedP50Ms: round(percentile(cached, 0.5), 4),
      cachedP99Ms: round(percentile(cached, 0.99), 4),
    };
  } finally {
    await store.close();
  }
}

export async function benchmarkLorebook(scratch: string): Promise<Record<string, unknown>> {
  const entries = Array.from({ length: entryCount }, (_, index) => entry(index));
  const settings = { ...defaultLorebookSettings, scanDepth: 4 };
  const activation = await measure({ settings, entries }, worker);
  const withRecursion = await measure({ settings: { ...settings, recursiveScanning: true, maxRecursionSteps: 3 }, entries }, worker);
  const regexInThread = await measure({ settings, entries }, inThread);
  worker.close();
  const storeRead = await measureRead(scratch, { settings, entries });
  // Issue 22's second figure: a 2 MB PNG card imported (target < 200 ms), from bench/card-import.ts.
  const cardImport = await measureCardImport();
  return {
    entries: entryCount,
    regexEntries: entries.filter((each) => each.keys[0]?.startsWith('/')).length,
    scanDepth: settings.scanDepth,
    prompts,
    regexBoundMs: worker.boundMs,
    activation,
    withRecursion,
    regexInThread,
    storeRead,
    cardImport,
  };
}
