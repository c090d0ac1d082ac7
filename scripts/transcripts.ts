/**
 * Episodes as Markdown, for reading and for results pages: the conversations a run recorded, from a GRPO
 * `episodes.jsonl` (rows with `kind`, `step`, `taskId`, `sample`, `messages`; only the first samples carry
 * messages) or a `longrun eval --out` folder's `trajectories.jsonl` (rows with `taskId`, `trial`, `messages`).
 * Tool results are cut to `--tool-chars` characters; the agent's text and tool calls are kept whole.
 *
 *   node --import tsx scripts/transcripts.ts FILE --task validation_23 [--task …] [--step 0 --step 4] [--kind val]
 *     [--tool-chars 120]
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';

interface Message { role: string; content?: unknown; toolCalls?: { name: string; arguments: unknown }[] | null; name?: string }
export interface EpisodeRow {
  kind?: string;
  step?: number;
  taskId: string;
  sample?: number;
  trial?: number;
  family?: string;
  reward: number;
  termination?: string;
  terminationReason?: string;
  messages?: Message[];
}

const text = (c: unknown): string => (typeof c === 'string' ? c : c == null ? '' : JSON.stringify(c));

/** One episode as Markdown: a heading with its reward and ending, then one line a message. */
export function episodeMarkdown(r: EpisodeRow, toolChars: number): string {
  const where = [r.kind, r.step !== undefined ? `step ${r.step}` : undefined, `sample ${r.sample ?? r.trial ?? 0}`].filter(Boolean).join(', ');
  const lines = [`#### ${r.taskId}${r.family ? ` (${r.family})` : ''}, ${where}: reward ${r.reward}, ended by ${r.termination ?? r.terminationReason ?? '?'}`, ''];
  for (const m of r.messages ?? []) {
    if (m.toolCalls?.length) {
      for (const call of m.toolCalls) lines.push(`- **agent** calls \`${call.name}(${JSON.stringify(call.arguments)})\``);
      const said = text(m.content).trim();
      if (said) lines.push(`- **agent**: ${said}`);
    } else if (m.role === 'tool') {
      const out = text(m.content);
      lines.push(`- *tool${m.name ? ` ${m.name}` : ''}*: \`${out.length > toolChars ? `${out.slice(0, toolChars)}…` : out}\``);
    } else {
      lines.push(`- **${m.role === 'assistant' ? 'agent' : m.role}**: ${text(m.content).trim()}`);
    }
  }
  return lines.join('\n') + '\n';
}

export function selectEpisodes(rows: EpisodeRow[], o: { tasks: string[]; steps: number[]; kind?: string }): EpisodeRow[] {
  return rows
    .filter((r) => r.messages?.length && o.tasks.includes(r.taskId) && (o.steps.length === 0 || o.steps.includes(r.step ?? -1)) && (!o.kind || r.kind === o.kind))
    .sort((a, b) => o.tasks.indexOf(a.taskId) - o.tasks.indexOf(b.taskId) || (a.step ?? 0) - (b.step ?? 0) || (a.sample ?? a.trial ?? 0) - (b.sample ?? b.trial ?? 0));
}

function main(): void {
  const collect = (v: string, prev: string[]) => [...prev, v];
  const program = new Command()
    .argument('<file>', 'episodes.jsonl of a GRPO run, or trajectories.jsonl of a longrun eval folder')
    .option('--task <id>', 'a task id to show (repeatable)', collect, [] as string[])
    .option('--step <n>', 'a training step to show (repeatable; default all)', collect, [] as string[])
    .option('--kind <kind>', 'only rows of this kind (val or train)')
    .option('--tool-chars <n>', 'characters kept of each tool result', '120')
    .parse();
  const o = program.opts<{ task: string[]; step: string[]; kind?: string; toolChars: string }>();
  if (o.task.length === 0) throw new Error('give at least one --task');
  const toolChars = Number(o.toolChars);
  if (!Number.isInteger(toolChars) || toolChars < 0) throw new Error(`--tool-chars must be a non-negative integer, got ${o.toolChars}`);
  const steps = o.step.map((s) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--step must be a non-negative integer, got ${s}`);
    return n;
  });
  const file = program.args[0];
  const rows = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l, i) => {
    try {
      return JSON.parse(l) as EpisodeRow;
    } catch {
      throw new Error(`${file}:${i + 1}: not a JSON line`);
    }
  });
  const picked = selectEpisodes(rows, { tasks: o.task, steps, kind: o.kind });
  if (picked.length === 0) throw new Error(`${file}: no recorded conversation of ${o.task.join(', ')}${steps.length ? ` at steps ${steps.join(', ')}` : ''}`);
  process.stdout.write(picked.map((r) => episodeMarkdown(r, toolChars)).join('\n'));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (e) {
    process.stderr.write(`transcripts: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
