/**
 * Reading versus enumeration on retail-synth episodes (issue 50, part 2). The scripted customer
 * (src/domains/retail/synth/user-sim.ts) answers every confirmation question (an agent message with the `(yes/no)`
 * marker): yes when the proposal is exactly its request, a change of mind when it is the first version of a request
 * it revises, and otherwise a refusal followed by its request again, as often as proposals come. So "propose, switch
 * if refused" can solve a task without reading the request, and the reward (the end state only, as in τ²) cannot tell.
 *
 * Counted per episode from the transcript, by the scripted replies that open the customer's answer to each proposal
 * (`YES_REPLIES`, `NO_REPLIES`, `CHANGE_OF_MIND` in src/domains/retail/synth/user-phrasing.ts): proposals made,
 * accepted, turned down, and changes of mind. An episode is a **first-proposal success** when it succeeds (reward 1)
 * and the customer turned down none of its proposals: every write it proposed was the request at the first try.
 * Beside mean@1 by family, that separates the agents that read the request from those that enumerate.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Message } from '../../tooluse/messages.ts';
import { isSuccess, meanStdErr } from '../../tooluse/metrics.ts';
import { CONFIRM_MARKER } from '../../domains/retail/synth/protocol.ts';
import { CHANGE_OF_MIND, NO_REPLIES, YES_REPLIES } from '../../domains/retail/synth/user-phrasing.ts';

export interface ProposalCounts {
  /** Agent messages with the confirmation marker. */
  proposals: number;
  accepted: number;
  /** Proposals the customer turned down (it then states its request again, or leaves if impatient). */
  turnedDown: number;
  /** Proposals of a request's first version that the customer then revised (not refusals). */
  changesOfMind: number;
  /** Proposals turned down before the first accepted one (all of them when none was accepted). */
  turnedDownBeforeAccepted: number;
}

type MessageLike = Pick<Message, 'role' | 'content'>;

const text = (m: MessageLike | undefined): string => (typeof m?.content === 'string' ? m.content : '');
const opensWith = (s: string, replies: readonly string[]) => replies.some((r) => s.startsWith(r));

/** The proposals of one episode's messages (agent view: the agent is `assistant`, the customer `user`) and their answers. */
export function proposalCounts(messages: readonly MessageLike[]): ProposalCounts {
  const c: ProposalCounts = { proposals: 0, accepted: 0, turnedDown: 0, changesOfMind: 0, turnedDownBeforeAccepted: 0 };
  for (let i = 0; i < messages.length; i++) {
    if (messages[i].role !== 'assistant' || !text(messages[i]).includes(CONFIRM_MARKER)) continue;
    c.proposals++;
    // The customer's answer: the next user message (tool results may not come between, but skip them anyway).
    let j = i + 1;
    while (j < messages.length && messages[j].role !== 'user' && messages[j].role !== 'assistant') j++;
    const answer = messages[j]?.role === 'user' ? text(messages[j]) : '';
    if (opensWith(answer, YES_REPLIES)) c.accepted++;
    else if (opensWith(answer, CHANGE_OF_MIND)) c.changesOfMind++;
    else if (opensWith(answer, NO_REPLIES)) {
      c.turnedDown++;
      if (c.accepted === 0) c.turnedDownBeforeAccepted++;
    }
  }
  return c;
}

/** Success (reward 1) with no proposal turned down. */
export function firstProposalSuccess(reward: number, counts: ProposalCounts): boolean {
  return isSuccess(reward) && counts.turnedDown === 0;
}

export interface ProposalEpisode {
  taskId: string;
  family: string;
  reward: number;
  messages: readonly MessageLike[];
}

export interface FamilyProposalRow {
  family: string;
  tasks: number;
  episodes: number;
  /** Mean reward (mean@1) and its standard error over tasks (each task's mean over its trials). */
  meanAt1: { mean: number; stdErr: number };
  /** Share of first-proposal successes, with its standard error over tasks. */
  firstProposalSuccess: { mean: number; stdErr: number };
  /** Per episode. */
  proposals: number;
  turnedDown: number;
  /** Share of episodes with at least one proposal turned down. */
  withTurnedDown: number;
}

function row(family: string, eps: readonly ProposalEpisode[]): FamilyProposalRow {
  const byTask = new Map<string, { reward: number[]; first: number[] }>();
  let proposals = 0, turnedDown = 0, withTurnedDown = 0;
  for (const e of eps) {
    const c = proposalCounts(e.messages);
    proposals += c.proposals;
    turnedDown += c.turnedDown;
    if (c.turnedDown > 0) withTurnedDown++;
    const t = byTask.get(e.taskId) ?? { reward: [], first: [] };
    t.reward.push(e.reward);
    t.first.push(firstProposalSuccess(e.reward, c) ? 1 : 0);
    byTask.set(e.taskId, t);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const tasks = [...byTask.values()];
  return {
    family,
    tasks: tasks.length,
    episodes: eps.length,
    meanAt1: meanStdErr(tasks.map((t) => mean(t.reward))),
    firstProposalSuccess: meanStdErr(tasks.map((t) => mean(t.first))),
    proposals: proposals / eps.length,
    turnedDown: turnedDown / eps.length,
    withTurnedDown: withTurnedDown / eps.length,
  };
}

/** One row a family (sorted by name) and a last row `all`; empty for no episodes. */
export function familyProposalTable(episodes: readonly ProposalEpisode[]): FamilyProposalRow[] {
  if (episodes.length === 0) return [];
  const families = [...new Set(episodes.map((e) => e.family))].sort();
  return [...families.map((f) => row(f, episodes.filter((e) => e.family === f))), row('all', episodes)];
}

/** The table as Markdown (± is the standard error over tasks). */
export function formatFamilyProposalTable(rows: readonly FamilyProposalRow[]): string {
  const pm = (x: { mean: number; stdErr: number }) => `${x.mean.toFixed(3)} ± ${x.stdErr.toFixed(3)}`;
  return [
    '| family | tasks | episodes | mean@1 | first-proposal success | proposals / episode | turned down / episode | episodes with one turned down |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.family} | ${r.tasks} | ${r.episodes} | ${pm(r.meanAt1)} | ${pm(r.firstProposalSuccess)} | ${r.proposals.toFixed(2)} | ${r.turnedDown.toFixed(2)} | ${r.withTurnedDown.toFixed(3)} |`),
  ].join('\n');
}

/**
 * The table of a `longrun eval --out` folder played with `--user scripted`: its finished episodes
 * (`trajectories.jsonl`) and the families of the tasks file its `config.json` names (each task's `longrun.family`).
 * Errors name the folder and the file or line that is missing or bad.
 */
export function evalFolderProposalTable(dir: string): FamilyProposalRow[] {
  for (const f of ['config.json', 'trajectories.jsonl']) if (!existsSync(join(dir, f))) throw new Error(`${dir} is not a \`longrun eval --out\` folder: it has no ${f}`);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { tasksFile?: unknown; user?: unknown };
  if (config.user !== undefined && config.user !== 'scripted') throw new Error(`${dir}: first-proposal success reads the scripted customer's replies; this eval used --user ${String(config.user)}`);
  const tasksFile = config.tasksFile;
  if (typeof tasksFile !== 'string' || !existsSync(tasksFile)) throw new Error(`${dir}/config.json names no readable tasks file (got ${String(tasksFile)})`);
  const tasks = JSON.parse(readFileSync(tasksFile, 'utf8')) as { id: string; longrun?: { family?: string } }[];
  const family = new Map(tasks.map((t) => [t.id, t.longrun?.family ?? 'task']));
  const episodes: ProposalEpisode[] = [];
  readFileSync(join(dir, 'trajectories.jsonl'), 'utf8').split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let r: { taskId?: unknown; status?: unknown; reward?: unknown; messages?: unknown };
    try {
      r = JSON.parse(line);
    } catch (e) {
      throw new Error(`${dir}/trajectories.jsonl line ${i + 1} is not JSON (${(e as Error).message})`, { cause: e });
    }
    if (r.status !== 'ok') return;
    if (typeof r.taskId !== 'string' || typeof r.reward !== 'number' || !Array.isArray(r.messages)) throw new Error(`${dir}/trajectories.jsonl line ${i + 1}: an episode needs taskId, reward and messages`);
    episodes.push({ taskId: r.taskId, family: family.get(r.taskId) ?? 'task', reward: r.reward, messages: r.messages as MessageLike[] });
  });
  return familyProposalTable(episodes);
}
