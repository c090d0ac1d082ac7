/** The gpt-oss model family: configs, parameters, the model with explicit backward, LoRA, generation. */
export { defaultLayerTypes, presetConfig, PRESETS, validateConfig, type GptOssConfig, type GptOssConfigInput, type LayerType, type PresetName, type YarnScaling } from './config.ts';
export { countParams, layerPrefix, paramShapes, paramSpecs, type ParamCount, type ParamKind, type ParamSpec } from './params.ts';
export { packBatch, type ModelInput, type PackedBatch } from './batch.ts';
export { GptOssModel, type ForwardOptions, type ForwardResult, type LayerParams, type ModelOptions } from './model.ts';
export { applyLora, type LoraConfig, type LoraTarget } from './lora.ts';
export { createCaches, decodeStep, generate, prefill, type GenerateOptions, type GenerateResult, type GeneratedSequence, type SequenceCache } from './generate.ts';
export { LayerKvCache } from './kvcache.ts';
export { sampleToken, validateSampling, type SamplingOptions } from './sampling.ts';
export { RopeTable, yarnParams, type YarnParams } from './layers/rope.ts';
export { route, type Routing } from './layers/moe.ts';
export { TAG as MODEL_TAGS, type Impl } from './layers/context.ts';
