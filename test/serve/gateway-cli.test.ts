import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { saveModel } from '../../src/model/checkpoint/model-io.ts';
import { presetConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { api } from './helpers.ts';

describe('longrun serve gateway', () => {
  it('serves a checkpoint to an OpenAI client per rollout and appends finished records to --record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-gateway-cli-'));
    const bpe = BpeTokenizer.train('hello there, how are you today\n'.repeat(30), { vocabSize: 300 });
    const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize }), { seed: 1, grads: false });
    saveModel(join(dir, 'ckpt'), model);
    model.dispose();
    bpe.save(join(dir, 'ckpt', 'tokenizer.json'));
    const record = join(dir, 'records.jsonl');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', 'gateway', '--checkpoint', join(dir, 'ckpt'), '--chat-format', 'harmony', '--port', '0', '--token', 'tk', '--record', record], { stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (d: Buffer) => {
          err += d.toString();
          const m = /listening on (http:\/\/\S+)/.exec(err);
          if (m) resolve(m[1]!);
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
      });
      const auth = { authorization: 'Bearer tk' };
      assert.equal((await api(url, 'POST', '/rollouts', {})).status, 401);
      const o = await api(url, 'POST', '/rollouts', { task_id: 'x', seed: 1 }, auth);
      const client = new OpenAI({ baseURL: o.body.base_url, apiKey: 'tk', maxRetries: 0 });
      const r = await client.chat.completions.create({ model: 'ckpt', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5 });
      assert.equal((r as any).choices[0].token_ids.length, 5);
      assert.equal(r.choices[0]!.finish_reason, 'length');
      const f = await api(url, 'POST', `/rollouts/${o.body.rollout_id}/finish`, undefined, auth);
      assert.equal(f.body.rows.length, 1);
      const lines = readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(lines.length, 1);
      assert.deepEqual(lines[0].rows[0].responseIds, (r as any).choices[0].token_ids);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
