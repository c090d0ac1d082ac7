import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CompletionParse, CompletionParseError, StreamEvent } from '../../src/llm/chat-format.ts';
import { createChatFormat } from '../../src/llm/formats.ts';
import { HermesFormat } from '../../src/llm/hermes.ts';
import type { ChatMessage } from '../../src/llm/messages.ts';
import { loadTokenizer } from '../../src/llm/load-tokenizer.ts';
import { o200kHarmony } from '../../src/llm/o200k.ts';
import { NO_ARGS_TOOL, ORDER_TOOL, rng, tinyBpe, WEATHER_TOOL } from './fixtures.ts';

const tok = tinyBpe();
const format = new HermesFormat(tok);
const S = (name: string) => tok.specialId(name);
const tools = [WEATHER_TOOL, ORDER_TOOL, NO_ARGS_TOOL];
const names = tools.map((t) => t.function.name);

const system: ChatMessage = { role: 'system', content: 'You are a customer service agent.' };
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
  { role: 'tool', name: 'get_current_weather', content: '{"sunny": true}' },
  { role: 'tool', name: 'get_order_details', content: 'Error: order not found' },
];
const finalTurn: ChatMessage = { role: 'assistant', content: 'Sunny in Tokyo; I could not find order #W1.', reasoning: 'Summarize both results.' };
const followUp: ChatMessage = { role: 'user', content: 'ok bye' };
const conversation = [system, user, callTurn, ...results, finalTurn, followUp];

function expectError(result: CompletionParse, kind: CompletionParseError['kind'], tokens: readonly number[]): CompletionParseError {
  assert.equal(result.ok, false, `expected a ${kind} error`);
  const error = result as CompletionParseError;
  assert.equal(error.kind, kind, error.message);
  assert.deepEqual(error.tokens, tokens);
  assert.equal(error.text, tok.decode(tokens));
  return error;
}

describe('hermes rendering', () => {
  test('Qwen-style text: tools in the system turn, calls in <tool_call>, results grouped in one user turn', () => {
    const text = format.renderText({ messages: [{ role: 'system', content: 'You are helpful.' }, user, callTurn, ...results], tools: [NO_ARGS_TOOL] }, { addGenerationPrompt: true });
    const expected =
      '<|im_start|>system\nYou are helpful.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
      'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
      '{"type": "function", "function": {"name": "list_all_product_types", "description": "List the name and product id of all product types.", "parameters": {"type": "object", "properties": {}}}}\n' +
      '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
      '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
      `<|im_start|>user\n${user.content}<|im_end|>\n` +
      '<|im_start|>assistant\nLet me check both.\n<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Tokyo"}}\n</tool_call>\n' +
      '<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W1", "item_ids": ["a", "b"]}}\n</tool_call><|im_end|>\n' +
      '<|im_start|>user\n<tool_response>\n{"sunny": true}\n</tool_response>\n<tool_response>\nError: order not found\n</tool_response><|im_end|>\n' +
      '<|im_start|>assistant\n';
    assert.equal(text, expected);
  });

  test('tool role mode renders one tool turn per result; reasoning renders as <think>', () => {
    const toolRole = new HermesFormat(tok, { toolResponseRole: 'tool' });
    const text = toolRole.renderText({ messages: [user, callTurn, ...results, finalTurn] });
    assert.ok(text.includes('<|im_start|>tool\n<tool_response>\n{"sunny": true}\n</tool_response><|im_end|>\n<|im_start|>tool\n<tool_response>\nError: order not found\n</tool_response><|im_end|>'));
    assert.ok(text.endsWith('<|im_start|>assistant\n<think>\nSummarize both results.\n</think>\n\nSunny in Tokyo; I could not find order #W1.<|im_end|>'));
    assert.ok(!text.includes('system'));
  });

  test('full rendering equals encoding the rendered text with specials', () => {
    const start = { messages: conversation, tools };
    assert.deepEqual(format.render(start, { addGenerationPrompt: true }), tok.encode(format.renderText(start, { addGenerationPrompt: true }), { allowedSpecial: 'all' }));
  });

  for (const role of ['user', 'tool'] as const) {
    test(`incremental session equals the full rendering (tool results as ${role})`, () => {
      const f = new HermesFormat(tok, { toolResponseRole: role });
      const session = f.startSession({ messages: [system, user], tools });
      const deltas = [[...session.tokens], session.appendGenerationPrompt(), session.append(callTurn), session.append(...results)];
      deltas.push(session.appendGenerationPrompt(), session.append(finalTurn), session.append(followUp), session.appendGenerationPrompt());
      const full = f.render({ messages: conversation, tools }, { addGenerationPrompt: true });
      assert.deepEqual(deltas.flat(), full);
      assert.deepEqual(session.tokens, full);
      assert.deepEqual(deltas[3].slice(0, 2), [...tok.encode('\n'), S('<|im_start|>')].slice(0, 2), 'observation delta starts a new turn');
    });
  }

  test('grouped tool results must arrive in one append', () => {
    const session = format.startSession({ messages: [user], tools });
    session.appendGenerationPrompt();
    session.append(callTurn);
    session.append(results[0]);
    assert.throws(() => session.append(results[1]), /in one append\(\) call/);
  });

  test('sampled tokens are appended verbatim, parsed, and the next turn follows', () => {
    const session = format.startSession({ messages: [system, user], tools });
    session.appendGenerationPrompt();
    const sampled = format.renderCompletion(callTurn);
    const parsed = session.appendGenerated(sampled);
    assert.ok(parsed.ok, JSON.stringify(parsed));
    assert.deepEqual(parsed.toolCalls, callTurn.toolCalls);
    assert.equal(parsed.content, callTurn.content);
    assert.equal(parsed.stopTokenId, S('<|im_end|>'));
    session.append(...results);
    session.appendGenerationPrompt();
    assert.deepEqual(session.tokens, format.render({ messages: [system, user, callTurn, ...results], tools }, { addGenerationPrompt: true }));
  });

  test('needs a tokenizer with ChatML specials; formats are chosen by name', () => {
    assert.throws(() => new HermesFormat(o200kHarmony()), /has no special token <\|im_end\|>/);
    assert.equal(createChatFormat('hermes', tok).name, 'hermes');
    assert.equal(createChatFormat('harmony', tok).name, 'harmony');
    assert.throws(() => createChatFormat('llama', tok), /unknown chat format "llama"/);
    assert.equal(loadTokenizer('o200k_harmony').name, 'o200k_harmony');
    assert.throws(() => loadTokenizer('no/such/tokenizer.json'), /cannot read tokenizer file/);
  });
});

describe('hermes parsing', () => {
  test('render → parse round-trips every kind of assistant turn', () => {
    const turns: ChatMessage[] = [
      { role: 'assistant', content: 'Just text, with <b>tags</b> and ✓.' },
      { role: 'assistant', content: 'Answer.', reasoning: 'Think\nin two lines.' },
      { role: 'assistant', content: '', toolCalls: [{ name: 'list_all_product_types', arguments: {} }] },
      callTurn,
      { role: 'assistant', content: '', reasoning: 'tool time', toolCalls: [{ name: 'get_order_details', arguments: { order_id: '#1', nested: { x: [1, null, false] } } }] },
    ];
    for (const turn of turns) {
      const ids = format.renderCompletion(turn);
      const parsed = format.parseCompletion(ids, names);
      assert.ok(parsed.ok, JSON.stringify(parsed));
      assert.equal(parsed.content ?? '', turn.content);
      assert.equal(parsed.reasoning, turn.reasoning);
      assert.deepEqual(parsed.toolCalls, turn.toolCalls);
      assert.deepEqual(parsed.tokens, ids);
    }
  });

  test('arguments given as a JSON string are accepted', () => {
    const ids = [...tok.encode('<tool_call>\n{"name": "get_current_weather", "arguments": "{\\"location\\": \\"Oslo\\"}"}\n</tool_call>'), S('<|im_end|>')];
    const parsed = format.parseCompletion(ids, names);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.toolCalls, [{ name: 'get_current_weather', arguments: { location: 'Oslo' } }]);
  });

  test('streaming parser emits whole characters token by token', () => {
    const turn: ChatMessage = { role: 'assistant', content: '🤖👍🏽 café 東京' };
    const ids = format.renderCompletion(turn);
    const parser = format.createStreamParser();
    const events: StreamEvent[] = [];
    for (const id of ids) events.push(...parser.push(id));
    assert.ok(parser.done);
    const text = events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text);
    assert.equal(text.join(''), turn.content);
    assert.ok(text.every((t) => !t.includes('\ufffd')));
    assert.equal(events[0].type, 'message-start');
    assert.deepEqual(events.slice(-2).map((e) => e.type), ['message-end', 'stop']);
  });

  test('garbage becomes a typed error that keeps every token and the text', () => {
    const end = S('<|im_end|>');
    const call = (json: string) => [...tok.encode(`<tool_call>\n${json}\n</tool_call>`), end];
    const cases: [CompletionParseError['kind'], number[]][] = [
      ['empty', []],
      ['truncated', tok.encode('an answer without an end')],
      ['invalid-json', call('{"name": "get_current_weather", "arguments": {location: 1}}')],
      ['invalid-json', call('["get_current_weather"]')],
      ['invalid-json', call('{"name": "get_current_weather", "arguments": [1]}')],
      ['invalid-json', call('{"name": "get_current_weather", "arguments": "{nope"}')],
      ['malformed', call('{"arguments": {}}')],
      ['unknown-recipient', call('{"name": "launch_rockets", "arguments": {}}')],
      ['malformed', [...tok.encode('<tool_call>\n{"name": "get_current_weather"'), end]],
      ['malformed', [...tok.encode('<think>never closed'), end]],
      ['malformed', [...tok.encode('text'), S('<|im_start|>'), end]],
      ['malformed', [...tok.encode('stray </tool_call> close'), end]],
      ['trailing-tokens', [...tok.encode('done'), end, ...tok.encode('more')]],
    ];
    for (const [kind, ids] of cases) expectError(format.parseCompletion(ids, names), kind, ids);
    const partial = expectError(
      format.parseCompletion([...tok.encode('<tool_call>\n{"name": "list_all_product_types", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "list_all'), end], names),
      'malformed',
      [...tok.encode('<tool_call>\n{"name": "list_all_product_types", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "list_all'), end],
    );
    assert.deepEqual(partial.partial.toolCalls, [{ name: 'list_all_product_types', arguments: {} }]);
  });

  test('random token soup never throws and always keeps the tokens', () => {
    const random = rng(7);
    const pieces = ['<tool_call>', '</tool_call>', '{"name": "get_current_weather", "arguments": {}}', '<think>', '</think>', 'hello', '\n'].map((p) => tok.encode(p));
    const specials = [S('<|im_end|>'), S('<|im_start|>'), S('<|end|>')];
    for (let i = 0; i < 300; i++) {
      const ids: number[] = [];
      const length = Math.floor(random() * 15);
      for (let j = 0; j < length; j++) {
        const r = random();
        if (r < 0.2) ids.push(specials[Math.floor(random() * specials.length)]);
        else if (r < 0.8) ids.push(...pieces[Math.floor(random() * pieces.length)]);
        else ids.push(Math.floor(random() * tok.vocabSize));
      }
      const parser = format.createStreamParser(names);
      for (const id of ids) parser.push(id);
      const result = parser.finish();
      assert.deepEqual(result.tokens, ids);
    }
  });
});
