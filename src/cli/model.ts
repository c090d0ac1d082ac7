import type { Command } from 'commander';
import { exportCommand, initCommand, logprobsCommand, parseTokenList } from '../model/checkpoint/commands.ts';
import type { StoredFloat } from '../model/checkpoint/hf.ts';

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
    .action((dir: string, o: { format: string; out: string; dtype: string; mxfp4?: boolean; tokenizer?: string; name?: string }) => {
      if (o.format !== 'gguf' && o.format !== 'safetensors') throw new Error(`--format must be gguf or safetensors, got '${o.format}'`);
      const r = exportCommand(dir, { format: o.format, out: o.out, dtype: storedFloat(o.dtype), mxfp4: o.mxfp4, tokenizer: o.tokenizer, name: o.name });
      console.log(`wrote ${r.out} (${r.bytes} bytes)`);
      if (o.format === 'gguf' && o.tokenizer === undefined) console.error('note: no --tokenizer given, so the file has no tokenizer.ggml.* vocabulary; llama.cpp needs one to load it');
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
