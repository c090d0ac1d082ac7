/**
 * Merging per-env infos into one vector info (Gymnasium's `VectorEnv._add_info`): each key becomes an array of
 * length `numEnvs` plus a boolean mask `_key` saying which sub-envs reported it. Nested objects merge
 * recursively. Numbers default to 0, booleans to false, anything else to null; `final_obs` is always an array of
 * per-env observations (null where absent).
 */
import { isPlainObject } from '../spaces/space.ts';
import type { Info } from '../types.ts';

export function addInfo(vectorInfo: Info, envInfo: Info, envIndex: number, numEnvs: number): Info {
  for (const [key, value] of Object.entries(envInfo)) {
    let array: unknown;
    if (key === 'final_obs') {
      const existing = vectorInfo.final_obs;
      const arr = Array.isArray(existing) ? existing : new Array<unknown>(numEnvs).fill(null);
      arr[envIndex] = value;
      array = arr;
    } else if (isPlainObject(value)) {
      const existing = vectorInfo[key];
      array = addInfo(isPlainObject(existing) ? existing : {}, value, envIndex, numEnvs);
    } else {
      const existing = vectorInfo[key];
      let arr: unknown[];
      if (Array.isArray(existing)) arr = existing;
      else if (typeof value === 'number') arr = new Array<number>(numEnvs).fill(0);
      else if (typeof value === 'boolean') arr = new Array<boolean>(numEnvs).fill(false);
      else arr = new Array<unknown>(numEnvs).fill(null);
      arr[envIndex] = value;
      array = arr;
    }
    const maskKey = `_${key}`;
    const existingMask = vectorInfo[maskKey];
    const mask = Array.isArray(existingMask) ? (existingMask as boolean[]) : new Array<boolean>(numEnvs).fill(false);
    mask[envIndex] = true;
    vectorInfo[key] = array;
    vectorInfo[maskKey] = mask;
  }
  return vectorInfo;
}
