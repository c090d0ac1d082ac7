/**
 * The passive checks of Gymnasium's `passive_env_checker`, shared by the `PassiveEnvChecker` wrapper and
 * `checkEnv`. Structural problems (wrong arity, info not an object, not a Space) throw `GymError`; everything else
 * is a warning through the gym logger. Nothing here alters the data it inspects.
 */
import type { Env } from '../env.ts';
import { GymError } from '../errors.ts';
import { warn } from '../logger.ts';
import { Box } from '../spaces/box.ts';
import { Dict } from '../spaces/dict.ts';
import { Discrete } from '../spaces/discrete.ts';
import { dtypeOfArray } from '../spaces/dtypes.ts';
import { MultiBinary } from '../spaces/multi-binary.ts';
import { MultiDiscrete } from '../spaces/multi-discrete.ts';
import { isPlainObject, Space } from '../spaces/space.ts';
import { Tuple } from '../spaces/tuple.ts';
import type { ResetOptions } from '../types.ts';

export function typeName(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'Array';
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'Object';
  return typeof x;
}

/** Checks that `space` is a Space and that its bounds are sensible. */
export function checkSpace(space: unknown, name: 'observation' | 'action'): void {
  if (!(space instanceof Space)) {
    throw new GymError(`The ${name} space does not inherit from Space (src/gym/spaces), actual type: ${typeName(space)}`);
  }
  checkSpaceLimits(space, name);
}

function checkSpaceLimits(space: Space, name: 'observation' | 'action'): void {
  if (space instanceof Box) {
    if (name === 'observation') {
      if (space.low.some((v) => v === -Infinity)) warn('A Box observation space minimum value is -infinity. This is probably too low.');
      if (space.high.some((v) => v === Infinity)) warn('A Box observation space maximum value is infinity. This is probably too high.');
    } else {
      if (space.low.some((v, i) => Math.abs(v) !== Math.abs(space.high[i]!)) || space.high.some((v) => Math.abs(v) > 1)) {
        warn('For Box action spaces, we recommend using a symmetric and normalized space (range=[-1, 1] or [0, 1]).');
      }
    }
    if (space.low.some((v, i) => v === space.high[i])) warn(`A Box ${name} space has a dimension whose lower and upper bounds are equal.`);
  } else if (space instanceof Dict) {
    for (const s of Object.values(space.spaces)) checkSpaceLimits(s, name);
  } else if (space instanceof Tuple) {
    for (const s of space.spaces) checkSpaceLimits(s, name);
  }
}

/** Warns when `obs` has the wrong representation or lies outside `space`. */
export function checkObs(obs: unknown, space: Space, method: string): void {
  const pre = `The obs returned by the \`${method}()\` method`;
  if (space instanceof Discrete) {
    if (typeof obs !== 'number' || !Number.isInteger(obs)) warn(`${pre} should be an integer number, actual type: ${typeName(obs)}`);
  } else if (space instanceof Box) {
    if (!ArrayBuffer.isView(obs)) warn(`${pre} was expecting a typed array, actual type: ${typeName(obs)}`);
    else if (dtypeOfArray(obs) !== space.dtype) warn(`${pre} was expecting a typed array of dtype ${space.dtype}, actual type: ${typeName(obs)}`);
  } else if (space instanceof MultiDiscrete) {
    if (!(obs instanceof Int32Array)) warn(`${pre} was expecting an Int32Array, actual type: ${typeName(obs)}`);
  } else if (space instanceof MultiBinary) {
    if (!(obs instanceof Int8Array)) warn(`${pre} was expecting an Int8Array, actual type: ${typeName(obs)}`);
  } else if (space instanceof Tuple) {
    if (!Array.isArray(obs)) throw new GymError(`${pre} was expecting an array (Tuple space), actual type: ${typeName(obs)}`);
    if (obs.length !== space.length) throw new GymError(`${pre} length is not the same as the observation space length, obs length: ${obs.length}, space length: ${space.length}`);
    space.spaces.forEach((s, i) => checkObs(obs[i], s, method));
  } else if (space instanceof Dict) {
    if (!isPlainObject(obs)) throw new GymError(`${pre} must be an object (Dict space), actual type: ${typeName(obs)}`);
    const keys = Object.keys(obs).sort();
    if (keys.join('\u0000') !== space.keys.join('\u0000')) {
      throw new GymError(`${pre} observation keys is not same as the observation space keys, obs keys: ${JSON.stringify(keys)}, space keys: ${JSON.stringify(space.keys)}`);
    }
    for (const k of space.keys) checkObs(obs[k], space.spaces[k]!, method);
  }
  if ((space instanceof Box || space instanceof MultiDiscrete) && ArrayBuffer.isView(obs)) {
    const arr = obs as unknown as ArrayLike<number>;
    for (let i = 0; i < arr.length; i++) {
      if (Number.isNaN(arr[i])) {
        warn(`${pre} contains NaN.`);
        break;
      }
      if (!Number.isFinite(arr[i])) {
        warn(`${pre} contains inf.`);
        break;
      }
    }
  }
  try {
    if (!space.contains(obs)) warn(`${pre} is not within the observation space.`);
  } catch (e) {
    warn(`${pre} is not within the observation space with exception: ${(e as Error).message}`);
  }
}

/** Runs `env.reset(options)` and checks its result; returns the result unchanged. */
export async function envResetPassiveChecker(env: Env, options: ResetOptions = {}): Promise<unknown> {
  const result: unknown = await env.reset(options);
  if (!Array.isArray(result)) {
    warn(`The result returned by \`env.reset()\` was not an array of the form \`[obs, info]\`, where \`obs\` is an observation and \`info\` is an object containing additional information. Actual type: \`${typeName(result)}\``);
  } else if (result.length !== 2) {
    warn(`The result returned by \`env.reset()\` should be \`[obs, info]\` by default, where \`obs\` is an observation and \`info\` is an object containing additional information. Actual length: ${result.length}`);
  } else {
    const [obs, info] = result;
    checkObs(obs, env.observationSpace, 'reset');
    if (!isPlainObject(info)) throw new GymError(`The second element returned by \`env.reset()\` was not an object, actual type: ${typeName(info)}`);
  }
  return result;
}

/** Runs `env.step(action)` and checks its result; returns the result unchanged. */
export async function envStepPassiveChecker(env: Env, action: unknown): Promise<unknown> {
  const result: unknown = await env.step(action);
  if (!Array.isArray(result)) throw new GymError(`Expects step result to be an array, actual type: ${typeName(result)}`);
  if (result.length !== 5) {
    throw new GymError(`Expected \`Env.step\` to return a five element array [obs, reward, terminated, truncated, info], actual number of elements returned: ${result.length}.`);
  }
  const [obs, reward, terminated, truncated, info] = result;
  if (typeof terminated !== 'boolean') warn(`Expects \`terminated\` signal to be a boolean, actual type: ${typeName(terminated)}`);
  if (typeof truncated !== 'boolean') warn(`Expects \`truncated\` signal to be a boolean, actual type: ${typeName(truncated)}`);
  checkObs(obs, env.observationSpace, 'step');
  if (typeof reward !== 'number') warn(`The reward returned by \`step()\` must be a number, actual type: ${typeName(reward)}`);
  else if (Number.isNaN(reward)) warn('The reward is a NaN value.');
  else if (!Number.isFinite(reward)) warn('The reward is an inf value.');
  if (!isPlainObject(info)) throw new GymError(`The \`info\` returned by \`step()\` must be an object, actual type: ${typeName(info)}`);
  return result;
}

/** Checks a render result against the render mode. */
export function checkRenderReturn(renderMode: string, value: unknown): void {
  if (renderMode === 'human') {
    if (value !== null && value !== undefined) warn(`Human rendering should return \`null\`, got ${typeName(value)}`);
  } else if (renderMode === 'rgb_array') {
    if (!(value instanceof Uint8Array) && !isPlainObject(value)) warn(`RGB-array rendering should return a Uint8Array (H×W×3, row-major), got ${typeName(value)}`);
  } else if (renderMode === 'ansi') {
    if (typeof value !== 'string') warn(`ANSI rendering should produce a string, got ${typeName(value)}`);
  } else if (renderMode.endsWith('_list')) {
    if (!Array.isArray(value)) warn(`Render mode \`${renderMode}\` should produce an array, got ${typeName(value)}`);
    else value.forEach((v) => checkRenderReturn(renderMode.slice(0, -5), v));
  }
}

/** Checks render metadata, calls `env.render()` and checks the result; returns the result unchanged. */
export async function envRenderPassiveChecker(env: Env): Promise<unknown> {
  const modes = env.metadata?.renderModes;
  if (modes === undefined || modes === null) {
    warn("No render modes was declared in the environment (env.metadata.renderModes is null or not defined), you may have trouble when calling `.render()`.");
  } else {
    if (!Array.isArray(modes)) warn(`Expects the renderModes to be an array, actual type: ${typeName(modes)}`);
    else if (!modes.every((m) => typeof m === 'string')) warn(`Expects all render modes to be strings, actual types: ${modes.map(typeName).join(', ')}`);
    const fps = env.metadata.renderFps;
    if (Array.isArray(modes) && modes.length > 0) {
      if (fps === undefined || fps === null) warn("No render fps was declared in the environment (env.metadata.renderFps is null or not defined), rendering may occur at inconsistent fps.");
      else if (typeof fps !== 'number') warn(`Expects \`env.metadata.renderFps\` to be a number, actual type: ${typeName(fps)}`);
    }
    if (Array.isArray(modes)) {
      if (modes.length === 0 && env.renderMode !== null) throw new GymError(`With no renderModes, expects the Env.renderMode to be null, actual value: ${env.renderMode}`);
      if (modes.length > 0 && env.renderMode !== null && !modes.includes(env.renderMode)) {
        throw new GymError(`The environment was initialized successfully however with an unsupported render mode. Render mode: ${env.renderMode}, modes: ${modes.join(', ')}`);
      }
    }
  }
  const result = await env.render();
  if (env.renderMode !== null) checkRenderReturn(env.renderMode, result);
  return result;
}
