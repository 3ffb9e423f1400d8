/**
 * The worker that runs lorebook regular expressions, as source text: it is started with
 * `eval: true`, so it runs the same from TypeScript sources (tsx, vitest) and from a build,
 * without a loader in the thread. It keeps what it compiled (by the number the main thread gave
 * each pattern) and, before each test, writes where it is into shared memory: a test that never
 * ends can only be stopped by ending the thread, and the main thread then reads which pattern it
 * was.
 *
 * Shared `progress` (Float64Array): [0] the request running (-1 between requests), [1] the check
 * running, [2] when it started (ms since the epoch). Each request's `results` (Int8Array, one a
 * check): 0 not run, 1 no match, 2 match.
 */
export const regexWorkerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const progress = new Float64Array(workerData.progress);
const compiled = new Map();
parentPort.on('message', (request) => {
  if (request.forget) compiled.clear();
  for (const [id, source, flags] of request.definitions) {
    try { compiled.set(id, new RegExp(source, flags)); } catch { compiled.set(id, undefined); }
  }
  const results = new Int8Array(request.results);
  progress[0] = request.sequence;
  for (let index = 0; index < results.length; index++) {
    progress[1] = index;
    progress[2] = performance.timeOrigin + performance.now();
    const expression = compiled.get(request.tasks[2 * index]);
    if (expression === undefined) continue;
    results[index] = expression.test(request.texts[request.tasks[2 * index + 1]]) ? 2 : 1;
  }
  progress[0] = -1;
  parentPort.postMessage(request.sequence);
});
`;
