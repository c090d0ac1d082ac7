/**
 * Synthetic retail benchmark: how fast worlds and verified tasks are generated, how fast the expert plays them
 * against the scripted user (episode + evaluation), its success rate, and how long the episodes are (turns, and
 * o200k_harmony tokens of the rendered conversation) per difficulty. A random agent gives the floor.
 *
 * `npm run bench:synthetic [-- --count N]` (default 1000 tasks, difficulty 1–5, over one default-size world) writes
 * bench/results/synthetic.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { o200kHarmony } from '../src/llm/o200k.ts';
import { messagesToText } from '../src/tooluse/messages.ts';
import { isSuccess } from '../src/tooluse/metrics.ts';
import { createRetailDomain } from '../src/domains/retail/domain.ts';
import { ExpertAgent } from '../src/domains/retail/synth/expert.ts';
import { RandomAgent } from '../src/domains/retail/synth/random-agent.ts';
import { runRollouts } from '../src/domains/retail/synth/rollouts.ts';
import { generateTasks } from '../src/domains/retail/synth/task-gen.ts';
import { ScriptedRetailUser } from '../src/domains/retail/synth/user-sim.ts';
import { generateWorld } from '../src/domains/retail/synth/world.ts';

const argCount = process.argv.indexOf('--count');
const COUNT = argCount > 0 ? Number(process.argv[argCount + 1]) : 1000;
if (!Number.isInteger(COUNT) || COUNT < 11) throw new Error('--count must be an integer >= 11');
const WORLD_SEED = 1;
const TASK_SEED = 2;

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

let t0 = process.hrtime.bigint();
const world = generateWorld(WORLD_SEED);
const worldMs = ms(t0);

t0 = process.hrtime.bigint();
const gen = generateTasks(world, TASK_SEED, { count: COUNT, difficulty: [1, 5] });
const taskMs = ms(t0);

const domain = createRetailDomain({ db: world, policy: 'policy' });
const tokenizer = o200kHarmony();
interface Level {
  episodes: number;
  successes: number;
  agentTurns: number;
  userTurns: number;
  toolCalls: number;
  tokens: number;
}
const levels = new Map<number, Level>();
const episodes: { messages: Parameters<typeof messagesToText>[0]; difficulty: number; success: boolean }[] = [];
t0 = process.hrtime.bigint();
const expert = await runRollouts({
  domain,
  tasks: gen.tasks,
  agent: new ExpertAgent(),
  user: new ScriptedRetailUser(),
  seed: 1,
  onEpisode: (t, task) => episodes.push({ messages: t.messages, difficulty: task.longrun.difficulty, success: isSuccess(t.reward) }),
});
const expertMs = ms(t0);

// Token counting is done after the timed loop so it does not count against the episode rate.
for (const e of episodes) {
  const l = levels.get(e.difficulty) ?? { episodes: 0, successes: 0, agentTurns: 0, userTurns: 0, toolCalls: 0, tokens: 0 };
  l.episodes++;
  if (e.success) l.successes++;
  for (const m of e.messages) {
    if (m.role === 'assistant') l.agentTurns++;
    if (m.role === 'user') l.userTurns++;
    if (m.role === 'tool') l.toolCalls++;
  }
  l.tokens += tokenizer.encode(messagesToText(e.messages)).length;
  levels.set(e.difficulty, l);
}

t0 = process.hrtime.bigint();
const random = await runRollouts({ domain, tasks: gen.tasks.slice(0, Math.min(330, COUNT)), agent: new RandomAgent(), user: new ScriptedRetailUser(), seed: 1 });
const randomMs = ms(t0);

const byDifficulty = [...levels.entries()]
  .sort((a, b) => a[0] - b[0])
  .map(([difficulty, l]) => ({
    difficulty,
    episodes: l.episodes,
    successRate: l.successes / l.episodes,
    agentTurns: l.agentTurns / l.episodes,
    userTurns: l.userTurns / l.episodes,
    toolCalls: l.toolCalls / l.episodes,
    tokens: l.tokens / l.episodes,
  }));

const result = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: `${cpus()[0]?.model ?? 'unknown'} (${cpus().length} cores)`,
  command: `npm run bench:synthetic${COUNT !== 1000 ? ` -- --count ${COUNT}` : ''}`,
  worldSeed: WORLD_SEED,
  taskSeed: TASK_SEED,
  worldGenerationMs: worldMs,
  tasks: gen.tasks.length,
  droppedDrafts: gen.dropped,
  droppedReasons: gen.droppedReasons,
  tasksPerSecond: gen.tasks.length / (taskMs / 1000),
  expert: {
    episodes: expert.episodes,
    episodesPerSecond: expert.episodes / (expertMs / 1000),
    successRate: expert.metrics.successRate,
    meanReward: expert.metrics.avgReward,
    meanSteps: expert.meanSteps,
    byFamily: expert.byFamily,
  },
  random: { episodes: random.episodes, episodesPerSecond: random.episodes / (randomMs / 1000), meanReward: random.metrics.avgReward, byFamily: random.byFamily },
  byDifficulty,
  tokenCount: 'o200k_harmony tokens of the conversation rendered as `role: content` lines (messagesToText), tool calls in functional form',
};

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const md = [
  '# Synthetic retail benchmark (generated worlds and tasks, expert vs scripted user)',
  '',
  `${result.date}, Node ${result.node}, ${result.cpu}, one process. Command: \`${result.command}\`.`,
  '',
  '| measure | value |',
  '| --- | --- |',
  `| world generation (50 products, 500 users, 1,000 orders) | ${worldMs.toFixed(0)} ms |`,
  `| verified tasks generated per second | ${result.tasksPerSecond.toFixed(0)} (${gen.tasks.length} tasks, ${gen.dropped} drafts dropped) |`,
  `| expert episodes per second (scripted user + evaluation) | ${result.expert.episodesPerSecond.toFixed(0)} |`,
  `| expert success (reward 1) | ${pct(result.expert.successRate)} of ${expert.episodes} |`,
  `| random agent mean reward | ${result.random.meanReward.toFixed(3)} over ${random.episodes} episodes |`,
  '',
  '## Episode length by difficulty (expert)',
  '',
  '| difficulty | episodes | success | agent turns | user turns | tool calls | tokens (o200k_harmony) |',
  '| --- | --- | --- | --- | --- | --- | --- |',
  ...byDifficulty.map((d) => `| ${d.difficulty} | ${d.episodes} | ${pct(d.successRate)} | ${d.agentTurns.toFixed(1)} | ${d.userTurns.toFixed(1)} | ${d.toolCalls.toFixed(1)} | ${d.tokens.toFixed(0)} |`),
  '',
  'Agent turns count every assistant message (greeting and tool-call messages included); tokens are counted over the',
  'conversation rendered as `role: content` lines, without a chat template or system prompt.',
  '',
  '## Expert success by family',
  '',
  '| family | episodes | success | random agent success |',
  '| --- | --- | --- | --- |',
  ...Object.entries(result.expert.byFamily).map(([f, v]) => `| ${f} | ${v.episodes} | ${pct(v.successRate)} | ${result.random.byFamily[f] ? pct(result.random.byFamily[f].successRate) : '–'} |`),
  '',
].join('\n');

const outDir = join(dirname(fileURLToPath(import.meta.url)), 'results');
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'synthetic.json'), JSON.stringify(result, null, 2) + '\n');
writeFileSync(join(outDir, 'synthetic.md'), md);
console.log(md);
