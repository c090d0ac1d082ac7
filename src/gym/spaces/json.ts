import { Box, boundsFromJSON } from './box.ts';
import { Dict } from './dict.ts';
import { Discrete } from './discrete.ts';
import { isDtype } from './dtypes.ts';
import { MultiBinary } from './multi-binary.ts';
import { MultiDiscrete } from './multi-discrete.ts';
import { OneOf } from './one-of.ts';
import { Sequence } from './sequence.ts';
import type { Space, SpaceJSON } from './space.ts';
import { Text } from './text.ts';
import { ToolCallSpace, type FunctionToolSchema } from './tool-call.ts';
import { Tuple } from './tuple.ts';

function num(j: SpaceJSON, key: string): number {
  const v = j[key];
  if (typeof v !== 'number') throw new TypeError(`spaceFromJSON: ${j.type}.${key} must be a number, got ${JSON.stringify(v)}`);
  return v;
}

function list(j: SpaceJSON, key: string): unknown[] {
  const v = j[key];
  if (!Array.isArray(v)) throw new TypeError(`spaceFromJSON: ${j.type}.${key} must be an array`);
  return v;
}

const customTypes = new Map<string, (json: SpaceJSON) => Space>();

/** Teaches `spaceFromJSON` a space type defined outside src/gym (e.g. a domain's observation space). */
export function registerSpaceType(type: string, fromJSON: (json: SpaceJSON) => Space): void {
  customTypes.set(type, fromJSON);
}

/** Whether `spaceFromJSON` can rebuild spaces of this type. */
export function isKnownSpaceType(type: string): boolean {
  return BUILTIN_TYPES.includes(type) || customTypes.has(type);
}

const BUILTIN_TYPES = ['Discrete', 'MultiDiscrete', 'MultiBinary', 'Box', 'Text', 'Dict', 'Tuple', 'OneOf', 'Sequence', 'ToolCall'];

/** Rebuilds a space from `space.toJSON()` (generator state is not serialized). */
export function spaceFromJSON(json: unknown): Space {
  if (typeof json === 'string') json = JSON.parse(json);
  if (typeof json !== 'object' || json === null || typeof (json as SpaceJSON).type !== 'string') throw new TypeError('spaceFromJSON: expected an object with a "type"');
  const j = json as SpaceJSON;
  switch (j.type) {
    case 'Discrete':
      return new Discrete(num(j, 'n'), { start: (j.start as number | undefined) ?? 0 });
    case 'MultiDiscrete':
      return new MultiDiscrete(list(j, 'nvec') as number[], { start: list(j, 'start') as number[], shape: list(j, 'shape') as number[] });
    case 'MultiBinary':
      return new MultiBinary(list(j, 'shape') as number[]);
    case 'Box': {
      if (!isDtype(j.dtype)) throw new TypeError(`spaceFromJSON: unsupported Box dtype ${JSON.stringify(j.dtype)}`);
      return new Box(boundsFromJSON(j.low ?? null), boundsFromJSON(j.high ?? null), { shape: list(j, 'shape') as number[], dtype: j.dtype });
    }
    case 'Text':
      return new Text(num(j, 'maxLength'), { minLength: num(j, 'minLength'), charset: j.charset === null ? 'any' : Array.from(String(j.charset)) });
    case 'Dict': {
      const spaces = j.spaces;
      if (typeof spaces !== 'object' || spaces === null || Array.isArray(spaces)) throw new TypeError('spaceFromJSON: Dict.spaces must be an object');
      return new Dict(Object.fromEntries(Object.entries(spaces).map(([k, v]) => [k, spaceFromJSON(v)])));
    }
    case 'Tuple':
      return new Tuple(list(j, 'spaces').map((s) => spaceFromJSON(s)));
    case 'OneOf':
      return new OneOf(list(j, 'spaces').map((s) => spaceFromJSON(s)));
    case 'Sequence':
      return new Sequence(spaceFromJSON(j.space), { stack: j.stack === true });
    case 'ToolCall':
      return new ToolCallSpace(list(j, 'tools') as FunctionToolSchema[]);
    default: {
      const custom = customTypes.get(j.type);
      if (custom) return custom(j);
      throw new TypeError(`spaceFromJSON: unknown space type "${j.type}"; register it with registerSpaceType()`);
    }
  }
}
