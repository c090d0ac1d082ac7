/** Shared fixtures for the SFT tests: τ²-shaped trajectories, a tiny tokenizer, a tiny model config. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolSpec } from '../../src/llm/index.ts';
import { presetConfig, type GptOssConfig } from '../../src/model/index.ts';
import type { TrajectoryRecord } from '../../src/rl/sft-data.ts';

export const TOOLS: ToolSpec[] = [
  { type: 'function', function: { name: 'get_order_details', description: 'Get an order.', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } } },
  { type: 'function', function: { name: 'cancel_pending_order', description: 'Cancel an order.', parameters: { type: 'object', properties: { order_id: { type: 'string' }, reason: { type: 'string' } } } } },
];

export const SYSTEM = 'You are a retail agent. Follow the policy.';

/** A τ² trajectory (as `longrun rollout` writes it): greeting, user, a tool call, two parallel calls, a final answer. */
export function trajectory(i: number): TrajectoryRecord {
  const order = `#W${1000 + i}`;
  const other = `#W${2000 + 7 * i}`;
  return {
    taskId: `t${i}`,
    reward: i % 5 === 4 ? 0 : 1,
    messages: [
      { role: 'assistant', content: 'Hi! How can I help you today?', toolCalls: null },
      { role: 'user', content: `Please cancel order ${order}, I ordered it by mistake.`, toolCalls: null },
      { role: 'assistant', content: null, toolCalls: [{ id: `c${i}_0`, name: 'get_order_details', arguments: { order_id: order }, requestor: 'assistant' }] },
      { role: 'tool', id: `c${i}_0`, content: `{"order_id": "${order}", "status": "pending", "total": ${10 + i}.5}`, requestor: 'assistant', error: false } as TrajectoryRecord['messages'][number],
      { role: 'user', content: null, toolCalls: [{ id: `u${i}`, name: 'toggle_data', arguments: {}, requestor: 'user' }] },
      { role: 'tool', id: `u${i}`, content: 'user-side tool output', requestor: 'user' },
      { role: 'assistant', content: `Order ${order} is pending. Shall I cancel it?`, toolCalls: null },
      { role: 'user', content: 'Yes please. Also check the other one.', toolCalls: null },
      {
        role: 'assistant', content: null, toolCalls: [
          { id: `c${i}_1`, name: 'cancel_pending_order', arguments: { order_id: order, reason: 'ordered by mistake' }, requestor: 'assistant' },
          { id: `c${i}_2`, name: 'get_order_details', arguments: { order_id: other }, requestor: 'assistant' },
        ],
      },
      { role: 'tool', id: `c${i}_1`, content: `{"order_id": "${order}", "status": "cancelled"}`, requestor: 'assistant' },
      { role: 'tool', id: `c${i}_2`, content: `{"order_id": "${other}", "status": "delivered"}`, requestor: 'assistant' },
      { role: 'assistant', content: `Done: ${order} is cancelled and ${other} was delivered.`, toolCalls: null },
    ],
  };
}

export function trajectories(n: number): TrajectoryRecord[] {
  return Array.from({ length: n }, (_, i) => trajectory(i));
}

/** A 2-layer MoE model small enough to train in a test. */
export function tinyConfig(vocab: number): GptOssConfig {
  return presetConfig('tiny-1m', {
    vocab_size: vocab, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, intermediate_size: 32, sliding_window: 16,
    initializer_range: 0.05,
  });
}

export function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-sft-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}
