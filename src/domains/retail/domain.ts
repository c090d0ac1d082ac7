/** The τ²-bench retail domain as a `Domain<RetailDb>`: tools, policy, copy-on-write episode DBs and the τ² DB hash. */
import type { Domain, Tool } from '../../tooluse/types.ts';
import { RetailBase, type RetailDb } from './db.ts';
import { hashRetailDb } from './hash.ts';
import type { RetailData } from './load.ts';
import { createRetailTools, type RetailToolSet } from './tools.ts';

export interface RetailDomainOptions {
  /** Keep τ²-bench's tool quirks (default true); see `createRetailTools`. */
  tau2Compat?: boolean;
  /** `v1` (16 tools, default) or `v0` (the 15 tools of τ² v0.x, without `get_item_details`). */
  toolSet?: RetailToolSet;
}

export interface RetailDomain extends Domain<RetailDb> {
  readonly base: RetailBase;
}

/** Domains built from the same loaded tables share one base (and its hash index). */
const basesByTables = new WeakMap<RetailData['db'], RetailBase>();

export function createRetailDomain(data: Pick<RetailData, 'db' | 'policy'>, options: RetailDomainOptions = {}): RetailDomain {
  let base = basesByTables.get(data.db);
  if (!base) {
    base = new RetailBase(data.db);
    basesByTables.set(data.db, base);
  }
  const tools: readonly Tool<RetailDb>[] = createRetailTools({ tau2Compat: options.tau2Compat ?? true, toolSet: options.toolSet });
  return {
    name: 'retail',
    policy: data.policy,
    tools,
    toolsClassName: 'RetailTools',
    base,
    freshDb: () => base.fresh(),
    hashDb: (db: RetailDb) => hashRetailDb(db),
  };
}
