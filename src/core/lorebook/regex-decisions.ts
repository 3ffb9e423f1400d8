/**
 * The regular-expression keys a round of activation looks at, run all at once through the
 * RegexKeyRunner port (one wait, whatever the number of keys), their outcomes kept on each
 * scanned text for the round's matching to read. The rounds of one prompt share the runner's
 * bound: recursion cannot multiply the wait.
 */
import type { RegexCheck, RegexKeyRunner } from '../ports.js';
import type { CompiledKeys } from './keys.js';
import type { ScanText } from './scan-text.js';

export class RegexDecisions {
  #remainingMs: number;

  constructor(private readonly runner: RegexKeyRunner) {
    this.#remainingMs = runner.boundMs;
  }

  async decide(entries: Iterable<{ keys: CompiledKeys; scan: ScanText }>): Promise<void> {
    const texts: string[] = [];
    const textOf = new Map<ScanText, number>();
    const checks: RegexCheck[] = [];
    const asked: { scan: ScanText; id: string }[] = [];
    for (const { keys, scan } of entries) {
      if (scan.text === '') continue;
      for (const key of keys.regexes) {
        // Several entries may share a pattern and a text: it runs once.
        if (scan.regexOutcomes.has(key.id)) continue;
        scan.regexOutcomes.set(key.id, undefined);
        let text = textOf.get(scan);
        if (text === undefined) {
          text = texts.push(scan.bounded) - 1;
          textOf.set(scan, text);
        }
        checks.push({ key, text });
        asked.push({ scan, id: key.id });
      }
    }
    if (checks.length === 0) return;
    const started = performance.now();
    const outcomes = await this.runner.run(texts, checks, this.#remainingMs);
    this.#remainingMs -= performance.now() - started;
    asked.forEach(({ scan, id }, index) => scan.regexOutcomes.set(id, outcomes[index]));
  }
}
