/**
 * Synthetic task sets on disk, in τ²'s data-folder layout so the retail loaders read them unchanged:
 *
 *   DIR/db.json           the generated world (τ² schema, Python json.dumps text)
 *   DIR/tasks.json        τ²-format tasks; each also carries its structured scenario in a `longrun` field
 *   DIR/split_tasks.json  {"base": [all ids], "<split>": [all ids]}
 *   DIR/policy.md         the retail policy the agent follows (copied from the τ² data)
 *   DIR/synth.json        how the set was made (seeds, sizes, families, difficulty, dropped drafts)
 *
 * A split set (`generateSplits`) is one such folder per split, each over its own world seed.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseTasks } from '../../../tooluse/tasks.ts';
import { createRetailDomain, type RetailDomain } from '../domain.ts';
import { loadRetailData, RetailDataError } from '../load.ts';
import type { RetailTables } from '../schema.ts';
import { SynthRng } from './rng.ts';
import type { SynthScenario, TaskFamily } from './scenario.ts';
import { TASK_FAMILIES } from './scenario.ts';
import { generateTasks, type SynthTask } from './task-gen.ts';
import { DEFAULT_WORLD_SIZES, generateWorld, type WorldSizes } from './world.ts';
import { worldToJson } from './world-json.ts';

export interface SynthTaskSetMeta {
  generator: 'longrun-synth-retail';
  version: 1;
  split: string;
  worldSeed: number;
  taskSeed: number;
  sizes: WorldSizes;
  count: number;
  families: TaskFamily[];
  difficulty: [number, number];
  dropped: number;
  droppedReasons: Record<string, number>;
}

export interface SynthTaskSet {
  world: RetailTables;
  tasks: SynthTask[];
  meta: SynthTaskSetMeta;
}

export interface TaskSetSpec {
  worldSeed: number;
  taskSeed: number;
  count: number;
  sizes?: WorldSizes;
  families?: readonly TaskFamily[];
  difficulty?: number | readonly [number, number];
  split?: string;
}

export function generateTaskSet(spec: TaskSetSpec): SynthTaskSet {
  const sizes = spec.sizes ?? DEFAULT_WORLD_SIZES;
  const families = [...(spec.families ?? TASK_FAMILIES)];
  const d = spec.difficulty ?? [1, 3];
  const difficulty: [number, number] = typeof d === 'number' ? [d, d] : [d[0], d[1]];
  const split = spec.split ?? 'train';
  const world = generateWorld(spec.worldSeed, sizes);
  const gen = generateTasks(world, spec.taskSeed, { count: spec.count, families, difficulty, worldSeed: spec.worldSeed, idPrefix: `${split}_` });
  return {
    world,
    tasks: gen.tasks,
    meta: { generator: 'longrun-synth-retail', version: 1, split, worldSeed: spec.worldSeed, taskSeed: spec.taskSeed, sizes, count: spec.count, families, difficulty, dropped: gen.dropped, droppedReasons: gen.droppedReasons },
  };
}

export const SPLIT_NAMES = ['train', 'validation', 'test'] as const;
export type SplitName = (typeof SPLIT_NAMES)[number];

/** Train/validation/test task sets, each over its own world: the three world seeds are distinct by construction. */
export function generateSplits(seed: number, counts: Record<SplitName, number>, options: Omit<TaskSetSpec, 'worldSeed' | 'taskSeed' | 'count' | 'split'> = {}): Record<SplitName, SynthTaskSet> {
  const rng = new SynthRng(seed);
  const base = rng.int(0, 2 ** 30);
  const out = {} as Record<SplitName, SynthTaskSet>;
  SPLIT_NAMES.forEach((split, i) => {
    out[split] = generateTaskSet({ ...options, split, worldSeed: base + i, taskSeed: rng.nextU32(), count: counts[split] });
  });
  assertDisjointWorlds(Object.values(out).map((s) => s.meta));
  return out;
}

export function assertDisjointWorlds(metas: readonly SynthTaskSetMeta[]): void {
  const seen = new Map<number, string>();
  for (const m of metas) {
    const other = seen.get(m.worldSeed);
    if (other !== undefined) throw new Error(`Splits '${other}' and '${m.split}' share world seed ${m.worldSeed}`);
    seen.set(m.worldSeed, m.split);
  }
}

export function writeTaskSet(dir: string, set: SynthTaskSet, policy: string): void {
  mkdirSync(dir, { recursive: true });
  const ids = set.tasks.map((t) => t.id);
  writeFileSync(join(dir, 'db.json'), worldToJson(set.world));
  writeFileSync(join(dir, 'tasks.json'), JSON.stringify(set.tasks, null, 2) + '\n');
  writeFileSync(join(dir, 'split_tasks.json'), JSON.stringify({ base: ids, [set.meta.split]: ids }, null, 2) + '\n');
  writeFileSync(join(dir, 'policy.md'), policy);
  writeFileSync(join(dir, 'synth.json'), JSON.stringify(set.meta, null, 2) + '\n');
}

export interface LoadedSynthTaskSet {
  dir: string;
  domain: RetailDomain;
  world: RetailTables;
  tasks: SynthTask[];
  scenarios: Map<string, SynthScenario>;
  meta: SynthTaskSetMeta | null;
}

function isScenario(v: unknown): v is SynthScenario {
  if (typeof v !== 'object' || v === null) return false;
  const s = v as Partial<SynthScenario>;
  return s.version === 1 && typeof s.family === 'string' && Array.isArray(s.requests) && typeof s.identity === 'object' && s.identity !== null;
}

/** Reads a task-set folder (the τ² loader validates the DB); every task must carry a synthetic scenario. */
export function readTaskSet(dir: string): LoadedSynthTaskSet {
  const data = loadRetailData(dir);
  const parsed = parseTasks(data.tasks, join(dir, 'tasks.json'));
  const raw = data.tasks as { id?: unknown; longrun?: unknown }[];
  const scenarios = new Map<string, SynthScenario>();
  const tasks = parsed.map((t, i) => {
    const s = raw[i]?.longrun;
    if (!isScenario(s)) throw new RetailDataError(`${join(dir, 'tasks.json')}: task ${t.id} has no valid 'longrun' scenario; is this a synthetic task set?`);
    scenarios.set(t.id, s);
    return { ...t, longrun: s };
  });
  let meta: SynthTaskSetMeta | null;
  try {
    meta = JSON.parse(readFileSync(join(dir, 'synth.json'), 'utf8')) as SynthTaskSetMeta;
  } catch {
    meta = null; // synth.json is informational; a folder without it still plays
  }
  return { dir, domain: createRetailDomain({ db: data.db, policy: data.policy }), world: data.db, tasks, scenarios, meta };
}
