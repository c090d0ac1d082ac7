/**
 * Python raises `TypeError: unexpected keyword argument` when `make` passes a kwarg the env does not take; a
 * factory calls `expectKwargs` to do the same instead of silently ignoring a typo.
 */
export function expectKwargs(envName: string, kwargs: Record<string, unknown>, accepted: readonly string[]): void {
  const allowed = new Set([...accepted, 'renderMode']);
  const unexpected = Object.keys(kwargs).filter((k) => !allowed.has(k));
  if (unexpected.length > 0) {
    throw new TypeError(`${envName} got unexpected keyword argument(s) ${unexpected.map((k) => `'${k}'`).join(', ')}; it accepts ${[...allowed].join(', ')}`);
  }
}
