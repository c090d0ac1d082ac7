/**
 * JSON text as Python's `json.dumps(value, ensure_ascii=False)` writes it (separators `", "` and `": "`),
 * which is how Hermes/Qwen chat templates render tools and tool calls.
 */
export function pythonJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const scalar = JSON.stringify(value);
    if (scalar === undefined) throw new Error(`cannot render ${typeof value} as JSON`);
    return scalar;
  }
  if (Array.isArray(value)) return `[${value.map((v) => pythonJson(v === undefined ? null : v)).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(', ')}}`;
}
