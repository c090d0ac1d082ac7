/**
 * The algorithm families (advantage estimators, policy losses, KL penalties, loss aggregations) are each one const
 * table keyed by name, next to their formulas; the config enums (config.ts) and the dispatch are built from it, so a
 * name is written once.
 */

/** The names of a registry table, as the non-empty tuple `z.enum` takes (in the table's order). */
export function namesOf<T extends Record<string, unknown>>(table: T): [keyof T & string, ...(keyof T & string)[]] {
  const names = Object.keys(table) as (keyof T & string)[];
  if (names.length === 0) throw new Error('a registry table needs at least one entry');
  return names as [keyof T & string, ...(keyof T & string)[]];
}
