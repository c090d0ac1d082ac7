/** Model checkpoints: safetensors (HF gpt-oss names, MXFP4 experts), GGUF export for llama.cpp, and the neutral tensor type. */
export * from './errors.ts';
export * from './dtypes.ts';
export * from './tensors.ts';
export * from './safetensors.ts';
export * from './sharded.ts';
export * from './mxfp4.ts';
export * from './hf-config.ts';
export * from './hf.ts';
export * from './gguf.ts';
export * from './gguf-writer.ts';
export * from './gguf-reader.ts';
export * from './gguf-tokenizer.ts';
export * from './gguf-export.ts';
export * from './model-io.ts';
export * from './commands.ts';
