/**
 * Reads Prometheus text exposition (version 0.0.4) as a scraper does. prom-client writes the
 * format but ships no parser, so this is a small one: enough for the samples our tests assert on.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# HELP` text by metric name. */
  help: Map<string, string>;
  /** `# TYPE` by metric name. */
  types: Map<string, string>;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/g;

export function parseExposition(text: string): Exposition {
  const exposition: Exposition = { samples: [], help: new Map(), types: new Map() };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (comment) {
      (comment[1] === 'HELP' ? exposition.help : exposition.types).set(comment[2]!, comment[3]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const match = sampleLine.exec(line);
    if (!match) throw new Error(`Not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(labelPair)) {
      labels[pair[1]!] = pair[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    exposition.samples.push({ name: match[1]!, labels, value: parseValue(match[3]!) });
  }
  return exposition;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** The samples named `name` whose labels include all of `labels`. */
export function find(exposition: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  return exposition.samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
}

/** The value of the one sample matching, or undefined when none does. */
export function valueOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const matches = find(exposition, name, labels);
  if (matches.length > 1) throw new Error(`${matches.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return matches[0]?.value;
}

/** GETs `${baseUrl}/metrics` over HTTP and parses it, failing on anything but a 200 in text format. */
export async function scrape(baseUrl: string, token?: string): Promise<Exposition> {
  const response = await fetch(`${baseUrl}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const text = await response.text();
  if (response.status !== 200) throw new Error(`scrape answered ${response.status}: ${text}`);
  if (!response.headers.get('content-type')?.startsWith('text/plain; version=0.0.4')) {
    throw new Error(`scrape answered content type ${response.headers.get('content-type')}`);
  }
  return parseExposition(text);
}
