/**
 * Warning sink for the gym layer (Gymnasium's `logger.warn`). By default warnings go to stderr once per distinct
 * message, as Python's `warnings` module shows them once per call site. `captureWarnings` collects them instead.
 */

type WarningSink = (message: string) => void;

const shown = new Set<string>();
const sinks: WarningSink[] = [];

function defaultSink(message: string): void {
  if (shown.has(message)) return;
  shown.add(message);
  console.warn(`WARN: ${message}`);
}

/** Emits a gym warning. */
export function warn(message: string): void {
  const sink = sinks[sinks.length - 1];
  (sink ?? defaultSink)(message);
}

/** Runs `fn` and returns its result with every warning emitted while it ran (async-aware). */
export async function captureWarnings<T>(fn: () => Promise<T> | T): Promise<{ result: T; warnings: string[] }> {
  const warnings: string[] = [];
  const sink: WarningSink = (m) => warnings.push(m);
  sinks.push(sink);
  try {
    const result = await fn();
    return { result, warnings };
  } finally {
    const i = sinks.lastIndexOf(sink);
    if (i >= 0) sinks.splice(i, 1);
  }
}
