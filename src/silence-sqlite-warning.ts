/**
 * Node 22 prints an ExperimentalWarning when `node:sqlite` loads (it needs no flag since 22.13;
 * the API we use is stable in practice). The service imports this module first and loads
 * `node:sqlite` only when the store opens (see the SQLite dialect), so operators do not read that
 * warning on every start; every other warning is printed as before.
 */
const emitWarning = process.emitWarning.bind(process);

process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const message = typeof warning === 'string' ? warning : warning.message;
  const [option] = rest;
  const type = typeof option === 'string' ? option : (option as { type?: string } | undefined)?.type ?? (typeof warning === 'string' ? undefined : warning.name);
  if (type === 'ExperimentalWarning' && message.startsWith('SQLite')) return;
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;
