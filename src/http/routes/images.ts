import { Hono } from 'hono';
import { z } from 'zod';
import { AppError, ValidationError } from '../../core/errors.js';
import { feedbackLimits } from '../../core/images/jobs.js';
import { accountInScope } from '../account-scope.js';
import { rateLimit } from '../auth.js';
import type { HttpEnv, RouteDependencies } from '../context.js';
import { pageQuery, readJson, readQuery, uuid, uuidParam } from '../validation.js';

// Ranges are checked by the core, which names every violation at once; here only types.
export const imageBody = z
  .object({
    prompt: z.string({ error: 'is required: describe the image you want' }),
    negativePrompt: z.string().optional(),
    width: z.number().optional(),
    height: z.number().optional(),
    samples: z.number().optional(),
    seed: z.number().optional(),
    guidanceScale: z.number().optional(),
    loraScale: z.number().optional(),
    synchronous: z.boolean().optional(),
    clientId: uuid.optional(),
  })
  .strict();

export const feedbackBody = z
  .object({
    like: z.boolean().nullable().optional(),
    feedback: z.string().max(feedbackLimits.characters).nullable().optional(),
  })
  .strict()
  .refine((body) => body.like !== undefined || body.feedback !== undefined, { message: 'send like (true, false or null) and/or feedback (text)' });

export const jobsQuery = pageQuery.extend({ accountId: uuid.optional() });

/** The spec's section 4.4: image jobs, plus listing, cancelling and feedback on outputs. */
export function imageRoutes(dependencies: RouteDependencies & { synchronousImageWaitMs: number }) {
  const { core, serializers } = dependencies;
  const app = new Hono<HttpEnv>();

  const limit = rateLimit(dependencies.rateLimits.limiter('api-images', dependencies.rateLimitPerMinute), dependencies.rateLimitPerMinute);
  app.post('/images', limit, async (context) => {
    const { synchronous, ...input } = await readJson(context, imageBody);
    const { job, transaction } = await core.images.create(context.get('actor'), input);
    const created = { success: true as const, jobId: job.id, transactionId: transaction.id };
    if (!synchronous) return context.json(created, 201);
    const final = await core.images.waitForFinal(context.get('actor'), job.id, dependencies.synchronousImageWaitMs);
    if (!final) {
      // Past the wait limit the job goes on; the client polls it like an asynchronous one.
      context.header('Location', `/api/v0/jobs/${job.id}`);
      return context.json({ ...created, status: (await core.images.get(context.get('actor'), job.id)).status, output: null }, 202);
    }
    if (final.status !== 'SUCCESS') {
      const reason = (final.failure?.message ?? `The job was ${final.status.toLowerCase()}`).replace(/([^.!?])$/, '$1.');
      throw new AppError(final.status === 'CANCELED' ? 'CONFLICT' : 'ENGINE_FAILED', `${reason} The credits were refunded.`, {
        details: { jobId: job.id, transactionId: transaction.id, status: final.status },
      });
    }
    return context.json({ ...created, output: final.outputFiles.map((file) => serializers.outputUrl(file)) });
  });

  app.get('/jobs', async (context) => {
    const actor = context.get('actor');
    const query = readQuery(context, jobsQuery);
    // An account lists its own jobs; the admin names whose.
    const accountId = accountInScope(actor, query.accountId, 'query.accountId');
    const page = await core.images.list(actor, accountId, query.limit, query.cursor);
    return context.json({
      success: true,
      jobs: page.jobs.map((job) => serializers.job(job, core.images.progressOf(job.id))),
      ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
    });
  });

  app.get('/jobs/:jobId', async (context) => {
    const job = await core.images.get(context.get('actor'), uuidParam(context, 'jobId'));
    return context.json({ success: true, job: serializers.job(job, core.images.progressOf(job.id), await core.images.position(job)) });
  });

  app.post('/jobs/:jobId/cancel', async (context) => {
    const job = await core.images.cancel(context.get('actor'), uuidParam(context, 'jobId'));
    return context.json({ success: true, job: serializers.job(job, null) });
  });

  app.post('/jobs/:jobId/outputs/:name/feedback', async (context) => {
    const jobId = uuidParam(context, 'jobId');
    const body = await readJson(context, feedbackBody);
    const job = await core.images.feedback(context.get('actor'), jobId, context.req.param('name'), body);
    return context.json({ success: true, job: serializers.job(job, null) });
  });

  return app;
}
