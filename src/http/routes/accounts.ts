import { Hono } from 'hono';
import { z } from 'zod';
import { requireAdmin, usernamePattern } from '../../core/accounts.js';
import type { HttpEnv, RouteDependencies } from '../context.js';
import { pageQuery, readJson, readQuery, uuid, uuidParam } from '../validation.js';

export const createBody = z.object({
  username: z.string().regex(usernamePattern, 'must be 2 to 32 letters, digits, dots, dashes or underscores'),
  dateOfBirth: z.iso.date('must be a date as YYYY-MM-DD').nullish(),
  referredByAccountId: uuid.nullish(),
  profilePictureUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048).nullish(),
  tags: z.array(z.string().max(64)).max(50).optional(),
});

export const changeBody = z
  .object({
    profilePictureUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048).nullable().optional(),
    tags: z.array(z.string().max(64)).max(50).optional(),
    isVerified: z.boolean().optional(),
    isDisabled: z.boolean().optional(),
    isSubscribed: z.boolean().optional(),
  })
  .strict();

export const creditBody = z.object({
  amount: z.number().positive('must be more than 0').max(1_000_000_000).refine(Number.isFinite, 'must be a number'),
  reason: z.string().trim().min(1, 'must say why').max(200),
});

/** The spec's section 4.2, plus account creation, keys and credits. */
export function accountRoutes({ core, serializers }: RouteDependencies) {
  const app = new Hono<HttpEnv>();

  app.get('/', async (context) => {
    const page = readQuery(context, pageQuery);
    const result = await core.accounts.list(context.get('actor'), page);
    return context.json({
      success: true,
      accounts: result.items.map((account) => serializers.account(account)),
      nextCursor: result.nextCursor,
    });
  });

  app.post('/', async (context) => {
    const body = await readJson(context, createBody);
    const created = await core.accounts.create(context.get('actor'), body);
    return context.json({ success: true, account: serializers.account(created.account), apiKey: created.apiKey }, 201);
  });

  app.get('/:accountId', async (context) => {
    const account = await core.accounts.get(context.get('actor'), uuidParam(context, 'accountId'));
    return context.json({ success: true, account: serializers.account(account) });
  });

  // An account may change its picture and tags; only the admin changes the flags.
  app.patch('/:accountId', async (context) => {
    const actor = context.get('actor');
    const accountId = uuidParam(context, 'accountId');
    const body = await readJson(context, changeBody);
    if (body.isVerified !== undefined || body.isDisabled !== undefined || body.isSubscribed !== undefined) requireAdmin(actor);
    const account = await core.accounts.update(actor, accountId, (current) => ({
      ...current,
      profilePictureUrl: body.profilePictureUrl === undefined ? current.profilePictureUrl : body.profilePictureUrl,
      tags: body.tags ?? current.tags,
      isVerified: body.isVerified ?? current.isVerified,
      isDisabled: body.isDisabled ?? current.isDisabled,
      isSubscribed: body.isSubscribed ?? current.isSubscribed,
    }));
    return context.json({ success: true, account: serializers.account(account) });
  });

  app.get('/:accountId/balance', async (context) => {
    return context.json({ success: true, balance: await core.accounts.balance(context.get('actor'), uuidParam(context, 'accountId')) });
  });

  app.post('/:accountId/balance', async (context) => {
    const body = await readJson(context, creditBody);
    const { transaction, balance } = await core.accounts.credit(context.get('actor'), uuidParam(context, 'accountId'), body.amount, body.reason);
    return context.json({ success: true, transactionId: transaction.id, balance });
  });

  app.get('/:accountId/transactions', async (context) => {
    const transactions = await core.accounts.transactions(context.get('actor'), uuidParam(context, 'accountId'));
    return context.json({
      success: true,
      transactions: transactions.reverse().map((transaction) => serializers.transaction(transaction)),
    });
  });

  app.post('/:accountId/keys', async (context) => {
    const apiKey = await core.accounts.rotateKey(context.get('actor'), uuidParam(context, 'accountId'));
    return context.json({ success: true, apiKey }, 201);
  });

  return app;
}
