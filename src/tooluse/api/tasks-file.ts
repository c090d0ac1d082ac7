/** `readTasksFile(path)`: tasks from a JSON array or a JSONL file; errors name the file and line. */
import { readFileSync } from 'node:fs';
import type { Task } from './types.ts';

/** The 1-based line of character `pos` in `text`. */
function lineOf(text: string, pos: number): number {
  let line = 1;
  for (let i = 0; i < pos && i < text.length; i++) if (text[i] === '\n') line++;
  return line;
}

function checkTask(x: unknown, where: string): Task {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new Error(`${where}: a task must be a JSON object with a string id`);
  const id = (x as { id?: unknown }).id;
  if (typeof id !== 'string' || id === '') throw new Error(`${where}: the task has no string id (got ${JSON.stringify(id)})`);
  return x as Task;
}

/**
 * Reads tasks: a JSON array of objects (a file whose first non-blank character is `[`), else JSON Lines (one object a
 * line, blank lines skipped). Every task needs a unique string `id`. Errors name the file and the line.
 */
export function readTasksFile<T extends Task = Task>(path: string): T[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read tasks file ${path}: ${(e as Error).message}`, { cause: e });
  }
  const tasks: { task: Task; line: number }[] = [];
  if (text.trimStart().startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      const msg = (e as Error).message;
      const pos = /position (\d+)/.exec(msg);
      const line = /line (\d+)/.exec(msg)?.[1] ?? (pos ? String(lineOf(text, Number(pos[1]))) : undefined);
      throw new Error(`tasks file ${path}${line !== undefined ? `:${line}` : ''}: not valid JSON (${msg})`, { cause: e });
    }
    // Each element's line: where its text starts (found by re-scanning the top-level array).
    const starts = elementLines(text);
    (parsed as unknown[]).forEach((x, i) => tasks.push({ task: checkTask(x, `tasks file ${path}:${starts[i] ?? 1} (task ${i})`), line: starts[i] ?? 1 }));
  } else {
    text.split('\n').forEach((raw, i) => {
      if (raw.trim() === '') return;
      let x: unknown;
      try {
        x = JSON.parse(raw);
      } catch (e) {
        throw new Error(`tasks file ${path}:${i + 1}: not valid JSON (${(e as Error).message}); a tasks file is a JSON array or one JSON object a line`, { cause: e });
      }
      tasks.push({ task: checkTask(x, `tasks file ${path}:${i + 1}`), line: i + 1 });
    });
  }
  if (tasks.length === 0) throw new Error(`tasks file ${path}: no tasks`);
  const seen = new Map<string, number>();
  for (const { task, line } of tasks) {
    const prev = seen.get(task.id);
    if (prev !== undefined) throw new Error(`tasks file ${path}:${line}: the id ${task.id} is already used at line ${prev}`);
    seen.set(task.id, line);
  }
  return tasks.map((t) => t.task as T);
}

/** The line on which each element of the top-level JSON array starts. */
function elementLines(text: string): number[] {
  const out: number[] = [];
  let depth = 0, line = 1, inString = false, escaped = false, expecting = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\n') line++;
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (depth === 1 && expecting && !/\s/.test(c) && c !== ']') {
      out.push(line);
      expecting = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth++;
      if (depth === 1) expecting = true;
    } else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 1) expecting = true;
  }
  return out;
}
