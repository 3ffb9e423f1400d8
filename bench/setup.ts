import { mkdir } from 'node:fs/promises';
import { ApiClient } from './api-client.js';
import { type BenchProcess, startProcess, startServiceProcess } from './processes.js';

export const adminKey = 'bench-admin-key-0123456789';

export interface BenchService {
  service: BenchProcess;
  /** The fake engine's process. */
  llm: BenchProcess;
  admin: ApiClient;
  /** An account's client and its character. */
  account(username: string): Promise<{ client: ApiClient; accountId: string; characterId: string }>;
  stop(): Promise<void>;
}

/** The service and the fake engine, each in a child process, over a fresh data directory. */
export async function startBenchService(
  dataDir: string,
  engine: { script: string; record?: boolean },
  environment: Record<string, string> = {},
): Promise<BenchService> {
  await mkdir(dataDir, { recursive: true });
  const llm = await startProcess('engine-process.ts', { BENCH_SCRIPT: engine.script, ...(engine.record ? { BENCH_RECORD: '1' } : {}) });
  const service = await startServiceProcess({
    PORT: '0',
    DATA_DIR: dataDir,
    ADMIN_API_KEY: adminKey,
    LLM_BASE_URL: llm.url,
    LLM_MODEL: 'fake-model',
    API_RATE_LIMIT_PER_MINUTE: '1000000',
    LOG_LEVEL: 'info',
    ...environment,
  });
  const admin = new ApiClient(service.url, adminKey);
  return {
    service,
    llm,
    admin,
    async account(username) {
      const created = await admin.json('POST', '/api/v0/accounts', { username });
      return {
        client: new ApiClient(service.url, created.apiKey),
        accountId: created.account.id,
        characterId: created.account.characterId,
      };
    },
    async stop() {
      await admin.close();
      await service.stop();
      await llm.stop();
    },
  };
}
