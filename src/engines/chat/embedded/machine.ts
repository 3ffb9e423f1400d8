/**
 * What this machine gives the embedded engine: the cores the process may really run on, and
 * from them and the memory, how many replies to generate together.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * Cores this process may use: the CPU affinity mask (what `availableParallelism` reports) and,
 * in a container, the cgroup's CPU quota, whichever is smaller. llama.cpp's own default is
 * max(4, cores): on a 2-core machine its spinning threads fought each other and generation
 * fell from thousands of tokens a second to a handful.
 */
export function availableCores(cgroupCpuMax = '/sys/fs/cgroup/cpu.max'): number {
  const affinity = os.availableParallelism();
  return Math.max(1, Math.min(affinity, cgroupQuota(cgroupCpuMax) ?? affinity));
}

/** `cpu.max` holds `<quota> <period>` in microseconds, or `max <period>` without a quota. */
function cgroupQuota(file: string): number | undefined {
  try {
    const [quota, period] = readFileSync(file, 'utf8').trim().split(/\s+/);
    if (quota === undefined || quota === 'max' || period === undefined) return undefined;
    const cores = Number(quota) / Number(period);
    return Number.isFinite(cores) && cores > 0 ? Math.ceil(cores) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Replies generated together when LLM_PARALLEL is 0. Generation on a CPU is bound by memory
 * bandwidth, not arithmetic: a batch of several sequences costs little more than one, so even
 * two cores gain from four slots; more cores take up to eight. Each slot holds its own KV
 * cache, so the count comes down when memory is short (`bytesPerSlot` is the cache of one
 * slot's context, as estimated by the engine).
 */
export function defaultParallel(cores: number, bytesPerSlot = 0, freeBytes = os.freemem()): number {
  const byCores = Math.min(8, Math.max(4, cores));
  if (bytesPerSlot <= 0) return byCores;
  // Half the free memory at most, so the rest of the service and the system keep room.
  const byMemory = Math.floor(freeBytes / 2 / bytesPerSlot);
  return Math.max(1, Math.min(byCores, byMemory));
}
