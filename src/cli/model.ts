import type { Command } from 'commander';
import { exportCommand, initCommand, logprobsCommand, parseTokenList, widenCommand } from '../model/checkpoint/commands.ts';
import type { StoredFloat } from '../model/checkpoint/hf.ts';
import { shipModelSettings } from '../recipes/model-settings.ts';
import { outFile } from './out-file.ts';

function count(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
    return n;
  };
}

function storedFloat(value: string): StoredFloat {
  const v = value.toUpperCase();
  if (v !== 'F32' && v !== 'BF16' && v !== 'F16') throw new Error(`--dtype must be f32, bf16 or f16, got '${value}'`);
  return v;
}

export function register(program: Command): void {
  const model = program.command('model').description('gpt-oss model checkpoints: create, convert, inspect');

  model
    .command('init')
    .description('randomly initialise a model from a preset and write it as a Hugging Face checkpoint directory')
    .requiredOption('--preset <name>', 'config preset, e.g. tiny-1m, tiny-10m, gpt-oss-20b')
    .requiredOption('--out <dir>', 'checkpoint directory to write (config.json + model.safetensors)')
    .option('--seed <n>', 'initialisation seed', '0')
    .option('--dtype <type>', 'stored element type: f32, bf16 or f16', 'f32')
    .option('--mxfp4', 'store expert weights as MXFP4 blocks/scales, like the released gpt-oss checkpoints')
    .action((o: { preset: string; out: string; seed: string; dtype: string; mxfp4?: boolean }) => {
      const r = initCommand({ preset: o.preset, out: o.out, seed: Number(o.seed), dtype: storedFloat(o.dtype), mxfp4: o.mxfp4 });
      console.log(`wrote ${r.dir} (${r.params.toLocaleString('en-US')} parameters): config.json, ${r.files.join(', ')}`);
    });

  model
    .command('export')
    .argument('<dir>', 'checkpoint directory')
    .description('convert a checkpoint to GGUF (llama.cpp gpt-oss) or to another safetensors checkpoint directory')
    .requiredOption('--format <format>', 'gguf or safetensors')
    .requiredOption('--out <path>', 'GGUF file, or checkpoint directory for safetensors')
    .option('--dtype <type>', 'gguf: f32|f16; safetensors: f32|bf16|f16', 'f32')
    .option('--mxfp4', 'safetensors: store expert weights as MXFP4')
    .option('--tokenizer <file>', 'gguf: longrun BPE tokenizer JSON to embed as tokenizer.ggml.*')
    .option('--name <name>', 'gguf: general.name')
    .option('--gguf-pre <name>', 'gguf: write this llama.cpp pre-tokenizer name even if it splits text differently from the tokenizer')
    .option('--allow-yarn-truncate', 'gguf: write a rope_scaling.truncate: false model anyway (llama.cpp runs it with truncated YaRN dims)')
    .action((dir: string, o: { format: string; out: string; dtype: string; mxfp4?: boolean; tokenizer?: string; name?: string; ggufPre?: string; allowYarnTruncate?: boolean }) => {
      if (o.format !== 'gguf' && o.format !== 'safetensors') throw new Error(`--format must be gguf or safetensors, got '${o.format}'`);
      const r = exportCommand(dir, {
        format: o.format, out: o.format === 'gguf' ? outFile(o.out) : o.out, dtype: storedFloat(o.dtype), mxfp4: o.mxfp4, tokenizer: o.tokenizer, name: o.name,
        ggufPre: o.ggufPre, allowYarnTruncate: o.allowYarnTruncate,
      });
      for (const w of r.warnings) console.error(`warning: ${w}`);
      console.log(`wrote ${r.out} (${r.bytes} bytes)`);
      if (o.format === 'gguf' && o.tokenizer === undefined) console.error('note: no --tokenizer given, so the file has no tokenizer.ggml.* vocabulary; llama.cpp needs one to load it');
    });

  model
    .command('widen')
    .argument('<dir>', 'checkpoint directory (config.json + safetensors), e.g. models/retail-base')
    .description('add attention heads without changing what the model computes: copies of its key/value heads, zero-output query heads')
    .requiredOption('--out <dir>', 'folder to write the widened checkpoint to (with the tokenizer.json and longrun.json of <dir>)')
    .option('--kv-heads <n>', 'key/value heads of the result: a multiple of the checkpoint\'s (up to the query heads: multi-head attention)', count('--kv-heads'))
    .option('--query-heads <n>', 'query heads of the result: at least the checkpoint\'s; added heads start with zero o_proj columns', count('--query-heads'))
    .option('--seed <n>', 'seed of the added query heads\' q rows', '0')
    .action((dir: string, o: { out: string; kvHeads?: number; queryHeads?: number; seed: string }) => {
      const seed = Number(o.seed);
      if (!Number.isSafeInteger(seed)) throw new Error(`--seed must be an integer, got ${JSON.stringify(o.seed)}`);
      const r = widenCommand(dir, { out: o.out, kvHeads: o.kvHeads, queryHeads: o.queryHeads, seed });
      console.log(`wrote ${r.out}: ${r.paramsBefore.toLocaleString('en-US')} → ${r.params.toLocaleString('en-US')} parameters (${[...r.files, ...r.copied].join(', ')})`);
    });

  model
    .command('probe')
    .description("play the small seeded probe of a model folder's card (card.json: probe) and compare the rewards with the card's, episode for episode")
    .argument('<dir>', 'a model folder with card.json and longrun.json, e.g. models/retail-base')
    .option('--write', "store the probe's result in card.json instead of comparing")
    .action(async (dir: string, o: { write?: boolean }) => {
      const { readCardProbe, runCardProbe, writeCardProbeResult } = await import('./card-probe.ts');
      const probe = readCardProbe(dir);
      const t0 = performance.now();
      const got = await runCardProbe(dir, probe);
      const seconds = ((performance.now() - t0) / 1000).toFixed(1);
      const episodes = Object.keys(got.rewards).length;
      if (o.write) {
        writeCardProbeResult(dir, got);
        console.log(`probe: ${episodes} episodes, mean reward ${got.meanReward.toFixed(4)} (${seconds} s) → ${dir}/card.json`);
        return;
      }
      if (!probe.result) throw new Error(`${dir}/card.json: the probe has no result to compare with; run with --write first`);
      const differ = Object.keys({ ...probe.result.rewards, ...got.rewards }).filter((k) => probe.result!.rewards[k] !== got.rewards[k]);
      console.log(`probe: ${episodes} episodes, mean reward ${got.meanReward.toFixed(4)}, card ${probe.result.meanReward.toFixed(4)}; ${differ.length === 0 ? 'every episode as the card says' : `${differ.length} episode(s) differ: ${differ.slice(0, 8).join(', ')}`} (${seconds} s)`);
      if (differ.length > 0) process.exitCode = 1;
    });

  model
    .command('settings')
    .description("write a model folder's prompt settings (longrun.json) from the run file that trained it, so `longrun eval --agent checkpoint` plays it as trained")
    .requiredOption('--checkpoint <dir>', 'the trained model folder (config.json + safetensors), e.g. runs/x/sft/model or a GRPO checkpoint\'s model')
    .requiredOption('--from-run <file>', 'the run file (`longrun train --config`) that trained it; task retail-synth')
    .option('--out <dir>', 'ship to this folder: copy the model files there, then write longrun.json (e.g. models/<name>)')
    .option('--temperature <t>', 'sampling temperature the card is measured at (default: the run\'s grpo.trainer.valTemperature)', (v: string) => {
      const t = Number(v);
      if (!Number.isFinite(t) || t < 0) throw new Error(`--temperature must be a non-negative number, got ${JSON.stringify(v)}`);
      return t;
    })
    .option('--max-turns <n>', 'assistant turns per episode (default: grpo.rollout.maxTurns)', count('--max-turns'))
    .option('--max-response-tokens <n>', 'token budget after the prompt (default: grpo.rollout.maxResponseTokens)', count('--max-response-tokens'))
    .option('--max-tokens-per-turn <n>', 'sampled tokens per turn (default: grpo.rollout.maxTokensPerTurn)', count('--max-tokens-per-turn'))
    .option('--force', 'replace a longrun.json (or, with --out, a model) that differs')
    .addHelpText('after', [
      '',
      'longrun.json records what the model was trained and measured with: chat format, tokenizer, the policy text of the',
      "system prompt (compact, or the text itself), the tool-schema style (full | compact, τ²'s done tool included),",
      'the tool set, the user simulator, sampling (temperature, top-p, top-k) and the agent-loop limits (turns, response',
      "tokens, tokens per turn, env steps and errors). The run's BPE tokenizer is copied in as tokenizer.json when the",
      'folder has none. A run file without a grpo section (pretraining) needs --temperature, --max-turns and',
      '--max-response-tokens. Shipping a model is one command:',
      '  longrun model settings --checkpoint runs/x/sft/model --from-run presets/x.yaml --out models/<name>',
    ].join('\n'))
    .action((o: { checkpoint: string; fromRun: string; out?: string; temperature?: number; maxTurns?: number; maxResponseTokens?: number; maxTokensPerTurn?: number; force?: boolean }) => {
      const r = shipModelSettings({
        checkpoint: o.checkpoint, runFile: o.fromRun, out: o.out, force: o.force,
        overrides: { temperature: o.temperature, maxTurns: o.maxTurns, maxResponseTokens: o.maxResponseTokens, maxTokensPerTurn: o.maxTokensPerTurn },
      });
      for (const l of r.log) console.log(l);
    });

  model
    .command('logprobs')
    .argument('<dir>', 'checkpoint directory')
    .description('print {"logprobs": [[...], ...]}: the full-vocabulary log-softmax at each position of --tokens')
    .requiredOption('--tokens <ids>', 'comma-separated token ids, e.g. 1,2,3')
    .action((dir: string, o: { tokens: string }) => {
      console.log(JSON.stringify({ logprobs: logprobsCommand(dir, parseTokenList(o.tokens)) }));
    });
}
