/** The generic retail tools: `calculate` and `transfer_to_human_agents`. */
import { ToolError, type Tool } from '../../../tooluse/types.ts';
import type { RetailDb } from '../db.ts';
import { pythonCalculate } from '../calculate.ts';
import { pyIter, pyTypeName } from '../../../tooluse/python/pyvalue.ts';
import { defineTool } from './define.ts';

const ALLOWED_CHARS = '0123456789+-*/(). ';

/**
 * τ² first checks `all(char in "0123456789+-*\/(). " for char in expression)` and then calls `eval`. On a non-str
 * argument that loop iterates the value (list items are tested as substrings) and `eval` then refuses it.
 */
function calculate(args: Record<string, unknown>): string {
  const expression = args.expression;
  if (typeof expression === 'string') return pythonCalculate(expression);
  for (const part of pyIter(expression)) {
    if (typeof part !== 'string') {
      throw new ToolError(`'in <string>' requires string as left operand, not ${pyTypeName(part)}`);
    }
    if (!ALLOWED_CHARS.includes(part)) throw new ToolError('Invalid characters in expression');
  }
  throw new ToolError('eval() arg 1 must be a string, bytes or code object');
}

export const calculateTool: Tool<RetailDb> = defineTool({
  name: 'calculate',
  kind: 'generic',
  summary: 'Evaluate an arithmetic expression and return the result rounded to 2 decimal places.',
  params: [
    {
      name: 'expression',
      type: 'string',
      description:
        "The arithmetic expression, e.g. '12.5 * 3 + 4'. It may contain only digits, the operators + - * /, " +
        'parentheses, decimal points and spaces.',
    },
  ],
  run: (_db, args) => calculate(args),
});

export const transferToHumanAgentsTool: Tool<RetailDb> = defineTool({
  name: 'transfer_to_human_agents',
  kind: 'generic',
  summary: "Hand the user over to a human agent, together with a summary of the user's issue.",
  details:
    'Transfer only if the user explicitly asks for a human agent, or if the policy and the available tools do not ' +
    "allow you to resolve the user's issue.",
  params: [{ name: 'summary', type: 'string', description: "A short summary of the user's issue." }],
  run: () => 'Transfer successful',
});
