/**
 * The τ² DB hash: sha256 hex of Python `json.dumps(db.model_dump(), sort_keys=True)` (separators ", " / ": ",
 * ASCII-only, floats in Python repr, the Order's optional fields present as null).
 *
 * Hashing the whole 3 MB text per evaluation would be slow, so for a copy-on-write `RetailDb`:
 * - the base DB's text is built once, as chunks (one per record) with sha256 checkpoints every ~32 KB;
 * - only records the episode copied for writing are re-serialised (and cached until written again);
 * - a DB whose copied records all equal the base hashes to the base hash without any sha256 work;
 * - otherwise hashing resumes from the last checkpoint before the first changed record;
 * - results are memoised by the changed records' text (gold replays and repeated outcomes are free).
 */
import { createHash, type Hash } from 'node:crypto';
import { compareCodePoints, pyJsonDumps, pyJsonString } from '../../tooluse/python/pyjson.ts';
import type { DeepReadonly, RetailTables, TableName } from './schema.ts';
import type { RetailDb } from './db.ts';

const CHECKPOINT_CHARS = 32 * 1024;
const MEMO_LIMIT = 4096;

/** Sorted-key JSON text of one record (or any DB value). */
export function sortedJson(value: unknown): string {
  return pyJsonDumps(value, { sortKeys: true });
}

/** Hash of plain tables, serialised in full (the reference the incremental path must agree with). */
export function hashRetailTables(tables: DeepReadonly<RetailTables>): string {
  return createHash('sha256').update(sortedJson(tables), 'latin1').digest('hex');
}

/** Per-record layout of the base DB's hash text, plus sha256 checkpoints. */
export class RetailHashIndex {
  /** The full sorted-key text of the base DB. */
  readonly text: string;
  /** sha256 hex of `text`. */
  readonly baseHash: string;
  /** `table\0id` → index into `start`/`end`/`recordText`. */
  private readonly slots = new Map<string, number>();
  private readonly start: number[] = [];
  private readonly end: number[] = [];
  private readonly recordText: string[] = [];
  /** checkpoints[k] = sha256 state after `text.slice(0, checkpointAt[k])`. */
  private readonly checkpoints: Hash[] = [];
  private readonly checkpointAt: number[] = [];
  private readonly memo = new Map<string, string>();

  constructor(tables: DeepReadonly<RetailTables>) {
    // Top-level keys sorted: orders, products, users. Each table is a dict sorted by id.
    const tableNames = (Object.keys(tables) as TableName[]).sort(compareCodePoints);
    let text = '{';
    tableNames.forEach((table, ti) => {
      text += (ti === 0 ? '' : ', ') + pyJsonString(table) + ': {';
      const ids = [...tables[table].keys()].sort(compareCodePoints);
      ids.forEach((id, i) => {
        text += (i === 0 ? '' : ', ') + pyJsonString(id) + ': ';
        const rec = sortedJson(tables[table].get(id));
        this.slots.set(table + '\u0000' + id, this.recordText.length);
        this.start.push(text.length);
        text += rec;
        this.end.push(text.length);
        this.recordText.push(rec);
      });
      text += '}';
    });
    text += '}';
    this.text = text;

    const h = createHash('sha256');
    let fed = 0;
    for (let at = 0; at < text.length; at += CHECKPOINT_CHARS) {
      h.update(text.slice(fed, at), 'latin1');
      fed = at;
      this.checkpoints.push(h.copy());
      this.checkpointAt.push(at);
    }
    h.update(text.slice(fed), 'latin1');
    this.baseHash = h.digest('hex');
  }

  /** Hash of the base text with some records replaced (`slot` indices, any order). */
  private hashWithReplacements(changes: [number, string][]): string {
    changes.sort((a, b) => a[0] - b[0]);
    const firstStart = this.start[changes[0][0]];
    let k = this.checkpointAt.length - 1;
    while (this.checkpointAt[k] > firstStart) k--;
    const h = this.checkpoints[k].copy();
    let pos = this.checkpointAt[k];
    for (const [slot, rec] of changes) {
      h.update(this.text.slice(pos, this.start[slot]), 'latin1');
      h.update(rec, 'latin1');
      pos = this.end[slot];
    }
    h.update(this.text.slice(pos), 'latin1');
    return h.digest('hex');
  }

  /** Hash of an episode DB built on the base this index describes. */
  hashDb(db: RetailDb): string {
    const changes: [number, string][] = [];
    for (const table of ['orders', 'products', 'users'] as const) {
      for (const [id, rec] of db.overlay(table)) {
        const slot = this.slots.get(table + '\u0000' + id);
        if (slot === undefined) throw new Error(`hashDb: record ${table}/${id} is not in the base DB`);
        const text = db.overlayText(table, id, () => sortedJson(rec));
        if (text !== this.recordText[slot]) changes.push([slot, text]);
      }
    }
    if (changes.length === 0) return this.baseHash;
    changes.sort((a, b) => a[0] - b[0]);
    let key = '';
    for (const [slot, text] of changes) key += slot + '\u0000' + text + '\u0001';
    const hit = this.memo.get(key);
    if (hit !== undefined) {
      this.memo.delete(key);
      this.memo.set(key, hit); // most recently used goes last
      return hit;
    }
    const hash = this.hashWithReplacements(changes);
    if (this.memo.size >= MEMO_LIMIT) this.memo.delete(this.memo.keys().next().value!);
    this.memo.set(key, hash);
    return hash;
  }
}

/** sha256 of an episode DB, as τ² computes it. */
export function hashRetailDb(db: RetailDb): string {
  return db.base.hashIndex.hashDb(db);
}
