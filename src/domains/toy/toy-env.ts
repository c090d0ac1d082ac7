/**
 * The toy tool-use task for CI-sized GRPO runs: the user names a task cue (`cue_k`); the agent must call the right
 * tool with the right argument (task k wants `solution(k)`), read the
 * tool's answer, then end with a plain message. Reward 1 iff every tool call was correct, at least one was made,
 * and the agent then finished with text; otherwise 0. Same action/observation shape as `ToolUseEnv`, so the agent
 * loop (src/rollout/agent-loop.ts, `AgentEnv`) plays it as it plays retail. The policies, chat format and wiring that
 * train on it are in src/recipes/toy/.
 */
import type { Info, ResetOptions } from '../../gym/types.ts';
import type { RewardInfo } from '../../tooluse/evaluator.ts';
import type { AgentTurn } from '../../tooluse/orchestrator.ts';
import type { Message } from '../../tooluse/messages.ts';
import type { ToolSchema } from '../../tooluse/types.ts';
import { XoshiroRng } from '../../gym/rng.ts';

export const TOY_TOOLS = ['tool_a', 'tool_b', 'tool_c'] as const;
export const TOY_ARGS = 3;
export const TOY_TASKS = 4;

export function toyWords(): string[] {
  return [
    'call', ...TOY_TOOLS, ...Array.from({ length: TOY_ARGS }, (_, i) => `arg_${i}`),
    ...Array.from({ length: TOY_TASKS }, (_, k) => `cue_${k}`),
    'please', 'ok', 'wrong', 'error', 'done', 'hello', 'solve', 'tools:',
  ];
}

export function solution(task: number): { tool: string; x: number } {
  // Distinct answers for the 4 tasks, so no single cue-independent answer solves more than one task.
  return { tool: TOY_TOOLS[task % TOY_TOOLS.length], x: (task + Math.floor(task / TOY_TOOLS.length)) % TOY_ARGS };
}

const schema = (name: string): ToolSchema => ({
  type: 'function',
  function: { name, description: `toy tool ${name}`, parameters: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } },
});

export class ToyToolEnv {
  readonly tools: ToolSchema[] = TOY_TOOLS.map(schema);
  private task = -1;
  private calls = 0;
  private wrong = 0;
  private steps = 0;
  private rng = new XoshiroRng(0);

  constructor(private readonly options: { tasks?: readonly number[]; maxSteps?: number } = {}) {}

  private info(extra: Info = {}): Info {
    return { taskId: `toy-${this.task}`, tools: this.tools, systemPrompt: 'solve', ...extra };
  }

  async reset(options: ResetOptions = {}): Promise<[{ messages: Message[] }, Info]> {
    if (options.seed !== undefined && options.seed !== null) this.rng = new XoshiroRng(options.seed);
    const tasks = this.options.tasks ?? Array.from({ length: TOY_TASKS }, (_, k) => k);
    const id = options.options?.taskId;
    if (id !== undefined) {
      const m = typeof id === 'string' ? /^toy-(\d+)$/.exec(id) : null;
      if (!m || Number(m[1]) >= TOY_TASKS) throw new Error(`toy env: unknown task id ${String(id)} (use toy-0 … toy-${TOY_TASKS - 1})`);
      this.task = Number(m[1]);
    } else this.task = tasks[this.rng.integers(tasks.length)];
    this.calls = 0;
    this.wrong = 0;
    this.steps = 0;
    return [{ messages: [{ role: 'user', content: `please cue_${this.task}`, toolCalls: null }] }, this.info()];
  }

  async step(action: AgentTurn): Promise<[{ messages: Message[] }, number, boolean, boolean, Info]> {
    if (this.task < 0) throw new Error('toy env: call reset() before step()');
    this.steps++;
    const want = solution(this.task);
    const messages: Message[] = [];
    if (action.toolCalls && action.toolCalls.length > 0) {
      for (const c of action.toolCalls) {
        this.calls++;
        const known = (TOY_TOOLS as readonly string[]).includes(c.name);
        const args = c.arguments as { x?: unknown };
        const right = c.name === want.tool && args?.x === want.x;
        if (!right) this.wrong++;
        messages.push({ role: 'tool', id: c.id ?? `call_${this.calls}`, content: known ? (right ? 'ok' : 'wrong') : 'error', requestor: 'assistant', error: !known });
      }
      const truncated = this.steps >= (this.options.maxSteps ?? 4);
      return [{ messages }, 0, false, truncated, this.info()];
    }
    const reward = this.calls > 0 && this.wrong === 0 ? 1 : 0;
    // τ²'s shape, as the tool-use envs report it: the toy task has no DB, gold actions or assertions to check.
    const rewardInfo: RewardInfo = {
      reward, rewardBasis: null, rewardBreakdown: {}, dbCheck: null, actionChecks: null, communicateChecks: null, nlAssertions: null,
      info: { calls: this.calls, wrong: this.wrong },
    };
    return [{ messages: [] }, reward, true, false, this.info({ rewardInfo })];
  }
}
