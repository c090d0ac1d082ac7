/** Shared test material for src/llm: a seeded PRNG, a small mixed corpus, a tiny trained BPE, example tools. */
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import type { ToolSpec } from '../../src/llm/messages.ts';
import { mulberry32 } from '../../src/engine/random.ts';

/** A seeded uniform stream in [0, 1) (the engine's mulberry32), so every "random" test input is reproducible. */
export const rng = mulberry32;

const WORDS = [
  'the', 'order', 'user', 'item', 'return', 'exchange', 'cancel', 'pending', 'delivered', 'address', 'payment',
  'product', 'details', 'please', 'confirm', 'yes', 'no', 'thank', 'you', 'help', 'with', 'my', 'I', 'want', 'to',
  'café', 'naïve', 'über', 'straße', '東京', 'データ', 'привет', 'مرحبا', '🙂', '👍🏽', '1234', '#W2378156',
];

/** About `sentences` lines of pseudo-text mixing English, JSON-ish snippets, numbers and non-Latin scripts. */
export function makeCorpus(seed: number, sentences: number): string {
  const random = rng(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
  const lines: string[] = [];
  for (let i = 0; i < sentences; i++) {
    const n = 3 + Math.floor(random() * 10);
    const words = Array.from({ length: n }, () => pick(WORDS));
    if (random() < 0.3) lines.push(JSON.stringify({ name: pick(WORDS), arguments: { order_id: pick(WORDS), count: Math.floor(random() * 1000) } }));
    else lines.push(words.join(' ') + pick(['.', '?', '!', ',', '']));
  }
  return lines.join('\n');
}

let tiny: BpeTokenizer | undefined;

/** A 600-token BPE trained on the mixed corpus (shared across test files). */
export function tinyBpe(): BpeTokenizer {
  return (tiny ??= BpeTokenizer.train(makeCorpus(1, 3000), { vocabSize: 600 }));
}

export const WEATHER_TOOL: ToolSpec = {
  type: 'function',
  function: {
    name: 'get_current_weather',
    description: 'Gets the current weather in the provided location.',
    parameters: {
      type: 'object',
      properties: {
        location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' },
        format: { type: 'string', enum: ['celsius', 'fahrenheit'], default: 'celsius' },
      },
      required: ['location'],
    },
  },
};

export const ORDER_TOOL: ToolSpec = {
  type: 'function',
  function: {
    name: 'get_order_details',
    description: 'Get the status and details of an order.',
    parameters: {
      title: 'parameters',
      type: 'object',
      properties: {
        order_id: { title: 'Order Id', type: 'string', description: "The order id, such as '#W0000000'." },
        item_ids: { type: 'array', items: { type: 'string' } },
      },
      required: ['order_id'],
    },
  },
};

export const NO_ARGS_TOOL: ToolSpec = {
  type: 'function',
  function: { name: 'list_all_product_types', description: 'List the name and product id of all product types.', parameters: { type: 'object', properties: {} } },
};
