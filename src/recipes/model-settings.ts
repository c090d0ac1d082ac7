/**
 * A model folder's prompt settings, `longrun.json`: what the agent's prompt and sampling looked like when the model was
 * trained and measured, so `longrun eval --agent checkpoint --checkpoint DIR` shows it the same tokens with no flags.
 *
 * ```json
 * { "format": "longrun-model-settings", "version": 1,
 *   "chatFormat": "harmony", "tokenizer": "tokenizer.json",
 *   "policy": "compact", "tools": "compact", "toolSet": "v1", "user": "scripted",
 *   "temperature": 1, "topP": 1, "topK": -1,
 *   "maxTurns": 24, "maxResponseTokens": 4608, "maxTokensPerTurn": 160, "maxSteps": 200, "maxErrors": 10,
 *   "onParseError": "send-text", "source": { "runFile": "presets/retail-grpo.yaml" } }
 * ```
 * - `policy`: the policy text inside τ²'s agent system prompt (`agentSystemPrompt`): `compact` (COMPACT_RETAIL_POLICY),
 *   `tau2` (policy.md of the τ² retail data on this machine) or `{ "text": "…" }` (the exact text). Never the task
 *   folder's policy.md: a task set from `longrun gen tasks` ships τ²'s policy whatever the model was trained on.
 * - `tools`: the env's tool schemas with τ²'s `done` last, in full or `compact` (compactToolSpecs); `toolSet` is the
 *   retail tool set (`v1`: 16 tools, `v0`: without get_item_details).
 * - `tokenizer`: a file in the model folder, or `o200k_harmony`.
 * - Sampling and the agent-loop limits (src/rollout/agent-loop.ts) the model card's numbers were measured with; the env
 *   greets first with τ²'s greeting, as in training.
 *
 * - `env`: for a run on an env defined with defineEnv (the run file's `env:` section): the module (or id) it names.
 *   The system prompt is then the env's own instructions and its tools, so there is no `policy`; `toolSet` and `user`
 *   describe the retail envs only.
 *
 * Written by `longrun model settings --checkpoint DIR --from-run RUN.yaml` (settingsFromRun): the same system prompt
 * and tool style `buildRun` gives the in-process rollouts of that run file.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { z } from 'zod';
import { resolveRetailDataDir } from '../domains/retail/register.ts';
import type { ToolSpec } from '../llm/index.ts';
import { agentSystemPrompt } from '../tooluse/openai.ts';
import { COMPACT_RETAIL_POLICY, compactToolSpecs, PrepareSchema, type ToolSchemaStyle } from './retail/prepare.ts';
import { retailTaskOptions } from './retail/run-section.ts';
import { readConfigFile } from './config-file.ts';
import { parseStagesRunFile } from './train-setup.ts';

export const MODEL_SETTINGS_FILE = 'longrun.json';
export const MODEL_SETTINGS_FORMAT = 'longrun-model-settings';
export const MODEL_SETTINGS_VERSION = 1;

const positive = z.number().int().positive();

export const PolicySettingSchema = z.union([z.enum(['compact', 'tau2']), z.object({ text: z.string().min(1) }).strict()]);
export type PolicySetting = z.infer<typeof PolicySettingSchema>;

export const ModelSettingsSchema = z.object({
  format: z.literal(MODEL_SETTINGS_FORMAT),
  version: z.literal(MODEL_SETTINGS_VERSION),
  chatFormat: z.enum(['harmony', 'hermes']),
  tokenizer: z.string().min(1).default('tokenizer.json'),
  /** Retail runs: the policy text in τ²'s agent prompt. Absent for a run on a defined env (its instructions are the prompt). */
  policy: PolicySettingSchema.optional(),
  /** A run on an env defined with defineEnv: the module (as the run file names it, relative to the working folder) or id. */
  env: z.object({ module: z.string().min(1).optional(), id: z.string().min(1).optional(), export: z.string().min(1).optional() }).strict().optional(),
  tools: z.enum(['full', 'compact']),
  toolSet: z.enum(['v1', 'v0']).default('v1'),
  user: z.enum(['scripted', 'ticket', 'llm']).default('scripted'),
  temperature: z.number().min(0),
  topP: z.number().gt(0).max(1).default(1),
  /** −1 = off. */
  topK: z.number().int().min(-1).default(-1),
  maxTurns: positive,
  maxResponseTokens: positive,
  maxTokensPerTurn: positive.optional(),
  maxSteps: positive.default(200),
  maxErrors: positive.default(10),
  onParseError: z.enum(['send-text', 'terminate']).default('send-text'),
  /** Where the settings came from (informational). */
  source: z.object({ runFile: z.string().optional() }).strict().optional(),
}).strict().refine((s) => s.policy !== undefined || s.env !== undefined, { message: 'policy is required (compact, tau2 or { text }) unless the settings are for a run on a defined env (env)', path: ['policy'] });

export type ModelSettings = z.infer<typeof ModelSettingsSchema>;
export type ModelSettingsInput = z.input<typeof ModelSettingsSchema>;

function issues(error: z.ZodError): string {
  return error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`).join('\n');
}

/** Validates settings already read; `file` names the source in errors. */
export function parseModelSettings(raw: unknown, file: string): ModelSettings {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${file}: model settings must be a JSON object`);
  const head = raw as { format?: unknown; version?: unknown };
  if (head.format !== MODEL_SETTINGS_FORMAT) throw new Error(`${file}: not a longrun model-settings file ("format" is ${JSON.stringify(head.format)}, expected "${MODEL_SETTINGS_FORMAT}")`);
  if (head.version !== MODEL_SETTINGS_VERSION) throw new Error(`${file}: model settings version ${JSON.stringify(head.version)} is not supported (this longrun reads version ${MODEL_SETTINGS_VERSION}); rewrite it with \`longrun model settings\``);
  const r = ModelSettingsSchema.safeParse(raw);
  if (!r.success) throw new Error(`${file}: invalid model settings:\n${issues(r.error)}`);
  return r.data;
}

/** `DIR/longrun.json`, or null when the folder has none. */
export function readModelSettings(dir: string): { settings: ModelSettings; file: string } | null {
  const file = join(dir, MODEL_SETTINGS_FILE);
  if (!existsSync(file)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: not valid JSON (${(e as Error).message}); rewrite it with \`longrun model settings\``, { cause: e });
  }
  return { settings: parseModelSettings(raw, file), file };
}

export function writeModelSettings(dir: string, settings: ModelSettingsInput): { settings: ModelSettings; file: string } {
  const file = join(dir, MODEL_SETTINGS_FILE);
  const parsed = parseModelSettings(settings, file);
  writeFileSync(file, JSON.stringify(parsed, null, 2) + '\n');
  return { settings: parsed, file };
}

/** The policy text a setting names (`tau2` reads policy.md of the τ² retail data, `dataDir` or the default folder). */
export function policySettingText(policy: PolicySetting, dataDir?: string): string {
  if (typeof policy === 'object') return policy.text;
  if (policy === 'compact') return COMPACT_RETAIL_POLICY;
  const file = join(resolveRetailDataDir(dataDir), 'policy.md');
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`policy tau2: cannot read ${file} (${(e as Error).message}); point --data or LONGRUN_TAU2_RETAIL at τ²'s retail data`, { cause: e });
  }
}

/** A policy given on the command line: `compact`, `tau2` or a file holding the text. */
export function policySettingFromFlag(value: string): PolicySetting {
  if (value === 'compact' || value === 'tau2') return value;
  try {
    return { text: readFileSync(value, 'utf8') };
  } catch (e) {
    throw new Error(`--policy: cannot read ${value} (${(e as Error).message}); give compact, tau2 or a policy file`, { cause: e });
  }
}

export function describePolicy(policy: PolicySetting): string {
  return typeof policy === 'object' ? `inline text (${policy.text.length} characters)` : policy;
}

/** The env's tools (τ²'s `done` last) as the prompt shows them in this style. */
export function toolsInStyle(style: ToolSchemaStyle): (envTools: readonly ToolSpec[]) => ToolSpec[] {
  return (envTools) => (style === 'compact' ? compactToolSpecs(envTools) : [...envTools]);
}

/** The agent's view for these settings: τ²'s system prompt around the policy text, the env's tools in the given style. */
export function agentPrompt(policy: PolicySetting, tools: ToolSchemaStyle, dataDir?: string): { systemPrompt: string; tools: (envTools: readonly ToolSpec[]) => ToolSpec[] } {
  return { systemPrompt: agentSystemPrompt(policySettingText(policy, dataDir)), tools: toolsInStyle(tools) };
}

export interface SettingsOverrides {
  temperature?: number;
  maxTurns?: number;
  maxResponseTokens?: number;
  maxTokensPerTurn?: number;
}

/** A path as written into a shipped file: relative to the working folder when it lies inside it, else its name only. */
function portablePath(path: string): string {
  if (!isAbsolute(path)) return path;
  const rel = relative(process.cwd(), path);
  return rel.startsWith('..') || isAbsolute(rel) ? path.split(/[\\/]/).pop()! : rel;
}

/**
 * The settings of a `retail-synth` run file, or of a run on an env defined with defineEnv (`env:`): the chat format
 * and tool style of its policy and task options, the policy text its training task set carries (what `buildRun` puts
 * in the system prompt; a defined env: its own instructions, so the settings name the env instead), the GRPO
 * section's rollout limits and validation temperature. A run file without a GRPO section (a pretraining run) needs
 * the limits as overrides.
 */
export function settingsFromRun(raw: unknown, options: { runFile?: string; overrides?: SettingsOverrides } = {}): ModelSettings {
  const { run, trainer } = parseStagesRunFile(raw);
  const where = options.runFile ?? 'the run file';
  if (run.env === undefined && run.task !== 'retail-synth') throw new Error(`${where}: model settings are written for runs on an env defined with defineEnv (env:) and task retail-synth runs (the scripted-user synthetic tasks); this run's task is ${run.task}`);
  const o = options.overrides ?? {};
  const e = run.env;
  const promptSource = e !== undefined
    ? { env: { ...(e.module !== undefined ? { module: portablePath(e.module) } : {}), ...(e.id !== undefined ? { id: e.id } : {}), ...(e.export !== undefined ? { export: e.export } : {}) } }
    : { policy: runPolicy(run.retail?.tasks.dataDir, run.retail?.prepare, where) };
  const rollout = trainer?.rollout;
  const maxTurns = o.maxTurns ?? rollout?.maxTurns;
  const maxResponseTokens = o.maxResponseTokens ?? rollout?.maxResponseTokens;
  const temperature = o.temperature ?? (trainer ? trainer.trainer.valTemperature : undefined);
  const missing = [maxTurns === undefined && '--max-turns', maxResponseTokens === undefined && '--max-response-tokens', temperature === undefined && '--temperature'].filter(Boolean);
  if (missing.length) throw new Error(`${where} has no grpo section to take the rollout limits from; give ${missing.join(', ')} (the settings the model card was measured with)`);
  const tokenizer = run.policy.tokenizer === 'o200k_harmony' ? 'o200k_harmony' : 'tokenizer.json';
  const maxTokensPerTurn = o.maxTokensPerTurn ?? rollout?.maxTokensPerTurn;
  return parseModelSettings({
    format: MODEL_SETTINGS_FORMAT,
    version: MODEL_SETTINGS_VERSION,
    chatFormat: run.policy.format,
    tokenizer,
    ...promptSource,
    tools: retailTaskOptions(run).tools,
    toolSet: 'v1',
    user: 'scripted',
    temperature,
    topP: rollout?.topP ?? 1,
    topK: rollout?.topK !== undefined && rollout.topK > 0 ? rollout.topK : -1,
    maxTurns,
    maxResponseTokens,
    ...(maxTokensPerTurn !== undefined ? { maxTokensPerTurn } : {}),
    maxSteps: retailTaskOptions(run).maxSteps ?? 200,
    maxErrors: 10,
    onParseError: rollout?.onParseError ?? 'send-text',
    ...(options.runFile ? { source: { runFile: portablePath(options.runFile) } } : {}),
  }, where);
}

/** The policy the run's training task set carries (its policy.md), else the one its data stage (retail.prepare) names. */
function runPolicy(dataDir: string | undefined, prepare: unknown, where: string): PolicySetting {
  const asSetting = (text: string): PolicySetting => (text === COMPACT_RETAIL_POLICY ? 'compact' : { text });
  const file = dataDir === undefined ? undefined : join(dataDir, 'policy.md');
  if (file && existsSync(file)) return asSetting(readFileSync(file, 'utf8'));
  const p = prepare === undefined ? undefined : PrepareSchema.safeParse(prepare);
  if (p?.success) {
    const name = p.data.tasks.policy;
    if (name === 'compact') return 'compact';
    if (name === 'tau2') return { text: policySettingText('tau2') };
    try {
      return asSetting(readFileSync(name, 'utf8'));
    } catch (e) {
      throw new Error(`${where}: cannot read the policy file ${name} of its retail.prepare section (${(e as Error).message})`, { cause: e });
    }
  }
  throw new Error(`${where}: cannot tell the policy text: ${file ? `${file} does not exist` : 'retail.tasks.dataDir is not set'} and the run has no retail.prepare section naming it`);
}

/** Files of a model folder that travel with it when shipped (weights, HF config, tokenizer). */
const MODEL_FILE = /^(config\.json|generation_config\.json|tokenizer\.json|.*\.safetensors|model\.safetensors\.index\.json)$/;

export interface ShipOptions {
  /** The trained model folder (config.json + safetensors). */
  checkpoint: string;
  /** The run file that trained it (YAML or JSON). */
  runFile: string;
  /** Copy the model there and write the settings there (e.g. models/<name>); default: into `checkpoint`. */
  out?: string;
  overrides?: SettingsOverrides;
  /** Replace an existing longrun.json (or model files under `out`) that differs. */
  force?: boolean;
}

/**
 * `longrun model settings`: the run file's settings (settingsFromRun) written as DIR/longrun.json, with the run's
 * BPE tokenizer copied in as DIR/tokenizer.json when the folder has none (an SFT run keeps it beside `model/`); with
 * `out`, the model's files are copied there first. A folder whose tokenizer differs from the run's is refused.
 */
export function shipModelSettings(o: ShipOptions): { dir: string; file: string; settings: ModelSettings; log: string[] } {
  const src = o.checkpoint;
  if (!existsSync(join(src, 'config.json'))) throw new Error(`--checkpoint ${src}: not a model folder (no config.json)`);
  const raw = readConfigFile(o.runFile, '--from-run');
  const settings = settingsFromRun(raw, { runFile: o.runFile, overrides: o.overrides });
  const { run } = parseStagesRunFile(raw);
  const log: string[] = [];
  const dir = o.out ?? src;
  const target = join(dir, MODEL_SETTINGS_FILE);
  if (existsSync(target) && !o.force) {
    const old = readModelSettings(dir)!.settings as Record<string, unknown>;
    const now = settings as Record<string, unknown>;
    // Where the settings came from is informational: only the settings themselves must agree.
    const keys = Object.keys({ ...old, ...now }).filter((k) => k !== 'source' && JSON.stringify(old[k]) !== JSON.stringify(now[k]));
    if (keys.length) {
      throw new Error(`${target} already holds other settings (${keys.join(', ')} differ); pass --force to replace it`);
    }
  }
  if (o.out !== undefined) {
    if (existsSync(join(o.out, 'config.json')) && !o.force && !sameFile(join(o.out, 'config.json'), join(src, 'config.json'))) throw new Error(`--out ${o.out} already holds another model; pass --force to overwrite it`);
    mkdirSync(o.out, { recursive: true });
    const files = readdirSync(src).filter((f) => MODEL_FILE.test(f));
    for (const f of files) copyFileSync(join(src, f), join(o.out, f));
    log.push(`copied ${files.join(', ')} → ${o.out}`);
  }
  if (settings.tokenizer !== 'o200k_harmony') {
    const have = join(dir, settings.tokenizer);
    const runTokenizer = run.policy.tokenizer;
    if (!existsSync(have)) {
      if (!runTokenizer || !existsSync(runTokenizer)) throw new Error(`${dir} has no ${settings.tokenizer} and the run's tokenizer ${runTokenizer ?? '(policy.tokenizer not set)'} does not exist; copy the tokenizer the model was trained with into ${dir}`);
      copyFileSync(runTokenizer, have);
      log.push(`copied the run's tokenizer ${runTokenizer} → ${have}`);
    } else if (runTokenizer && existsSync(runTokenizer) && !sameFile(runTokenizer, have)) {
      throw new Error(`${have} differs from the run's tokenizer ${runTokenizer}: the model folder does not belong to this run file`);
    }
  }
  const written = writeModelSettings(dir, settings);
  const prompt = settings.policy !== undefined ? `policy ${describePolicy(settings.policy)}` : `the instructions of env ${settings.env?.id ?? settings.env?.module}`;
  log.push(`wrote ${written.file}: chat format ${settings.chatFormat}, ${prompt}, tools ${settings.tools}, temperature ${settings.temperature}, ` +
    `max turns ${settings.maxTurns}, max response tokens ${settings.maxResponseTokens}${settings.maxTokensPerTurn !== undefined ? `, max tokens per turn ${settings.maxTokensPerTurn}` : ''}, max steps ${settings.maxSteps}`);
  return { dir, file: written.file, settings, log };
}

function sameFile(a: string, b: string): boolean {
  return readFileSync(a).equals(readFileSync(b));
}
