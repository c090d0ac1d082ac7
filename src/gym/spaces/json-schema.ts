/**
 * The subset of JSON Schema used by OpenAI function `parameters`: `type` (one or a list of string, number,
 * integer, boolean, array, object, null), `enum`, `const`, `properties`, `required`, `additionalProperties`
 * (boolean or schema), `items`, `minItems`/`maxItems`, `minimum`/`maximum`, `minLength`/`maxLength`, `anyOf`/`oneOf`.
 * Other keywords (description, title, format, …) are ignored.
 */
import type { XoshiroRng } from '../rng.ts';
import { dataEquivalence } from '../equivalence.ts';
import { ALPHANUMERIC } from './text.ts';
import { isPlainObject } from './space.ts';

export type JsonSchema = { [key: string]: unknown };

const TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object', 'null'] as const;
type JsonType = (typeof TYPES)[number];

function typesOf(schema: JsonSchema): JsonType[] | null {
  const t = schema.type;
  if (t === undefined) return null;
  const list = Array.isArray(t) ? t : [t];
  for (const x of list) if (!TYPES.includes(x as JsonType)) throw new TypeError(`JSON schema: unsupported type ${JSON.stringify(x)}`);
  return list as JsonType[];
}

function hasType(value: unknown, type: JsonType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isPlainObject(value);
    case 'null':
      return value === null;
  }
}

/** Returns null when `value` satisfies `schema`, else a message naming the first violation at `path`. */
export function validateJsonSchema(schema: JsonSchema, value: unknown, path = '$'): string | null {
  if (value === undefined) return `${path}: missing value`;
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(alternatives)) {
    const errors = alternatives.map((s) => validateJsonSchema(s, value, path));
    if (!errors.some((e) => e === null)) return `${path}: matches none of the alternatives (${errors.join('; ')})`;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => dataEquivalence(e, value))) {
    return `${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`;
  }
  if ('const' in schema && !dataEquivalence(schema.const, value)) return `${path}: must equal ${JSON.stringify(schema.const)}`;
  const types = typesOf(schema);
  if (types && !types.some((t) => hasType(value, t))) return `${path}: expected ${types.join(' or ')}, got ${describe(value)}`;
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) return `${path}: ${value} < minimum ${schema.minimum}`;
    if (typeof schema.maximum === 'number' && value > schema.maximum) return `${path}: ${value} > maximum ${schema.maximum}`;
  }
  if (typeof value === 'string') {
    const len = Array.from(value).length;
    if (typeof schema.minLength === 'number' && len < schema.minLength) return `${path}: shorter than minLength ${schema.minLength}`;
    if (typeof schema.maxLength === 'number' && len > schema.maxLength) return `${path}: longer than maxLength ${schema.maxLength}`;
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) return `${path}: fewer than ${schema.minItems} items`;
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) return `${path}: more than ${schema.maxItems} items`;
    if (isPlainObject(schema.items)) {
      for (let i = 0; i < value.length; i++) {
        const err = validateJsonSchema(schema.items, value[i], `${path}[${i}]`);
        if (err) return err;
      }
    }
  }
  if (isPlainObject(value) && (types?.includes('object') || schema.properties !== undefined)) {
    const props = (isPlainObject(schema.properties) ? schema.properties : {}) as Record<string, JsonSchema>;
    const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
    for (const key of required) if (!(key in value)) return `${path}: missing required property "${key}"`;
    for (const [key, v] of Object.entries(value)) {
      const sub = props[key];
      if (sub) {
        const err = validateJsonSchema(sub, v, `${path}.${key}`);
        if (err) return err;
      } else if (schema.additionalProperties === false) {
        return `${path}: unexpected property "${key}"`;
      } else if (isPlainObject(schema.additionalProperties)) {
        const err = validateJsonSchema(schema.additionalProperties, v, `${path}.${key}`);
        if (err) return err;
      }
    }
  }
  return null;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number' && Number.isInteger(v)) return `integer ${v}`;
  return typeof v === 'object' ? 'object' : `${typeof v} ${JSON.stringify(v)}`;
}

/**
 * A random value satisfying `schema` (within the supported subset): enums pick a member; strings are 1–8
 * alphanumeric characters (clamped to min/maxLength); numbers are uniform in [minimum, maximum] (default
 * [-100, 100]); arrays have 0–3 items (clamped to min/maxItems); objects have every required property and each
 * optional one with probability 1/2. Nesting deeper than `maxDepth` produces the smallest valid value.
 */
export function sampleJsonSchema(schema: JsonSchema, rng: XoshiroRng, depth = 0, maxDepth = 6): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return structuredClone(rng.choice(schema.enum));
  if ('const' in schema) return structuredClone(schema.const);
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(alternatives) && alternatives.length > 0) return sampleJsonSchema(rng.choice(alternatives), rng, depth + 1, maxDepth);
  const types = typesOf(schema) ?? (schema.properties !== undefined ? ['object'] : ['string']);
  const type = rng.choice(types);
  switch (type) {
    case 'string': {
      const min = typeof schema.minLength === 'number' ? schema.minLength : 1;
      const max = Math.max(min, typeof schema.maxLength === 'number' ? Math.min(schema.maxLength, Math.max(min, 8)) : Math.max(min, 8));
      const n = rng.integers(min, max, { endpoint: true });
      let s = '';
      for (let i = 0; i < n; i++) s += ALPHANUMERIC[rng.integers(ALPHANUMERIC.length)];
      return s;
    }
    case 'number':
    case 'integer': {
      const lo = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.maximum === 'number' ? Math.min(-100, schema.maximum) : -100;
      const hi = typeof schema.maximum === 'number' ? schema.maximum : Math.max(100, lo);
      if (type === 'integer') return rng.integers(Math.ceil(lo), Math.floor(hi), { endpoint: true });
      return Math.min(hi, rng.uniform(lo, hi));
    }
    case 'boolean':
      return rng.random() < 0.5;
    case 'null':
      return null;
    case 'array': {
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const max = depth >= maxDepth ? min : Math.max(min, typeof schema.maxItems === 'number' ? Math.min(schema.maxItems, Math.max(min, 3)) : Math.max(min, 3));
      const n = rng.integers(min, max, { endpoint: true });
      const items = isPlainObject(schema.items) ? (schema.items as JsonSchema) : { type: 'string' };
      return Array.from({ length: n }, () => sampleJsonSchema(items, rng, depth + 1, maxDepth));
    }
    case 'object': {
      const props = (isPlainObject(schema.properties) ? schema.properties : {}) as Record<string, JsonSchema>;
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      const out: Record<string, unknown> = {};
      for (const key of required) out[key] = sampleJsonSchema(props[key] ?? {}, rng, depth + 1, maxDepth);
      for (const [key, sub] of Object.entries(props)) {
        if (required.has(key)) continue;
        if (depth < maxDepth && rng.random() < 0.5) out[key] = sampleJsonSchema(sub, rng, depth + 1, maxDepth);
      }
      return out;
    }
  }
}
