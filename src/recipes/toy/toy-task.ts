/**
 * Wiring for the toy tool-use task: tokenizer + chat format + env factory + a tabular policy with a weak
 * "pre-trained" format prior (it mostly follows the call/answer grammar but picks tools and arguments at random),
 * so RL has to learn which tool and argument each task cue wants.
 */
import { ToyChatFormat, WordTokenizer } from './toy-format.ts';
import { TOY_ARGS, TOY_TOOLS, ToyToolEnv, toyWords } from '../../domains/toy/toy-env.ts';
import { TabularEngine, TabularPolicy } from './tabular-policy.ts';

export interface ToySetupOptions {
  /** Adam learning rate of the tabular policy (default 0.3). */
  lr?: number;
  /** Prior logit of the grammatical next token (default 4). */
  formatPrior?: number;
}

export function createToySetup(options: ToySetupOptions = {}) {
  const tokenizer = new WordTokenizer(toyWords());
  const format = new ToyChatFormat(tokenizer);
  const id = (w: string) => tokenizer.idOf(w);
  const asst = tokenizer.specialId('<asst>');
  const end = tokenizer.specialId('<end>');
  const cues = new Map(Array.from({ length: 4 }, (_, k) => [id(`cue_${k}`), k]));
  const tools = TOY_TOOLS.map(id);
  const args = Array.from({ length: TOY_ARGS }, (_, i) => id(`arg_${i}`));

  /** Key = task cue | assistant-turn index (capped at 3) | previous token. */
  const contextKey = (prefix: readonly number[]): string => {
    let cue = -1;
    let turn = 0;
    for (const t of prefix) {
      const c = cues.get(t);
      if (c !== undefined) cue = c;
      if (t === asst) turn++;
    }
    return `${cue}|${Math.min(turn, 3)}|${prefix.length ? prefix[prefix.length - 1] : -1}`;
  };

  const bias = options.formatPrior ?? 4;
  const prior = (key: string): Float64Array => {
    const [, turnS, prevS] = key.split('|');
    const turn = Number(turnS);
    const prev = Number(prevS);
    const z = new Float64Array(tokenizer.vocabSize);
    if (prev === asst) z[turn <= 1 ? id('call') : id('done')] = bias;
    else if (prev === id('call')) for (const t of tools) z[t] = bias;
    else if (tools.includes(prev)) for (const a of args) z[a] = bias;
    else if (args.includes(prev) || prev === id('done')) z[end] = bias + 2;
    return z;
  };

  const policy = new TabularPolicy({ vocabSize: tokenizer.vocabSize, contextKey, prior, lr: options.lr });
  return {
    tokenizer,
    format,
    policy,
    engine: new TabularEngine(policy),
    makeEnv: () => new ToyToolEnv(),
    taskIds: Array.from({ length: 4 }, (_, k) => `toy-${k}`),
    padId: tokenizer.specialId('<pad>'),
  };
}
