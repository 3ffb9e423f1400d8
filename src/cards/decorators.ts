/**
 * V3 lorebook decorators: `@@name value` lines at the top of an entry's content. The ones that
 * say what our entry fields say (`@@depth`, `@@role`, `@@position before_desc|after_desc`,
 * `@@scan_depth`) become those fields; every other decorator line stays in the content, so it
 * goes back out as it came. V2 has no decorators: writing V2 strips them all.
 */
import type { LorebookPosition, LorebookRole } from '../core/lorebook/lorebook.js';

export interface DecoratedFields {
  depth?: number;
  role?: LorebookRole;
  position?: Exclude<LorebookPosition, 'at_depth'>;
  scanDepth?: number;
}

/** How many leading lines are decorators (`@@…`, and `@@@…` fallbacks). */
function decoratorLineCount(lines: readonly string[]): number {
  let count = 0;
  while (count < lines.length && lines[count]!.startsWith('@@')) count += 1;
  return count;
}

function wholeNumber(value: string): number | undefined {
  return /^\d{1,6}$/.test(value) ? Number(value) : undefined;
}

/** The fields the known decorators say, and the content with those lines taken out. */
export function readDecorators(content: string): { fields: DecoratedFields; content: string } {
  const lines = content.split('\n');
  const count = decoratorLineCount(lines);
  const fields: DecoratedFields = {};
  const kept: string[] = [];
  for (const line of lines.slice(0, count)) {
    const [name = '', ...rest] = line.slice(2).trim().split(/\s+/);
    const value = rest.join(' ');
    const number = wholeNumber(value);
    if (name === 'depth' && number !== undefined) fields.depth = number;
    else if (name === 'scan_depth' && number !== undefined) fields.scanDepth = number;
    else if (name === 'role' && (value === 'system' || value === 'user' || value === 'assistant')) fields.role = value;
    else if (name === 'position' && value === 'before_desc') fields.position = 'before_character';
    else if (name === 'position' && value === 'after_desc') fields.position = 'after_character';
    else kept.push(line);
  }
  return { fields, content: [...kept, ...lines.slice(count)].join('\n') };
}

/** The content without any decorator line, for V2. */
export function stripDecorators(content: string): string {
  const lines = content.split('\n');
  return lines.slice(decoratorLineCount(lines)).join('\n');
}

/** The decorator lines that say what the fields say beyond the card's standard entry fields. */
export function writeDecorators(entry: { position: LorebookPosition; depth: number; role: LorebookRole; scanDepth: number | null }): string[] {
  const lines: string[] = [];
  if (entry.position === 'at_depth') lines.push(`@@depth ${entry.depth}`);
  if (entry.position === 'at_depth' || entry.role !== 'system') lines.push(`@@role ${entry.role}`);
  if (entry.scanDepth !== null) lines.push(`@@scan_depth ${entry.scanDepth}`);
  return lines;
}
