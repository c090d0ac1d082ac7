/**
 * mcp-memory: an agent that keeps a knowledge graph, whose tools are a real MCP server —
 * `@modelcontextprotocol/server-memory` (https://github.com/modelcontextprotocol/servers/tree/main/src/memory),
 * started fresh for every episode with its memory file in the episode's own temp folder.
 *
 * A task is one request such as "Record that Alice works at Acme and knows Bob." Some tasks start from a graph that
 * already holds facts ("Ben moved from Globex to Initech: update the memory."). The reward reads the final graph
 * through the server itself (`read_graph`, on the MCP client the env hands the reward as `episode.sources.memory`)
 * and compares what the episode changed with what the task asks to change, fact by fact (an entity with its type, an
 * observation, a relation; added or removed): the F1 of the two sets of changes, so 0 for an agent that changes
 * nothing, 1 exactly when the final graph is the expected one, and in between for a change missing or one too many.
 * The demonstrator plays the gold tool calls (SFT data).
 *
 * Load it with `longrun rollout --env ./env.ts`, or from a run file: `env: { module: ./env.ts }`.
 * Outside this repository, install the server next to longrun: `npm install @modelcontextprotocol/server-memory`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineEnv, EpisodeError, mcpServer, type DemoTurn, type OpenMcpServer, type Task } from 'longrun';

// ---- tasks -------------------------------------------------------------------------------------------------------

const PEOPLE = ['Alice', 'Ben', 'Carla', 'Dev', 'Elena', 'Femi', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kemal', 'Lena', 'Mateo', 'Nora', 'Omar', 'Priya', 'Quinn', 'Rosa', 'Sami', 'Tara'];
const ORGS = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Stark', 'Wayne', 'Tyrell', 'Cyberdyne', 'Soylent'];
const CITIES = ['Paris', 'Lagos', 'Tokyo', 'Lima', 'Oslo', 'Cairo', 'Perth', 'Quito', 'Seoul', 'Turin'];
const HOBBIES = ['plays chess', 'runs marathons', 'paints', 'keeps bees', 'sings in a choir', 'climbs', 'writes poetry', 'bakes bread'];

export interface Entity { name: string; entityType: string; observations: string[] }
export interface Relation { from: string; to: string; relationType: string }
export interface Graph { entities: Entity[]; relations: Relation[] }

type Family = 'works_at' | 'works_at_knows' | 'lives_in' | 'moved';

export interface MemoryTask extends Task {
  family: Family;
  prompt: string;
  /** The graph the episode starts from (written to the server's memory file before it starts). */
  initial: Graph;
  /** The graph a perfect agent leaves. */
  expected: Graph;
  /** The gold turns: each a list of tool calls. */
  gold: { name: string; arguments: Record<string, unknown> }[][];
}

/** mulberry32: a small seeded generator, so a split always holds the same tasks. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <X>(r: () => number, xs: readonly X[]): X => xs[Math.floor(r() * xs.length)]!;
function two<X>(r: () => number, xs: readonly X[]): [X, X] {
  const a = pick(r, xs);
  let b = pick(r, xs);
  while (b === a) b = pick(r, xs);
  return [a, b];
}

const person = (name: string, observations: string[] = []): Entity => ({ name, entityType: 'person', observations });
const org = (name: string): Entity => ({ name, entityType: 'organization', observations: [] });
const city = (name: string): Entity => ({ name, entityType: 'city', observations: [] });
const rel = (from: string, relationType: string, to: string): Relation => ({ from, to, relationType });
const EMPTY: Graph = { entities: [], relations: [] };

function makeTask(split: string, i: number, r: () => number): MemoryTask {
  const id = `${split}-${String(i).padStart(3, '0')}`;
  const family = pick(r, ['works_at', 'works_at_knows', 'lives_in', 'moved'] as const);
  const [a, b] = two(r, PEOPLE);
  const [o1, o2] = two(r, ORGS);
  if (family === 'works_at') {
    const entities = [person(a), org(o1)];
    const relations = [rel(a, 'works_at', o1)];
    return { id, family, prompt: `Record that ${a} works at ${o1}.`, initial: EMPTY, expected: { entities, relations }, gold: [[{ name: 'create_entities', arguments: { entities } }], [{ name: 'create_relations', arguments: { relations } }]] };
  }
  if (family === 'works_at_knows') {
    const entities = [person(a), org(o1), person(b)];
    const relations = [rel(a, 'works_at', o1), rel(a, 'knows', b)];
    return { id, family, prompt: `Record that ${a} works at ${o1} and knows ${b}.`, initial: EMPTY, expected: { entities, relations }, gold: [[{ name: 'create_entities', arguments: { entities } }], [{ name: 'create_relations', arguments: { relations } }]] };
  }
  if (family === 'lives_in') {
    const hobby = pick(r, HOBBIES);
    const c = pick(r, CITIES);
    const entities = [person(a, [hobby]), city(c)];
    const relations = [rel(a, 'lives_in', c)];
    return { id, family, prompt: `Record that ${a} lives in ${c} and ${hobby}.`, initial: EMPTY, expected: { entities, relations }, gold: [[{ name: 'create_entities', arguments: { entities } }], [{ name: 'create_relations', arguments: { relations } }]] };
  }
  // moved: the graph already knows where the person works (and one more fact that must stay).
  const c = pick(r, CITIES);
  const initial: Graph = { entities: [person(a), org(o1), city(c)], relations: [rel(a, 'works_at', o1), rel(a, 'lives_in', c)] };
  const expected: Graph = { entities: [...initial.entities, org(o2)], relations: [rel(a, 'lives_in', c), rel(a, 'works_at', o2)] };
  return {
    id, family, prompt: `${a} moved from ${o1} to ${o2}: update the memory.`, initial, expected,
    gold: [[{ name: 'delete_relations', arguments: { relations: [rel(a, 'works_at', o1)] } }], [{ name: 'create_entities', arguments: { entities: [org(o2)] } }], [{ name: 'create_relations', arguments: { relations: [rel(a, 'works_at', o2)] } }]],
  };
}

const SPLITS: Record<string, { seed: number; size: number }> = { train: { seed: 101, size: 200 }, val: { seed: 202, size: 32 }, test: { seed: 303, size: 32 } };

/** The split's tasks, made by a seeded generator (the same tasks on every machine). */
export function memoryTasks(split: string): MemoryTask[] {
  const s = SPLITS[split];
  if (!s) throw new Error(`no split ${JSON.stringify(split)} (the splits are ${Object.keys(SPLITS).join(', ')})`);
  const r = rng(s.seed);
  return Array.from({ length: s.size }, (_, i) => makeTask(split, i, r));
}

// ---- the reward --------------------------------------------------------------------------------------------------

/** A graph as a set of facts: `entity name:type`, `observation name:text`, `relation from -type-> to`. */
export function facts(g: Graph): Set<string> {
  const out = new Set<string>();
  for (const e of g.entities) {
    out.add(`entity ${e.name}:${e.entityType}`);
    for (const o of e.observations) out.add(`observation ${e.name}:${o}`);
  }
  for (const x of g.relations) out.add(`relation ${x.from} -${x.relationType}-> ${x.to}`);
  return out;
}

/** What an episode changed: the facts it added (`+ fact`) and removed (`- fact`), from `before` to `after`. */
function changes(before: Set<string>, after: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const f of after) if (!before.has(f)) out.add(`+ ${f}`);
  for (const f of before) if (!after.has(f)) out.add(`- ${f}`);
  return out;
}

/**
 * The F1 of the changes the episode made to the graph (facts added and removed) against the changes the task asks
 * for, so leaving the starting graph alone scores 0 and the reward is 1 exactly when the final graph is the expected
 * one. `info` lists the changes missing and the ones made in excess.
 */
export function graphScore(final: Graph, expected: Graph, initial: Graph): { reward: number; info: { missing: string[]; extra: string[] } } {
  const start = facts(initial);
  const got = changes(start, facts(final));
  const want = changes(start, facts(expected));
  const missing = [...want].filter((f) => !got.has(f));
  const extra = [...got].filter((f) => !want.has(f));
  const hit = want.size - missing.length;
  const reward = want.size + got.size === 0 ? 1 : (2 * hit) / (want.size + got.size);
  return { reward, info: { missing, extra } };
}

/** The graph as the server holds it, read through the episode's MCP client. */
async function readGraph(client: OpenMcpServer['handle']): Promise<Graph> {
  const result = await client.callTool({ name: 'read_graph', arguments: {} });
  const graph = result.structuredContent as Graph | undefined;
  if (result.isError || !graph || !Array.isArray(graph.entities) || !Array.isArray(graph.relations)) {
    throw new EpisodeError(`read_graph did not return a graph: ${JSON.stringify(result).slice(0, 300)}`);
  }
  return graph;
}

// ---- the env -----------------------------------------------------------------------------------------------------

const require = createRequire(import.meta.url);
const SERVER = require.resolve('@modelcontextprotocol/server-memory/dist/index.js');

interface EpisodeFiles { dir: string }

/** The server-memory line format (JSONL: one entity or relation a line). */
function memoryFile(g: Graph): string {
  return [...g.entities.map((e) => JSON.stringify({ type: 'entity', ...e })), ...g.relations.map((x) => JSON.stringify({ type: 'relation', ...x }))].join('\n');
}

export const memory = mcpServer(
  {
    name: 'memory',
    command: process.execPath,
    args: [SERVER],
    env: ({ state }) => ({ MEMORY_FILE_PATH: join((state as EpisodeFiles).dir, 'memory.jsonl') }),
  },
  // The four tools the tasks need (the server has nine; fewer tools, a shorter prompt).
  { include: ['read_graph', 'create_entities', 'create_relations', 'delete_relations'], timeoutMs: 10_000 },
);

export default defineEnv<EpisodeFiles, MemoryTask>({
  id: 'examples/mcp-memory-v0',
  instructions: [
    'You keep a knowledge graph with the memory tools. Record exactly what the request says, nothing more.',
    'Entity types: person, organization, city. Relation types, from the person: works_at, knows, lives_in.',
    'Something a person does is an observation of that person, in the request\'s words (e.g. "plays chess").',
    'When someone moves to another employer, delete the old works_at relation and add the new one.',
    'When the graph is up to date, say so in one sentence.',
  ].join('\n'),
  sources: [memory],
  state: (task) => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-mcp-memory-'));
    if (task.initial.entities.length > 0) writeFileSync(join(dir, 'memory.jsonl'), memoryFile(task.initial));
    return { dir };
  },
  disposeState: ({ dir }) => rmSync(dir, { recursive: true, force: true }),
  tasks: memoryTasks,
  family: (task) => task.family,
  maxTurns: 6,
  reward: async (ep) => graphScore(await readGraph(ep.sources.memory as OpenMcpServer['handle']), ep.task.expected, ep.task.initial),
  demonstrator: (task): DemoTurn[] => [...task.gold.map((calls) => ({ toolCalls: calls })), { content: 'The memory is up to date.' }],
});
