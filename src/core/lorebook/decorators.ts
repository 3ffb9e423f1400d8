/**
 * Character Card V3 entry decorators: `@@name value` lines at the top of an entry's content.
 * SillyTavern honours only `@@activate` (in as if its keys matched) and `@@dont_activate`
 * (never in), and so do we; every decorator line is taken off the content, so none reaches a
 * prompt.
 */

export interface DecoratedContent {
  content: string;
  activate: boolean;
  dontActivate: boolean;
}

export function readDecorators(raw: string): DecoratedContent {
  if (!raw.startsWith('@@')) return { content: raw, activate: false, dontActivate: false };
  const lines = raw.split('\n');
  let activate = false;
  let dontActivate = false;
  let first = 0;
  while (first < lines.length && lines[first]!.startsWith('@@')) {
    const name = lines[first]!.slice(2).trim().split(/\s/)[0]?.toLowerCase();
    if (name === 'activate') activate = true;
    if (name === 'dont_activate') dontActivate = true;
    first++;
  }
  return { content: lines.slice(first).join('\n'), activate, dontActivate };
}
