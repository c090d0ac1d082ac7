/**
 * The env server's request bodies (zod) and the shape of its replies. Field names are snake_case, as Python clients
 * expect. See env-server.ts for the endpoints.
 */
import { z } from 'zod';

const seed = z.number().int().min(0).max(2 ** 53 - 1).nullable().optional();

export const CreateSessionBody = z.strictObject({
  env_id: z.string().min(1, 'env_id must name a registered env (GET /envs lists them)'),
  kwargs: z.record(z.string(), z.unknown()).optional(),
  seed,
  /** Leave the per-session constants (tools, policy, system prompt) out of step infos; reset infos keep them. */
  compact_info: z.boolean().optional(),
});
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;

export const ResetBody = z.strictObject({
  seed,
  options: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type ResetBody = z.infer<typeof ResetBody>;

export const StepBody = z.strictObject({ action: z.unknown() }).refine((b) => b.action !== undefined, { message: 'action is required', path: ['action'] });
export type StepBody = z.infer<typeof StepBody>;

/** `path: message; …` for the first few issues. */
export function describeZodError(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(body)'}: ${i.message}`)
    .join('; ');
}
