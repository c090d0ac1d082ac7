import { Command } from 'commander';
import { register as analyze } from './analyze.ts';
import { register as dashboard } from './dashboard.ts';
import { register as demo } from './demo.ts';
import { register as env } from './env.ts';
import { register as evalCmd } from './eval.ts';
import { register as gen } from './gen.ts';
import { register as model } from './model.ts';
import { register as plot } from './plot.ts';
import { register as rollout } from './rollout.ts';
import { register as serve } from './serve.ts';
import { register as sft } from './sft.ts';
import { register as tau2 } from './tau2.ts';
import { register as train } from './train.ts';

const program = new Command();
program
  .name('longrun')
  .description('Efficient reinforcement learning for long-horizon, tool-using LLM agents')
  .version('0.1.0')
  .showHelpAfterError();

for (const reg of [tau2, env, gen, rollout, model, sft, train, plot, evalCmd, analyze, serve, dashboard, demo]) reg(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  console.error(`longrun: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
