/**
 * `read` shared by everyone who asks before it runs. Each ask waits for a reading taken after
 * it (at the end of this turn of the event loop), so what it gets is at least as new as the
 * ask, and one reading serves every ask of a turn: under load, every request of the turn.
 */
export function sharedReadings<T>(read: () => Promise<T>): () => Promise<T> {
  let next: Promise<T> | undefined;
  return () => {
    next ??= new Promise<T>((resolve, reject) => {
      setImmediate(() => {
        next = undefined;
        read().then(resolve, reject);
      });
    });
    return next;
  };
}
