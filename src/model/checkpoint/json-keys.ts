/**
 * The keys of a JSON object's top level, in order and with repeats. `JSON.parse` keeps only the last of two equal
 * keys, so a header that names a tensor twice would otherwise be accepted silently. Call only on text that
 * `JSON.parse` accepted and whose top level is an object.
 */
export function topLevelKeys(json: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < json.length; i++) {
    const ch = json[i];
    if (ch === '"') {
      const end = stringEnd(json, i);
      if (depth === 1 && expectKey) {
        keys.push(JSON.parse(json.slice(i, end + 1)) as string);
        expectKey = false;
      }
      i = end;
    } else if (ch === '{' || ch === '[') {
      depth++;
      if (depth === 1 && ch === '{') expectKey = true;
    } else if (ch === '}' || ch === ']') {
      depth--;
    } else if (ch === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return keys;
}

/** Index of the closing quote of the string that opens at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  throw new SyntaxError('unterminated string');
}

export function duplicates(items: readonly string[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const item of items) (seen.has(item) ? dup : seen).add(item);
  return [...dup];
}
