import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readCardProbe, runCardProbe } from '../../src/cli/card-probe.ts';
import { readModelSettings } from '../../src/recipes/model-settings.ts';
import { loadModel } from '../../src/model/checkpoint/index.ts';
import { loadTokenizer } from '../../src/llm/index.ts';

const MODELS = 'models';
const folders = existsSync(MODELS) ? readdirSync(MODELS).filter((n) => existsSync(join(MODELS, n, 'config.json'))) : [];

describe('shipped models (models/<name>/)', () => {
  it('there is at least one, and each is a complete model folder: weights, config, tokenizer, prompt settings, card', () => {
    assert.ok(folders.length >= 1, 'models/ holds the shipped models');
    for (const name of folders) {
      const dir = join(MODELS, name);
      for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'longrun.json', 'README.md', 'card.json']) assert.ok(existsSync(join(dir, f)), `${dir}/${f}`);
      const settings = readModelSettings(dir);
      assert.ok(settings, `${dir}/longrun.json`);
      const model = loadModel(dir, { grads: false });
      assert.ok(loadTokenizer(join(dir, 'tokenizer.json')).vocabSize <= model.config.vocab_size, `${dir}: tokenizer and model agree`);
      const bytes = readdirSync(dir).reduce((a, f) => a + readFileSync(join(dir, f)).length, 0);
      assert.ok(bytes <= 50 * 1024 * 1024, `${dir} is ${bytes} bytes, over the 50 MB a model may take`);
    }
  });

  for (const name of folders) {
    it(`${name} scores its card's seeded probe, episode for episode`, async () => {
      const dir = join(MODELS, name);
      const probe = readCardProbe(dir);
      assert.ok(probe.result, `${dir}/card.json has a probe result (longrun model probe ${dir} --write)`);
      const got = await runCardProbe(dir, probe);
      assert.deepEqual(got.rewards, probe.result.rewards);
      assert.equal(got.meanReward, probe.result.meanReward);
    });
  }
});
