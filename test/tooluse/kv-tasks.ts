/** Tasks for the fake key-value domain, written as τ² task JSON and parsed with the real schema. */
import type { Task } from '../../src/tooluse/tasks.ts';
import { parseTasks } from '../../src/tooluse/tasks.ts';

export const KV_TASKS: Task[] = parseTasks([
  {
    id: 'paint',
    user_scenario: {
      instructions: {
        domain: 'kv',
        reason_for_call: 'You want the apple to be green and the cherry to exist as dark red.',
        known_info: 'You are the store owner.',
        unknown_info: null,
        task_instructions: 'Be brief.',
      },
    },
    evaluation_criteria: {
      actions: [
        { action_id: 'paint_0', name: 'get_value', arguments: { key: 'apple' } },
        { action_id: 'paint_1', name: 'set_value', arguments: { key: 'apple', value: 'green' } },
        { action_id: 'paint_2', name: 'delete_value', arguments: { key: 'nothing' } },
        { action_id: 'paint_3', name: 'set_value', arguments: { key: 'cherry', value: 'dark red' } },
      ],
      communicate_info: ['1093.34', 'Green'],
    },
  },
  {
    id: 'judge',
    user_scenario: { instructions: 'Ask what colour the banana is.' },
    evaluation_criteria: {
      actions: [{ action_id: 'judge_0', name: 'get_value', arguments: { key: 'banana' }, compare_args: [] }],
      nl_assertions: ['Agent says the banana is yellow.', 'Agent is polite.'],
      reward_basis: ['DB', 'NL_ASSERTION'],
    },
  },
]);
