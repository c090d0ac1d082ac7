/**
 * `longrun gen`: synthetic retail worlds and tasks.
 *   longrun gen tasks  --seed S --count N --out DIR   one task set (τ² folder layout, see synth/taskset.ts)
 *   longrun gen splits --seed S --train N --validation N --test N --out DIR   DIR/{train,validation,test}, one world each
 *   longrun gen world  --seed S --out FILE            a world DB alone (db.json format)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { resolveRetailDataDir } from '../domains/retail/register.ts';
import { TASK_FAMILIES, type TaskFamily } from '../domains/retail/synth/scenario.ts';
import { generateSplits, generateTaskSet, SPLIT_NAMES, writeTaskSet, type SynthTaskSet } from '../domains/retail/synth/taskset.ts';
import { DEFAULT_WORLD_SIZES, generateWorld, type WorldSizes } from '../domains/retail/synth/world.ts';
import { worldToJson } from '../domains/retail/synth/world-json.ts';
import { outFile } from './out-file.ts';

function int(name: string, min = 0) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got '${v}'`);
    return n;
  };
}

export function parseFamilies(v: string): TaskFamily[] {
  const list = v.split(',').map((s) => s.trim()).filter(Boolean);
  for (const f of list) if (!(TASK_FAMILIES as readonly string[]).includes(f)) throw new Error(`Unknown task family '${f}' (known: ${TASK_FAMILIES.join(', ')})`);
  return list as TaskFamily[];
}

/** `2` or `1-3`. */
export function parseDifficulty(v: string): [number, number] {
  const m = /^([1-5])(?:-([1-5]))?$/.exec(v.trim());
  if (!m) throw new Error(`--difficulty must be a level 1-5 or a range like 1-3, got '${v}'`);
  const lo = Number(m[1]);
  const hi = m[2] ? Number(m[2]) : lo;
  if (lo > hi) throw new Error(`--difficulty range is empty: '${v}'`);
  return [lo, hi];
}

interface CommonOpts {
  seed: number;
  out: string;
  products?: number;
  users?: number;
  orders?: number;
  families?: TaskFamily[];
  difficulty?: [number, number];
  policy?: string;
}

function sizesOf(o: CommonOpts): WorldSizes {
  return { products: o.products ?? DEFAULT_WORLD_SIZES.products, users: o.users ?? DEFAULT_WORLD_SIZES.users, orders: o.orders ?? DEFAULT_WORLD_SIZES.orders };
}

function readPolicy(path: string | undefined): string {
  const file = path ?? join(resolveRetailDataDir(), 'policy.md');
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`Cannot read the retail policy ${file} (${(err as Error).message}); pass --policy FILE`, { cause: err });
  }
}

function describe(dir: string, set: SynthTaskSet): string {
  const m = set.meta;
  return `${dir}: ${set.tasks.length} ${m.split} tasks over world seed ${m.worldSeed} (${set.world.users.size} users, ${set.world.orders.size} orders), ${m.dropped} drafts dropped`;
}

function withWorldOptions(cmd: Command): Command {
  return cmd
    .option('--products <n>', `products in the world (default ${DEFAULT_WORLD_SIZES.products})`, int('products', 1))
    .option('--users <n>', `users in the world (default ${DEFAULT_WORLD_SIZES.users})`, int('users', 1))
    .option('--orders <n>', `orders in the world (default ${DEFAULT_WORLD_SIZES.orders})`, int('orders'));
}

function withTaskOptions(cmd: Command): Command {
  return withWorldOptions(cmd)
    .option('--families <list>', `comma-separated task families (default all: ${TASK_FAMILIES.join(',')})`, parseFamilies)
    .option('--difficulty <d>', 'difficulty level 1-5 or a range such as 2-4 (default 1-3; 4-5 are long multi-request conversations)', parseDifficulty)
    .option('--policy <file>', 'policy text to ship with the tasks (default: policy.md of the τ² retail data)');
}

export function register(program: Command): void {
  const gen = program.command('gen').description('generate synthetic retail worlds and tasks');

  withTaskOptions(
    gen
      .command('tasks')
      .description('generate one verified task set as a τ²-style data folder (db.json, tasks.json, split_tasks.json, policy.md, synth.json)')
      .requiredOption('--seed <n>', 'task seed', int('seed'))
      .requiredOption('--count <n>', 'number of tasks', int('count', 1))
      .requiredOption('--out <dir>', 'output folder')
      .option('--world-seed <n>', 'world seed (default: the task seed)', int('world-seed'))
      .option('--split <name>', 'split name recorded in split_tasks.json', 'train'),
  ).action((o: CommonOpts & { count: number; worldSeed?: number; split: string }) => {
    const set = generateTaskSet({ worldSeed: o.worldSeed ?? o.seed, taskSeed: o.seed, count: o.count, sizes: sizesOf(o), families: o.families, difficulty: o.difficulty, split: o.split });
    writeTaskSet(o.out, set, readPolicy(o.policy));
    console.log(describe(o.out, set));
  });

  withTaskOptions(
    gen
      .command('splits')
      .description('generate train/validation/test task sets, each over its own world seed, into OUT/<split>/')
      .requiredOption('--seed <n>', 'root seed', int('seed'))
      .requiredOption('--out <dir>', 'output folder')
      .option('--train <n>', 'train tasks', int('train', 1), 1000)
      .option('--validation <n>', 'validation tasks', int('validation', 1), 100)
      .option('--test <n>', 'test tasks', int('test', 1), 100),
  ).action((o: CommonOpts & { train: number; validation: number; test: number }) => {
    const policy = readPolicy(o.policy);
    const sets = generateSplits(o.seed, { train: o.train, validation: o.validation, test: o.test }, { sizes: sizesOf(o), families: o.families, difficulty: o.difficulty });
    for (const split of SPLIT_NAMES) {
      const dir = join(o.out, split);
      writeTaskSet(dir, sets[split], policy);
      console.log(describe(dir, sets[split]));
    }
  });

  withWorldOptions(
    gen
      .command('world')
      .description('generate a world DB alone, in db.json format')
      .requiredOption('--seed <n>', 'world seed', int('seed'))
      .requiredOption('--out <file>', 'output file'),
  ).action((o: CommonOpts) => {
    const world = generateWorld(o.seed, sizesOf(o));
    writeFileSync(outFile(o.out), worldToJson(world));
    console.log(`${o.out}: ${world.products.size} products, ${world.users.size} users, ${world.orders.size} orders`);
  });
}
