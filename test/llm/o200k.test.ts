import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import packageEncoding from 'gpt-tokenizer/encoding/o200k_harmony';
import { o200kHarmony, O200K_HARMONY_VOCAB_SIZE } from '../../src/llm/o200k.ts';
import { StreamingDecoder, utf8 } from '../../src/llm/tokenizer.ts';

const tok = o200kHarmony();

describe('o200k_harmony', () => {
  test('known encodings stay stable (computed once with gpt-tokenizer 4.0.0)', () => {
    const known: [string, number[]][] = [
      ['Hello, world!', [13225, 11, 2375, 0]],
      ['The quick brown fox jumps over the lazy dog.', [976, 4853, 19705, 68347, 65613, 1072, 290, 29082, 6446, 13]],
      ['naïve café — 日本語のテキスト 🤖👍🏽', [1503, 9954, 737, 30469, 2733, 17428, 40909, 3385, 16056, 18368, 38236, 93643, 244, 82514, 52622, 121]],
      ['{"order_id": "#W2378156", "item_ids": ["1151293680"]}', [10848, 2143, 1537, 1243, 11351, 54, 26741, 43890, 21, 672, 392, 2057, 17465, 1243, 9129, 11999, 16891, 35070, 15, 2601, 92]],
      ['  indented\n\tcode()\r\n', [220, 1383, 23537, 198, 86873, 7368]],
    ];
    for (const [text, ids] of known) {
      assert.deepEqual(tok.encode(text), ids, text);
      assert.equal(tok.decode(ids), text);
    }
  });

  test('harmony special ids match the published ones and the package', () => {
    const expected: Record<string, number> = {
      '<|start|>': 200006,
      '<|end|>': 200007,
      '<|message|>': 200008,
      '<|channel|>': 200005,
      '<|constrain|>': 200003,
      '<|return|>': 200002,
      '<|call|>': 200012,
      '<|endoftext|>': 199999,
    };
    for (const [name, id] of Object.entries(expected)) {
      assert.equal(tok.specialId(name), id);
      assert.equal(packageEncoding.decode([id]), name, `gpt-tokenizer decodes ${id} as ${name}`);
      assert.deepEqual(tok.encode(name, { allowedSpecial: 'all' }), [id]);
      assert.ok(tok.isSpecial(id));
    }
    assert.equal(tok.vocabSize, O200K_HARMONY_VOCAB_SIZE);
    assert.deepEqual(tok.eosIds, [200002, 200012, 199999]);
    assert.equal(tok.tokenToString(200020), '<|reserved_200020|>');
    assert.throws(() => tok.tokenBytes(O200K_HARMONY_VOCAB_SIZE), /outside o200k_harmony/);
  });

  test('special names are plain text unless allowed', () => {
    const text = 'a<|end|>b<|call|>';
    const plain = tok.encode(text);
    assert.ok(plain.every((id) => !tok.isSpecial(id)));
    assert.equal(tok.decode(plain), text);
    assert.deepEqual(tok.encode(text, { allowedSpecial: new Set(['<|call|>']) }).slice(-1), [200012]);
    const all = tok.encode(text, { allowedSpecial: 'all' });
    assert.deepEqual(all.filter((id) => tok.isSpecial(id)), [200007, 200012]);
  });

  test('round-trips Unicode, and streams characters split across tokens', () => {
    for (const s of ['👨‍👩‍👧‍👦 family', 'e\u0301', 'Ünïcödé ✓ ∑ 𝔘', '\u0000\u0001 control']) {
      const ids = tok.encode(s);
      assert.equal(tok.decode(ids), s);
      assert.deepEqual(tok.decodeBytes(ids), utf8(s));
    }
    const ids = tok.encode('🤖👍🏽');
    const splitting = ids.filter((id) => tok.tokenToString(id).startsWith('<0x'));
    assert.ok(splitting.length > 0, 'expected at least one token holding part of a character');
    const stream = new StreamingDecoder(tok);
    const pieces = ids.map((id) => stream.push(id));
    assert.equal(pieces.join('') + stream.flush(), '🤖👍🏽');
    assert.ok(pieces.every((p) => !p.includes('\ufffd')));
  });
});
