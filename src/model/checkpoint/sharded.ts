/**
 * A checkpoint directory's tensors, from one `model.safetensors` or from shards listed in
 * `model.safetensors.index.json` (`{ metadata?, weight_map: { tensor: file } }`, as Hugging Face writes them).
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { dtypeSize } from './dtypes.ts';
import { CheckpointError, type CheckpointProblem } from './errors.ts';
import { SafetensorsFile, writeSafetensors, type TensorInfo, type TensorToWrite } from './safetensors.ts';
import { numel, type NamedTensor } from './tensors.ts';

export const SINGLE_FILE = 'model.safetensors';
export const INDEX_FILE = 'model.safetensors.index.json';

/** Lazy access to every tensor of a checkpoint, wherever it is stored. */
export interface TensorSource {
  names(): string[];
  has(name: string): boolean;
  info(name: string): TensorInfo;
  read(name: string): NamedTensor;
  metadata: Record<string, string>;
  close(): void;
}

export function openTensorSource(dir: string): TensorSource {
  const indexPath = join(dir, INDEX_FILE);
  if (existsSync(indexPath)) return openSharded(dir, indexPath);
  const single = join(dir, SINGLE_FILE);
  if (existsSync(single)) return SafetensorsFile.open(single);
  throw new CheckpointError('NO_WEIGHTS', `${dir}: no ${SINGLE_FILE} or ${INDEX_FILE} found`);
}

function openSharded(dir: string, indexPath: string): TensorSource {
  let index: unknown;
  try {
    index = JSON.parse(readFileSync(indexPath, 'utf8'));
  } catch (error) {
    throw new CheckpointError('BAD_INDEX', `${indexPath}: cannot read the shard index: ${(error as Error).message}`, { cause: error });
  }
  const weightMap = (index as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    throw new CheckpointError('BAD_INDEX', `${indexPath}: missing or invalid "weight_map" object`);
  }
  const owner = new Map<string, string>();
  for (const [name, file] of Object.entries(weightMap)) {
    if (typeof file !== 'string' || file !== basename(file) || file === '..' || !file.endsWith('.safetensors')) {
      throw new CheckpointError('BAD_INDEX', `${indexPath}: tensor '${name}' maps to ${JSON.stringify(file)}, which is not a .safetensors file name in this directory`);
    }
    owner.set(name, file);
  }
  const shards = new Map<string, SafetensorsFile>();
  const closeAll = (): void => { for (const f of shards.values()) f.close(); };
  try {
    for (const file of new Set(owner.values())) shards.set(file, SafetensorsFile.open(join(dir, file)));
    const problems: CheckpointProblem[] = [];
    for (const [name, file] of owner) {
      if (!shards.get(file)!.has(name)) problems.push({ code: 'MISSING_TENSOR', message: `index maps '${name}' to ${file}, which does not contain it` });
    }
    for (const [file, shard] of shards) {
      for (const name of shard.names()) {
        if (owner.get(name) !== file) problems.push({ code: 'UNEXPECTED_TENSOR', message: `${file} holds '${name}', which the index does not map to it` });
      }
    }
    CheckpointError.throwAll(`${indexPath} disagrees with its shards`, problems);
  } catch (error) {
    closeAll();
    throw error;
  }
  const metadata = Object.assign({}, ...[...shards.values()].map((s) => s.metadata)) as Record<string, string>;
  const shardOf = (name: string): SafetensorsFile => {
    const file = owner.get(name);
    if (file === undefined) throw new CheckpointError('MISSING_TENSOR', `${dir}: no tensor named '${name}'`);
    return shards.get(file)!;
  };
  return {
    names: () => [...owner.keys()],
    has: (name) => owner.has(name),
    info: (name) => shardOf(name).info(name),
    read: (name) => shardOf(name).read(name),
    metadata,
    close: closeAll,
  };
}

/**
 * Writes tensors to `dir` as one `model.safetensors` when they fit in `maxShardBytes`, else as
 * `model-0000i-of-0000n.safetensors` shards plus the index. Returns the file names written.
 */
export function writeCheckpointTensors(dir: string, tensors: ReadonlyMap<string, TensorToWrite>, options: { maxShardBytes?: number; metadata?: Record<string, string> } = {}): string[] {
  const maxShard = options.maxShardBytes ?? Infinity;
  const groups: [string, TensorToWrite][][] = [[]];
  let current = 0;
  let total = 0;
  for (const entry of tensors) {
    const bytes = numel(entry[1].shape) * dtypeSize(entry[1].dtype);
    total += bytes;
    if (current > 0 && current + bytes > maxShard) { groups.push([]); current = 0; }
    groups[groups.length - 1].push(entry);
    current += bytes;
  }
  if (groups.length === 1) {
    writeSafetensors(join(dir, SINGLE_FILE), new Map(groups[0]), options.metadata);
    rmSync(join(dir, INDEX_FILE), { force: true }); // a stale index would shadow the new file
    return [SINGLE_FILE];
  }
  const pad = (i: number): string => String(i).padStart(5, '0');
  const files = groups.map((_, i) => `model-${pad(i + 1)}-of-${pad(groups.length)}.safetensors`);
  const weightMap: Record<string, string> = {};
  groups.forEach((group, i) => {
    writeSafetensors(join(dir, files[i]), new Map(group), options.metadata);
    for (const [name] of group) weightMap[name] = files[i];
  });
  const tmp = join(dir, `${INDEX_FILE}.partial-${process.pid}`);
  writeFileSync(tmp, JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2) + '\n');
  renameSync(tmp, join(dir, INDEX_FILE));
  return [...files, INDEX_FILE];
}
