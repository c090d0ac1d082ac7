import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { bpeModelToFile } from '../../src/llm/bpe-model.ts';
import { trainBpeModel } from '../../src/llm/bpe-train.ts';
import { compilePretokenizer, DEFAULT_PRETOKENIZE_PATTERN, pretokenize, SINGLE_DIGIT_PRETOKENIZE_PATTERN } from '../../src/llm/pretokenize.ts';
import { DEFAULT_BPE_SPECIALS, HARMONY } from '../../src/llm/special-tokens.ts';
import { StreamingDecoder, utf8 } from '../../src/llm/tokenizer.ts';
import { makeCorpus, rng, tinyBpe } from './fixtures.ts';
import { LLAMA_CPP_PRETOKENIZER_PATTERNS } from '../../src/model/checkpoint/gguf-tokenizer.ts';

/** An ASCII byte that is not a letter, right before a letter (ASCII or not). */
const hasSymbolThenLetter = (text: string): boolean => {
  const isLetter = (c: string) => /[A-Za-z]/.test(c) || c.codePointAt(0)! >= 0x80;
  return [...text].some((c, i, cs) => i > 0 && isLetter(c) && !isLetter(cs[i - 1]));
};

const dir = mkdtempSync(join(tmpdir(), 'longrun-bpe-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The textbook trainer: recount every pair of every word before each merge. The incremental one must agree. */
function naiveMerges(corpus: string, merges: number): [number, number][] {
  const regex = compilePretokenizer(DEFAULT_PRETOKENIZE_PATTERN);
  const counts = new Map<string, number>();
  for (const w of pretokenize(corpus, regex)) counts.set(w, (counts.get(w) ?? 0) + 1);
  let words = [...counts].map(([w, c]) => ({ symbols: Array.from(utf8(w)), count: c }));
  const out: [number, number][] = [];
  for (let m = 0; m < merges; m++) {
    const pairs = new Map<string, number>();
    for (const { symbols, count } of words) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = `${symbols[i]},${symbols[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + count);
      }
    }
    let best: [number, number] | undefined;
    let bestCount = 0;
    for (const [key, count] of pairs) {
      const [a, b] = key.split(',').map(Number) as [number, number];
      if (count > bestCount || (count === bestCount && best && (a < best[0] || (a === best[0] && b < best[1])))) {
        best = [a, b];
        bestCount = count;
      }
    }
    if (!best || bestCount < 2) break;
    out.push(best);
    const id = 256 + m;
    words = words.map(({ symbols, count }) => {
      const next: number[] = [];
      for (let i = 0; i < symbols.length; i++) {
        if (i + 1 < symbols.length && symbols[i] === best[0] && symbols[i + 1] === best[1]) {
          next.push(id);
          i++;
        } else next.push(symbols[i]);
      }
      return { symbols: next, count };
    });
  }
  return out;
}

function randomString(random: () => number, length: number, maxCodePoint: number): string {
  let s = '';
  for (let i = 0; i < length; i++) {
    let cp = Math.floor(random() * maxCodePoint);
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41; // lone surrogates are not text; UTF-8 cannot carry them
    s += String.fromCodePoint(cp);
  }
  return s;
}

describe('BPE training', () => {
  test('incremental pair counting gives exactly the merges of a full recount', () => {
    const corpus = makeCorpus(7, 400);
    const model = trainBpeModel(corpus, { vocabSize: 256 + 120 + DEFAULT_BPE_SPECIALS.length });
    assert.equal(model.merges.length, 120);
    assert.deepEqual(model.merges, naiveMerges(corpus, 120));
  });

  test('is deterministic: the same corpus twice gives the same merges; a different corpus does not', () => {
    const corpus = makeCorpus(3, 800);
    const a = trainBpeModel(corpus, { vocabSize: 500 });
    const b = trainBpeModel(corpus, { vocabSize: 500 });
    assert.deepEqual(a, b);
    assert.notDeepEqual(trainBpeModel(makeCorpus(4, 800), { vocabSize: 500 }).merges, a.merges);
  });

  test('a corpus given as many strings counts the same words as one string', () => {
    const lines = makeCorpus(5, 300).split('\n');
    // Lines never start with a space, so each "\n" between them is a word of its own.
    const pieces = [...lines, ...Array.from({ length: lines.length - 1 }, () => '\n')];
    assert.deepEqual(trainBpeModel(pieces, { vocabSize: 450 }), trainBpeModel(lines.join('\n'), { vocabSize: 450 }));
  });

  test('reaches the target vocabulary, specials last, gpt-oss eos ids', () => {
    const tok = tinyBpe();
    assert.equal(tok.vocabSize, 600);
    assert.equal(tok.specialTokens.size, DEFAULT_BPE_SPECIALS.length);
    const ids = [...tok.specialTokens.values()];
    assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => 600 - ids.length + i));
    assert.deepEqual(tok.eosIds, [tok.specialId(HARMONY.return), tok.specialId(HARMONY.call), tok.specialId(HARMONY.endOfText)]);
    assert.ok(tok.isSpecial(tok.specialId(HARMONY.start)));
    assert.ok(!tok.isSpecial(300));
  });

  test('stops early when no pair repeats, and rejects an impossible vocabulary', () => {
    const tok = BpeTokenizer.train('abcdefg', { vocabSize: 1000 });
    assert.equal(tok.vocabSize, 256 + DEFAULT_BPE_SPECIALS.length);
    assert.throws(() => trainBpeModel('abc', { vocabSize: 200 }), /too small/);
    assert.throws(() => trainBpeModel('abc', { vocabSize: 300, eosTokens: ['<|nope|>'] }), /not among the special tokens/);
  });

  test('separateSpaceBeforeLetters: a word encodes alike after a space and inside a JSON string', () => {
    const corpus = makeCorpus(6, 2000) + '\nMy name is Elena Moreau. {"last_name": "Moreau"} caf\u00e9 \u00e9t\u00e9 (x) "y"';
    const merged = BpeTokenizer.train(corpus, { vocabSize: 700 });
    const separate = BpeTokenizer.train(corpus, { vocabSize: 700, separateSpaceBeforeLetters: true });
    const spaceLetter = (tok: BpeTokenizer) => Array.from({ length: tok.vocabSize }, (_, id) => id)
      .filter((id) => !tok.isSpecial(id) && /^ [A-Za-z\u0080-\uffff]/.test(tok.decode([id])) && tok.decode([id]).length > 1);
    // The default learns " order"-style merges; with the option no token starts with a space and a letter.
    assert.ok(spaceLetter(merged).length > 20, `merged has ${spaceLetter(merged).length} space+letter tokens`);
    assert.deepEqual(spaceLetter(separate), []);
    const space = separate.encode(' ');
    for (const word of ['Moreau', 'order', 'details', 'café']) {
      assert.deepEqual(separate.encode(` ${word}`), [...space, ...separate.encode(word)], word);
      assert.equal(separate.decode(separate.encode(`a ${word} "${word}"`)), `a ${word} "${word}"`);
    }
    assert.notDeepEqual(merged.encode(' order'), [...merged.encode(' '), ...merged.encode('order')]);
    // Words still merge among their letters.
    assert.equal(separate.encode('order').length, 1);
  });

  test("separateSymbolsBeforeLetters under llama.cpp's llama-bpe split: a word encodes alike after a space, a quote or an underscore; digits in threes", () => {
    const corpus = makeCorpus(6, 2000) + '\nMy name is Elena Moreau. {"last_name":"Moreau","user_id":"elena_moreau_1234"} order #W7844496 item 4392285068 "order"';
    const pattern = LLAMA_CPP_PRETOKENIZER_PATTERNS['llama-bpe'];
    const merged = BpeTokenizer.train(corpus, { vocabSize: 700, pattern });
    const separate = BpeTokenizer.train(corpus, { vocabSize: 700, pattern, separateSymbolsBeforeLetters: true });
    const symbolLetter = (tok: BpeTokenizer) => Array.from({ length: tok.vocabSize }, (_, id) => id)
      .filter((id) => !tok.isSpecial(id) && hasSymbolThenLetter(tok.decode([id])));
    // The split keeps `"order` and ` order` whole, so without the option BPE learns symbol+letter tokens.
    assert.ok(symbolLetter(merged).length > 10, `merged has ${symbolLetter(merged).length} symbol+letter tokens`);
    assert.deepEqual(symbolLetter(separate).map((id) => separate.decode([id])), []);
    for (const word of ['Moreau', 'order']) {
      for (const symbol of [' ', '"', '_', '.']) assert.deepEqual(separate.encode(`${symbol}${word}`), [...separate.encode(symbol), ...separate.encode(word)], `${symbol}${word}`);
    }
    // Digits come in groups of up to three from the left; BPE is free to merge inside a group.
    const groups = (tok: BpeTokenizer, text: string) => tok.encode(text).map((id) => tok.decode([id]));
    assert.ok(groups(separate, '4392285068').every((g) => /^\d{1,3}$/.test(g)));
    assert.equal(groups(separate, '4392285068').join(''), '4392285068');
    assert.ok(groups(separate, '12345').length >= 2);
    assert.equal(separate.decode(separate.encode('{"order_id":"#W7844496"}')), '{"order_id":"#W7844496"}');
  });

  test('learns useful merges: frequent words become single tokens', () => {
    const tok = tinyBpe();
    assert.equal(tok.encode(' order').length, 1);
    assert.ok(tok.encode('the order details').length <= 4);
  });
});

describe('BPE encode/decode', () => {
  const tok = tinyBpe();

  test('encoding equals applying the merges one by one in training order, word by word', () => {
    const random = rng(11);
    const regex = compilePretokenizer(tok.model.pattern);
    const letters = (length: number, alphabet: string) => Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    const inputs = [
      'order', ' pending', 'naïve', '東京データ', '#W2378156', 'zzzzzz',
      ...Array.from({ length: 30 }, () => randomString(random, 12, 0x250)),
      // Long words take the heap-based path; it must agree with the plain one.
      letters(3000, 'aeinorstdu'), ' ' + letters(500, 'eé東京'), ' '.repeat(700) + 'x', '!?'.repeat(400),
    ];
    let words = 0;
    for (const input of inputs) {
      const expected: number[] = [];
      for (const word of pretokenize(input, regex)) {
        words++;
        let symbols = Array.from(utf8(word));
        tok.model.merges.forEach(([a, b], i) => {
          const next: number[] = [];
          for (let j = 0; j < symbols.length; j++) {
            if (j + 1 < symbols.length && symbols[j] === a && symbols[j + 1] === b) {
              next.push(256 + i);
              j++;
            } else next.push(symbols[j]);
          }
          symbols = next;
        });
        expected.push(...symbols);
      }
      assert.deepEqual(tok.encode(input), expected, input);
    }
    assert.ok(words > inputs.length);
  });

  test('round-trips ASCII, Unicode, emoji and whitespace exactly', () => {
    const samples = [
      '',
      'Hello, world! 123456789 don\'t',
      '  leading and trailing spaces  \n\n\ttabs\r\n',
      'naïve café straße — “quotes” …',
      '東京は日本の首都です。データ',
      'مرحبا بالعالم · привет мир · שלום',
      'e\u0301 a\u0308 combining marks',
      '🙂👍🏽👨‍👩‍👧‍👦🏳️‍🌈 emoji ZWJ sequences',
      '{"order_id": "#W2378156", "item_ids": ["1151293680"]}',
      '<|start|> looks special but is text <|end|>',
    ];
    for (const s of samples) assert.equal(tok.decode(tok.encode(s)), s, s);
    const huge = 'order'.repeat(40_000);
    assert.equal(tok.decode(tok.encode(huge)), huge);
  });

  test('round-trips random latin-1 strings and random code points', () => {
    const random = rng(42);
    for (let i = 0; i < 200; i++) {
      const s = randomString(random, 1 + Math.floor(random() * 40), i % 2 === 0 ? 256 : 0x30000);
      const ids = tok.encode(s);
      assert.equal(tok.decode(ids), s);
      assert.deepEqual(tok.decodeBytes(ids), utf8(s));
      for (const id of ids) assert.ok(id >= 0 && id < tok.vocabSize && !tok.isSpecial(id));
    }
  });

  test('a token that splits a character: decodeBytes is exact, the streaming decoder waits for the whole character', () => {
    const euro = tok.encode('€'); // 3 UTF-8 bytes; no merge joins them in this corpus
    assert.ok(euro.length >= 2, 'expected € to span several tokens');
    assert.deepEqual(tok.decodeBytes(euro.slice(0, 1)), utf8('€').slice(0, tok.tokenBytes(euro[0]).length));
    assert.equal(tok.decode(euro.slice(0, 1)), '\ufffd');
    assert.match(tok.tokenToString(euro[0]), /^(<0x[0-9A-F]{2}>)+$/);
    const stream = new StreamingDecoder(tok);
    const pieces = tok.encode('a€b🙂').map((id) => stream.push(id));
    assert.equal(pieces.join('') + stream.flush(), 'a€b🙂');
    assert.ok(pieces.every((p) => !p.includes('\ufffd')));
    const cut = new StreamingDecoder(tok);
    cut.push(euro[0]);
    assert.equal(cut.flush(), '\ufffd');
  });

  test('special tokens are single ids only when allowed', () => {
    const text = 'x<|start|>assistant<|end|>y';
    const plain = tok.encode(text);
    assert.ok(plain.every((id) => !tok.isSpecial(id)));
    assert.equal(tok.decode(plain), text);
    assert.deepEqual(tok.encode(text, { allowedSpecial: 'none' }), plain);
    const all = tok.encode(text, { allowedSpecial: 'all' });
    assert.deepEqual(all.filter((id) => tok.isSpecial(id)), [tok.specialId('<|start|>'), tok.specialId('<|end|>')]);
    assert.equal(tok.decode(all), text);
    const onlyEnd = tok.encode(text, { allowedSpecial: new Set(['<|end|>']) });
    assert.deepEqual(onlyEnd.filter((id) => tok.isSpecial(id)), [tok.specialId('<|end|>')]);
    assert.equal(tok.tokenToString(tok.specialId('<|call|>')), '<|call|>');
  });

  test('bad ids and unknown specials give clear errors', () => {
    assert.throws(() => tok.decode([tok.vocabSize]), /outside bpe-600/);
    assert.throws(() => tok.tokenBytes(-1), RangeError);
    assert.throws(() => tok.specialId('<|nope|>'), /has no special token <\|nope\|>/);
  });
});

describe('BPE files', () => {
  const tok = tinyBpe();

  test('save then load gives the same tokenizer', () => {
    const path = join(dir, 'tok.json');
    tok.save(path);
    const loaded = BpeTokenizer.load(path);
    assert.deepEqual(loaded.model, tok.model);
    assert.equal(loaded.vocabSize, tok.vocabSize);
    const text = makeCorpus(99, 50);
    assert.deepEqual(loaded.encode(text), tok.encode(text));
  });

  test('corrupt files fail with errors that say what is wrong', () => {
    const write = (name: string, content: string) => {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    };
    const good = JSON.stringify(bpeModelToFile(tok.model));
    assert.throws(() => BpeTokenizer.load(join(dir, 'missing.json')), /cannot read tokenizer file/);
    assert.throws(() => BpeTokenizer.load(write('truncated.json', good.slice(0, good.length / 2))), /not valid JSON/);
    assert.throws(() => BpeTokenizer.load(write('other.json', '{"format":"something-else"}')), /not a valid longrun-bpe v1 tokenizer file: format/);
    const badMerge = { ...bpeModelToFile(tok.model), merges: [[0, 1], [999, 2]] };
    assert.throws(() => BpeTokenizer.load(write('future.json', JSON.stringify(badMerge))), /merge 1 references id 999/);
    const badType = { ...bpeModelToFile(tok.model), merges: 'abc' };
    assert.throws(() => BpeTokenizer.load(write('type.json', JSON.stringify(badType))), /merges/);
    const badRegex = { ...bpeModelToFile(tok.model), pattern: '(' };
    assert.throws(() => BpeTokenizer.load(write('regex.json', JSON.stringify(badRegex))), /invalid pre-tokenization pattern/);
  });
});

test('single-digit pre-tokenization: every digit is its own piece, in prose, JSON and after a space alike', () => {
  const regex = compilePretokenizer(SINGLE_DIGIT_PRETOKENIZE_PATTERN);
  assert.deepEqual(pretokenize('order #W4615687 cancelled', regex), ['order', ' #', 'W', '4', '6', '1', '5', '6', '8', '7', ' cancelled']);
  assert.deepEqual(pretokenize('{"zip":"10661"} zip 10661', regex), ['{"', 'zip', '":"', '1', '0', '6', '6', '1', '"}', ' zip', ' ', '1', '0', '6', '6', '1']);
  assert.deepEqual(pretokenize('#W4615687', compilePretokenizer(DEFAULT_PRETOKENIZE_PATTERN)), ['#', 'W', '461', '568', '7']);
  // A tokenizer trained with it never merges across digits, so the same id reads as the same tokens anywhere.
  const corpus = Array.from({ length: 50 }, (_, i) => `order #W${4615687 + i} costs 12${i}.50 {"order_id":"#W${4615687 + i}"}`).join('\n');
  const tok = new BpeTokenizer(trainBpeModel(corpus, { vocabSize: 400, pattern: SINGLE_DIGIT_PRETOKENIZE_PATTERN }));
  const digitsOf = (s: string) => tok.encode(s).map((id) => tok.decode([id])).filter((p) => /\d/.test(p));
  assert.deepEqual(digitsOf(' #W4615687'), [...'4615687']);
  assert.deepEqual(digitsOf('"#W4615687"'), [...'4615687']);
});
