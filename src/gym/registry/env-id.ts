/** Gymnasium's env id grammar `[namespace/]name[-vN]` and close-match suggestions for mistyped ids. */
import { RegistrationError } from '../errors.ts';

export interface ParsedEnvId {
  namespace: string | null;
  name: string;
  version: number | null;
}

// Python's \w is Unicode-aware, so letters and digits of any script are allowed, as in Gymnasium.
const ENV_ID_RE = /^(?:(?<namespace>[\p{L}\p{N}_:-]+)\/)?(?<name>[\p{L}\p{N}_:.-]+?)(?:-v(?<version>\d+))?$/u;

/** Splits an id into namespace, name and version; throws `RegistrationError` for a malformed id. */
export function parseEnvId(id: string): ParsedEnvId {
  const m = typeof id === 'string' ? ENV_ID_RE.exec(id) : null;
  if (!m?.groups) {
    throw new RegistrationError(
      `Malformed environment ID: ${String(id)}. (Currently all IDs must be of the form [namespace/](env-name)-v(version). (namespace is optional))`,
    );
  }
  const { namespace, name, version } = m.groups;
  return { namespace: namespace ?? null, name: name!, version: version === undefined ? null : Number(version) };
}

/** Joins the parts back into an id. */
export function getEnvId(namespace: string | null, name: string, version: number | null): string {
  let id = name;
  if (namespace !== null) id = `${namespace}/${id}`;
  if (version !== null) id = `${id}-v${version}`;
  return id;
}

/**
 * Similarity of two strings in [0, 1]: 2·M / (|a| + |b|) where M is the number of characters in matching blocks
 * found by repeatedly taking the longest common substring (the Ratcliff/Obershelp measure difflib uses).
 */
export function similarity(a: string, b: string): number {
  if (a.length + b.length === 0) return 1;
  return (2 * matchingChars(a, b)) / (a.length + b.length);
}

function matchingChars(a: string, b: string): number {
  if (a.length === 0 || b.length === 0) return 0;
  let bestLen = 0;
  let bestA = 0;
  let bestB = 0;
  // dynamic programming over suffix lengths, one row at a time
  let prev = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1).fill(0);
    for (let j = 1; j <= b.length; j++) {
      if (a[i - 1] === b[j - 1]) {
        row[j] = prev[j - 1]! + 1;
        if (row[j]! > bestLen) {
          bestLen = row[j]!;
          bestA = i - bestLen;
          bestB = j - bestLen;
        }
      }
    }
    prev = row;
  }
  if (bestLen === 0) return 0;
  return bestLen + matchingChars(a.slice(0, bestA), b.slice(0, bestB)) + matchingChars(a.slice(bestA + bestLen), b.slice(bestB + bestLen));
}

/** The best matches of `word` among `candidates` with similarity ≥ `cutoff` (difflib's defaults: n=1, 0.6). */
export function closeMatches(word: string, candidates: Iterable<string>, n = 1, cutoff = 0.6): string[] {
  return [...new Set(candidates)]
    .map((c) => ({ c, score: similarity(word, c) }))
    .filter((x) => x.score >= cutoff)
    .sort((x, y) => y.score - x.score)
    .slice(0, n)
    .map((x) => x.c);
}
