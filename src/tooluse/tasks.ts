/**
 * τ²-bench task files (tau2.md §5): zod schemas for both the v0.x file (no `reward_basis`, so DB × COMMUNICATE) and the
 * v1.0 file, task splits, and the rendering of a user scenario as the user simulator's instructions (§8).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const REWARD_TYPES = ['DB', 'ENV_ASSERTION', 'NL_ASSERTION', 'ACTION', 'COMMUNICATE'] as const;
export type RewardType = (typeof REWARD_TYPES)[number];
export const DEFAULT_REWARD_BASIS: readonly RewardType[] = ['DB', 'COMMUNICATE'];

export const RequestorSchema = z.enum(['assistant', 'user']);

export const ActionSchema = z.object({
  action_id: z.string(),
  requestor: RequestorSchema.default('assistant'),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  info: z.string().nullable().default(null),
  /** null: compare every argument of the tool call; []: the name alone must match. */
  compare_args: z.array(z.string()).nullable().default(null),
});
export type Action = z.infer<typeof ActionSchema>;

export const StructuredUserInstructionsSchema = z.object({
  domain: z.string(),
  reason_for_call: z.string(),
  known_info: z.string().nullable().default(null),
  unknown_info: z.string().nullable().default(null),
  task_instructions: z.string(),
});
export type StructuredUserInstructions = z.infer<typeof StructuredUserInstructionsSchema>;

export const UserScenarioSchema = z.object({
  persona: z.string().nullable().default(null),
  instructions: z.union([z.string(), StructuredUserInstructionsSchema]),
});
export type UserScenario = z.infer<typeof UserScenarioSchema>;

export const EvaluationCriteriaSchema = z.object({
  actions: z.array(ActionSchema).nullable().default(null),
  env_assertions: z.array(z.unknown()).nullable().default(null),
  communicate_info: z.array(z.string()).nullable().default(null),
  nl_assertions: z.array(z.string()).nullable().default(null),
  reward_basis: z.array(z.enum(REWARD_TYPES)).default(() => [...DEFAULT_REWARD_BASIS]),
});
export type EvaluationCriteria = z.infer<typeof EvaluationCriteriaSchema>;

export const TaskIssueSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable().optional(),
  status: z.enum(['open', 'resolved', 'wont_fix']).default('open'),
  resolution: z.string().nullable().optional(),
  created_at: z.string().nullable().optional(),
  resolved_at: z.string().nullable().optional(),
  author_email: z.string().nullable().optional(),
  pr_link: z.string().nullable().optional(),
  simulation_file: z.string().nullable().optional(),
});

export const TaskSchema = z.object({
  id: z.string(),
  description: z
    .object({ purpose: z.string().nullable().default(null), relevant_policies: z.string().nullable().default(null), notes: z.string().nullable().default(null) })
    .nullable()
    .default(null),
  user_scenario: UserScenarioSchema,
  ticket: z.string().nullable().optional(),
  /** Always null in retail; other domains rebuild state from it, which this kit does not support yet. */
  initial_state: z.unknown().nullable().default(null),
  evaluation_criteria: EvaluationCriteriaSchema.nullable().default(null),
  issues: z.array(TaskIssueSchema).nullable().optional(),
});
export type Task = z.infer<typeof TaskSchema>;

export const SplitsSchema = z.record(z.string(), z.array(z.string()));
export type Splits = z.infer<typeof SplitsSchema>;

export const DEFAULT_SPLIT = 'base';

function formatZodError(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`Cannot read ${what} file ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} file ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

/** Parses a task list (the content of a `tasks.json`); the error names the first offending task and fields. */
export function parseTasks(data: unknown, source = 'tasks'): Task[] {
  if (!Array.isArray(data)) throw new Error(`${source}: expected a JSON array of tasks`);
  const tasks: Task[] = [];
  const seen = new Set<string>();
  data.forEach((raw, i) => {
    const parsed = TaskSchema.safeParse(raw);
    if (!parsed.success) {
      const id = typeof raw === 'object' && raw !== null && 'id' in raw ? ` (id ${JSON.stringify((raw as { id: unknown }).id)})` : '';
      throw new Error(`${source}: task #${i}${id} is invalid: ${formatZodError(parsed.error)}`);
    }
    if (seen.has(parsed.data.id)) throw new Error(`${source}: duplicate task id ${JSON.stringify(parsed.data.id)}`);
    seen.add(parsed.data.id);
    tasks.push(parsed.data);
  });
  return tasks;
}

export function loadTasks(file: string): Task[] {
  return parseTasks(readJson(file, 'Task'), file);
}

export function parseSplits(data: unknown, source = 'splits'): Splits {
  const parsed = SplitsSchema.safeParse(data);
  if (!parsed.success) throw new Error(`${source}: expected {"split name": [task ids]}: ${formatZodError(parsed.error)}`);
  return parsed.data;
}

export function loadSplits(file: string): Splits {
  return parseSplits(readJson(file, 'Split'), file);
}

/**
 * The tasks of one split, in task-file order. As τ²'s loader, this filters the task file by the split's ids, so a
 * smaller task file simply yields fewer tasks. Without a split file every task is in `base`. An unknown split name is
 * an error.
 */
export function selectSplit(tasks: readonly Task[], splits: Splits | null, split: string = DEFAULT_SPLIT): Task[] {
  if (splits === null) {
    if (split === DEFAULT_SPLIT) return [...tasks];
    throw new Error(`Unknown task split '${split}': there is no split file, so only '${DEFAULT_SPLIT}' (all tasks) exists`);
  }
  const ids = splits[split];
  if (!ids) throw new Error(`Unknown task split '${split}'. Valid splits: ${Object.keys(splits).join(', ')}`);
  const wanted = new Set(ids);
  return tasks.filter((t) => wanted.has(t.id));
}

export function getTask(tasks: readonly Task[], id: string): Task {
  const task = tasks.find((t) => t.id === id);
  if (!task) {
    const sample = tasks.slice(0, 5).map((t) => t.id).join(', ');
    throw new Error(`Unknown task id '${id}' (${tasks.length} tasks available, e.g. ${sample}${tasks.length > 5 ? ', …' : ''})`);
  }
  return task;
}

export function rewardBasisOf(task: Task): readonly RewardType[] {
  return task.evaluation_criteria?.reward_basis ?? DEFAULT_REWARD_BASIS;
}

/** Python's textwrap.indent with the default predicate: prefix every line that is not whitespace-only. */
export function indentText(text: string, prefix: string): string {
  return text
    .split(/(?<=\n)/)
    .map((line) => (line.trim() === '' ? line : prefix + line))
    .join('');
}

export function renderStructuredInstructions(ins: StructuredUserInstructions): string {
  const lines = [`Domain: ${ins.domain}`, `Reason for call:\n${indentText(ins.reason_for_call, '\t')}`];
  if (ins.known_info !== null) lines.push(`Known info:\n${indentText(ins.known_info, '\t')}`);
  if (ins.unknown_info !== null) lines.push(`Unknown info:\n${indentText(ins.unknown_info, '\t')}`);
  lines.push(`Task instructions:\n${indentText(ins.task_instructions, '\t')}`);
  return lines.join('\n');
}

/** The scenario text the user simulator receives inside `<scenario>…</scenario>` (τ²'s `str(UserScenario)`). */
export function renderUserScenario(scenario: UserScenario): string {
  const lines: string[] = [];
  if (scenario.persona !== null) lines.push('Persona:', indentText(scenario.persona, '\t'));
  const instructions = typeof scenario.instructions === 'string' ? scenario.instructions : renderStructuredInstructions(scenario.instructions);
  lines.push('Instructions:', indentText(instructions, '\t'));
  return lines.join('\n');
}
