import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BpeTokenizer } from '../../../src/llm/index.ts';
import { LLAMA_CPP_PRETOKENIZER_PATTERNS, choosePretokenizer } from '../../../src/model/checkpoint/gguf-tokenizer.ts';
import { COMPACT_RETAIL_POLICY, prepareRetailData, taskSignature } from '../../../src/recipes/retail/prepare.ts';
import type { SynthTask } from '../../../src/domains/retail/synth/task-gen.ts';
import type { AgentEnv } from '../../../src/rollout/agent-loop.ts';

describe('prepare (the data stage of a retail-synth run)', () => {
  it('writes seeded splits, expert trajectories and a tokenizer; reuses them for the same section and refuses a different one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-prepare-'));
    try {
      const section = { dir, seed: 5, tasks: { train: 3, validation: 2, difficulty: 1, policy: 'compact', users: 10, orders: 20 }, tokenizer: { vocabSize: 300 } };
      const a = await prepareRetailData(section);
      assert.equal(a.reused, false);
      const tasks = JSON.parse(readFileSync(join(a.trainDir, 'tasks.json'), 'utf8')) as { id: string }[];
      assert.equal(tasks.length, 3);
      assert.equal((JSON.parse(readFileSync(join(a.validationDir, 'tasks.json'), 'utf8')) as unknown[]).length, 2);
      assert.equal(readFileSync(join(a.trainDir, 'policy.md'), 'utf8'), COMPACT_RETAIL_POLICY);
      const lines = readFileSync(a.trajectories, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { taskId: string; reward: number });
      assert.deepEqual(lines.map((l) => l.taskId), tasks.map((t) => t.id));
      assert.ok(lines.every((l) => l.reward === 1));
      assert.equal(BpeTokenizer.load(a.tokenizer).vocabSize, 300);
      const trajectories = readFileSync(a.trajectories, 'utf8');

      const b = await prepareRetailData(section);
      assert.equal(b.reused, true);
      assert.equal(readFileSync(b.trajectories, 'utf8'), trajectories);
      await assert.rejects(prepareRetailData({ ...section, seed: 6 }), /different retail\.prepare section/);
      await assert.rejects(prepareRetailData({ ...section, tasks: { ...section.tasks, train: 0 } }), /prepare\.tasks\.train/);

      // Same section in another folder: the same files (seeded).
      const other = mkdtempSync(join(tmpdir(), 'longrun-prepare-'));
      try {
        const c = await prepareRetailData({ ...section, dir: other });
        assert.equal(readFileSync(c.trajectories, 'utf8').replaceAll(other, dir), trajectories);
        assert.equal(readFileSync(c.tokenizer, 'utf8'), readFileSync(a.tokenizer, 'utf8'));
        // digits: single gives a tokenizer that reads every digit as its own token.
        const d = await prepareRetailData({ ...section, dir: join(other, 'single'), tokenizer: { vocabSize: 300, digits: 'single' } });
        const single = BpeTokenizer.load(d.tokenizer);
        assert.deepEqual(single.encode('#W4615687').map((id) => single.decode([id])).filter((p) => /\d/.test(p)), [...'4615687']);
        assert.notEqual(readFileSync(d.tokenizer, 'utf8'), readFileSync(a.tokenizer, 'utf8'));
        // digits: single-llama splits like llama.cpp's starcoder pre-tokenizer, which the GGUF export names.
        const e = await prepareRetailData({ ...section, dir: join(other, 'llama'), tokenizer: { vocabSize: 300, digits: 'single-llama' } });
        assert.equal((JSON.parse(readFileSync(e.tokenizer, 'utf8')) as { pattern: string }).pattern, LLAMA_CPP_PRETOKENIZER_PATTERNS.starcoder);
        assert.equal(choosePretokenizer(LLAMA_CPP_PRETOKENIZER_PATTERNS.starcoder).pre, 'starcoder');
        assert.deepEqual(BpeTokenizer.load(e.tokenizer).encode('#W4615687'), single.encode('#W4615687'));
        // digits: groups-llama splits like llama.cpp's llama-bpe (digits in threes); with spaces: separate no symbol
        // merges with the letter after it.
        const f = await prepareRetailData({ ...section, dir: join(other, 'groups'), tokenizer: { vocabSize: 300, digits: 'groups-llama', spaces: 'separate' } });
        assert.equal((JSON.parse(readFileSync(f.tokenizer, 'utf8')) as { pattern: string }).pattern, LLAMA_CPP_PRETOKENIZER_PATTERNS['llama-bpe']);
        assert.equal(choosePretokenizer(LLAMA_CPP_PRETOKENIZER_PATTERNS['llama-bpe']).pre, 'llama-bpe');
        const grouped = BpeTokenizer.load(f.tokenizer);
        const pieces = grouped.encode('"#W4615687"').map((id) => grouped.decode([id])).filter((p) => /\d/.test(p));
        assert.equal(pieces.join(''), '4615687');
        assert.ok(pieces.every((p) => /^\d{1,3}$/.test(p)) && pieces[0].startsWith('4') && pieces.length >= 3);
        assert.deepEqual(grouped.encode('"order'), [...grouped.encode('"'), ...grouped.encode('order')]);
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('world: shared puts validation tasks on the training world and leaves out any that repeat a training task', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-prepare-'));
    try {
      const tasks = { train: 40, validation: 12, difficulty: 1, policy: 'compact', users: 6, orders: 12, products: 5 };
      const a = await prepareRetailData({ dir, seed: 3, tasks: { ...tasks, world: 'shared' }, tokenizer: { vocabSize: 300 } });
      const read = (d: string, f: string) => readFileSync(join(d, f), 'utf8');
      assert.equal(read(a.validationDir, 'db.json'), read(a.trainDir, 'db.json'));
      const train = JSON.parse(read(a.trainDir, 'tasks.json')) as SynthTask[];
      const val = JSON.parse(read(a.validationDir, 'tasks.json')) as SynthTask[];
      assert.equal(val.length, 12);
      const seen = new Set(train.map(taskSignature));
      assert.ok(val.every((t) => !seen.has(taskSignature(t))));
      assert.ok(val.every((t) => t.id.startsWith('validation_')));
      assert.match(a.log.join('\n'), /the training world; \d+ generated tasks equal to a training task left out/);
      // With six users, 40 training tasks repeat themselves: the filter has work to do.
      assert.ok(train.length > new Set(train.map(taskSignature)).size || /; [1-9]\d* generated/.test(a.log.join('\n')));

      // The default keeps worlds apart.
      const b = await prepareRetailData({ dir: join(dir, 'apart'), seed: 3, tasks, tokenizer: { vocabSize: 300 } });
      assert.notEqual(read(b.validationDir, 'db.json'), read(b.trainDir, 'db.json'));
      // Asking for more distinct tasks than a tiny world holds is a clear error.
      await assert.rejects(prepareRetailData({ dir: join(dir, 'tiny'), seed: 3, tasks: { ...tasks, train: 200, validation: 150, users: 4, orders: 6, families: ['info', 'cancel'], world: 'shared' }, tokenizer: { vocabSize: 300 } }),
        /validation tasks on the shared world differ from every training task/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('retail.tasks.trainFamilies restricts the GRPO training tasks to those families and leaves validation whole', async () => {
    const { buildRun, parseRunFile } = await import('../../../src/recipes/train-setup.ts');
    const dir = mkdtempSync(join(tmpdir(), 'longrun-prepare-'));
    try {
      const a = await prepareRetailData({ dir, seed: 4, tasks: { train: 30, validation: 8, difficulty: 1, policy: 'compact', users: 30, orders: 60, families: ['cancel', 'info', 'failed_auth', 'return'] }, expert: { trials: 1 }, tokenizer: { vocabSize: 300 } });
      const file = (tasks: Record<string, unknown>, task = 'retail-synth') => parseRunFile({
        task, retail: { tasks: { dataDir: a.trainDir, valDir: a.validationDir, tools: 'compact', ...tasks } },
        policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: a.tokenizer, format: 'harmony' },
        grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 2 } },
      }).run;
      const all = await buildRun(file({}));
      const family = (id: string) => all.deps.taskFamily!(id)!;
      const present = [...new Set(all.deps.trainTasks.map(family))];
      assert.ok(present.length >= 3, `families in the set: ${present.join(', ')}`);
      const chosen = present.slice(0, 2);
      const some = await buildRun(file({ trainFamilies: chosen }));
      assert.deepEqual(some.deps.trainTasks, all.deps.trainTasks.filter((id) => chosen.includes(family(id))));
      assert.deepEqual(some.deps.valTasks, all.deps.valTasks);
      await assert.rejects(buildRun(file({ trainFamilies: ['exchange'] })), /has no task of these families/);
      assert.throws(() => file({ trainFamilies: ['no_such_family'] }), /trainFamilies|Invalid/);
      assert.throws(() => file({ trainFamilies: chosen }, 'retail-v1'), /retail\.tasks\.trainFamilies: .*retail-synth only/);
      assert.throws(() => file({ trainFamilies: chosen }, 'toy'), /retail: the retail recipe's section goes with task .*this is task toy/);

      // retail.tasks.trainMaxRefusals: the training customer leaves at its second refusal, the validation one stays.
      const patient = await buildRun(file({ trainMaxRefusals: 2 }));
      const cancel = patient.deps.trainTasks.find((id) => family(id) === 'cancel')!;
      assert.ok(cancel, 'a cancel task to propose on');
      const wrong = { content: "Please confirm: cancel order #W0000000 with the reason 'no longer needed' (yes/no)?" };
      const refusalsUntilDone = async (env: AgentEnv, taskId: string) => {
        await env.reset({ options: { taskId } });
        for (let k = 1; k <= 4; k++) if ((await env.step(wrong))[2]) return k;
        return Infinity;
      };
      assert.equal(await refusalsUntilDone(patient.deps.makeEnv(), cancel), 2);
      const valCancel = patient.deps.valTasks!.find((id) => family(id) === 'cancel' || family(id) === 'return');
      if (valCancel) assert.equal(await refusalsUntilDone(patient.deps.makeValEnv!(), valCancel), Infinity);
      assert.equal(await refusalsUntilDone(all.deps.makeEnv(), cancel), Infinity);
      assert.throws(() => file({ trainMaxRefusals: 0 }), /trainMaxRefusals|Invalid|too_small/);
      assert.throws(() => file({ trainMaxRefusals: 2 }, 'retail-v0'), /retail\.tasks\.trainMaxRefusals: .*retail-synth only/);

      // The SFT documents: expert conversations, then copy-drill documents, then identity-drill conversations.
      const { sftDocuments } = await import('../../../src/recipes/sft-documents.ts');
      const withSft = parseRunFile({
        task: 'retail-synth',
        retail: { tasks: { dataDir: a.trainDir, valDir: a.validationDir, tools: 'compact' }, drills: { copy: { documents: 7 }, identity: { documents: 5, seed: 2 } } },
        policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: a.tokenizer, format: 'harmony' },
        sft: { data: a.trajectories, outDir: join(dir, 'sft'), config: { seqLen: 4096 } },
        grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 2 } },
      }).run;
      const mixed = await sftDocuments(withSft, all);
      assert.equal(mixed.drill, 7);
      assert.equal(mixed.identity, 5);
      assert.equal(mixed.docs.length, mixed.stats.documents + 12);
      for (const d of mixed.docs.slice(-5)) {
        const trained = all.tokenizer.decode([...d.tokens].filter((_, i) => d.lossMask[i]));
        assert.match(trained, /get_user_details[\s\S]*"user_id":"[a-z]+_[a-z]+_\d{4}"/);
        assert.ok(d.tokens.length < 1000, `identity drill conversations are short (${d.tokens.length} tokens)`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
