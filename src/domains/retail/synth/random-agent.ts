/**
 * A seeded random agent, the floor a trained model must beat: each turn it either calls a random tool with random
 * arguments of the right JSON types (strings shaped like retail ids half of the time) or sends random words.
 */
import type { Json } from '../../../tooluse/types.ts';
import type { AgentEpisodeContext, AgentSession, SynthAgent } from './agent.ts';
import { SynthRng } from './rng.ts';

const WORDS = ['hello', 'order', 'cancel', 'sure', 'please', 'item', 'yes', 'no', 'refund', 'account', 'help', 'thanks', 'the', 'a', 'your', 'is', 'done'];

function randomString(rng: SynthRng): string {
  switch (rng.int(0, 4)) {
    case 0:
      return '#W' + rng.digits(7, true);
    case 1:
      return rng.digits(10, true);
    case 2:
      return rng.pick(['credit_card_', 'gift_card_', 'paypal_']) + rng.digits(7, true);
    default:
      return rng.pick(WORDS);
  }
}

function randomValue(schema: Json | undefined, rng: SynthRng): unknown {
  const type = schema && typeof schema === 'object' && !Array.isArray(schema) ? schema.type : undefined;
  if (type === 'array') return Array.from({ length: rng.int(0, 2) }, () => randomString(rng));
  if (type === 'number' || type === 'integer') return rng.int(0, 100);
  if (type === 'boolean') return rng.chance(0.5);
  return randomString(rng);
}

class RandomSession implements AgentSession {
  constructor(
    private readonly context: AgentEpisodeContext,
    private readonly rng: SynthRng,
    private readonly toolProbability: number,
  ) {}

  act(): { content: string | null; toolCalls: { name: string; arguments: Record<string, unknown> }[] | null } {
    const tools = this.context.tools;
    if (tools.length > 0 && this.rng.chance(this.toolProbability)) {
      const tool = this.rng.pick(tools).function;
      const props = (tool.parameters.properties ?? {}) as Record<string, Json>;
      const args = Object.fromEntries(Object.keys(props).map((k) => [k, randomValue(props[k], this.rng)]));
      return { content: null, toolCalls: [{ name: tool.name, arguments: args }] };
    }
    const words = Array.from({ length: this.rng.int(1, 12) }, () => this.rng.pick(WORDS));
    return { content: words.join(' '), toolCalls: null };
  }
}

export class RandomAgent implements SynthAgent {
  readonly name = 'random';
  constructor(private readonly toolProbability = 0.5) {
    if (!(toolProbability >= 0 && toolProbability <= 1)) throw new Error(`toolProbability must be in [0, 1], got ${toolProbability}`);
  }

  start(context: AgentEpisodeContext): AgentSession {
    return new RandomSession(context, new SynthRng(context.seed), this.toolProbability);
  }
}
