/**
 * The start-up look at the chat engine's context. llama-server gives each request the context
 * of one slot (`-c` divided by `-np`), and LLM_CONTEXT_TOKENS set to `-c` is the usual mistake:
 * the service finds out at the first refused prompt and adapts, but the operator should read
 * it in the log before that.
 */
import type { Logger, TokenCounter } from '../../core/ports.js';

export interface EngineContextCheck {
  tokenCounter: Pick<TokenCounter, 'engineContext'>;
  configuredContextTokens: number;
  logger: Logger;
}

/** The context the engine reports (undefined when it does not say); warns when smaller than configured. Never rejects. */
export async function checkEngineContext({ tokenCounter, configuredContextTokens, logger }: EngineContextCheck): Promise<number | undefined> {
  const engine = await tokenCounter.engineContext?.().catch(() => undefined);
  if (engine !== undefined && engine < configuredContextTokens) {
    logger.warn(
      { configured: configuredContextTokens, engine },
      'the chat engine gives each request a smaller context than LLM_CONTEXT_TOKENS (llama-server: -c divided by -np); set LLM_CONTEXT_TOKENS to it. Until then the first prompt too long for it is sent again with less history',
    );
  }
  return engine;
}
