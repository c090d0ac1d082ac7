import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseActionString, toAgentTurn } from '../../src/tooluse/actions.ts';
import { toFunctionalFormat } from '../../src/tooluse/messages.ts';
import { parsePythonKeywordArgs, parsePythonLiteral } from '../../src/tooluse/python/python-literal.ts';
import { pyRepr } from '../../src/tooluse/python/pyvalue.ts';

describe('τ² gym action strings', () => {
  it('parses a JSON tool call first', () => {
    assert.deepEqual(parseActionString('{"name": "get_order_details", "arguments": {"order_id": "#W1"}}'), {
      content: null,
      toolCalls: [{ name: 'get_order_details', arguments: { order_id: '#W1' } }],
    });
  });

  it('parses the functional syntax with Python literals and bare names', () => {
    const turn = parseActionString("modify(order_id='#W1', item_ids=['1', \"2\"], n=-3, x=1.5e2, ok=True, none=None, d={'a': (1, 2)}, bare=hello)");
    assert.deepEqual(turn.toolCalls![0], {
      name: 'modify',
      arguments: { order_id: '#W1', item_ids: ['1', '2'], n: -3, x: 150, ok: true, none: null, d: { a: [1, 2] }, bare: 'hello' },
    });
    assert.deepEqual(parseActionString('list_all_product_types()').toolCalls![0], { name: 'list_all_product_types', arguments: {} });
  });

  it('drops positional arguments as τ² does (the tool then reports them missing)', () => {
    assert.deepEqual(parseActionString("get_order_details('#W1')").toolCalls![0]!.arguments, {});
  });

  it('falls back to plain text, keeping the original string', () => {
    assert.deepEqual(parseActionString('  Sure (I will check).  '), { content: '  Sure (I will check).  ', toolCalls: null });
    assert.deepEqual(parseActionString("f(x='unterminated)"), { content: "f(x='unterminated)", toolCalls: null });
    assert.deepEqual(parseActionString('{"no": "name"}'), { content: '{"no": "name"}', toolCalls: null });
    assert.throws(() => parseActionString('   '), /cannot be empty/);
  });

  it('turns the done tool into an agent stop, in any form', () => {
    for (const a of ['done()', '{"name": "done", "arguments": {}}']) assert.deepEqual(toAgentTurn(a), { content: '###STOP###', toolCalls: null });
    assert.deepEqual(toAgentTurn({ toolCalls: [{ name: 'done', arguments: {} }] }), { content: '###STOP###', toolCalls: null });
  });

  it('validates structured actions', () => {
    assert.throws(() => toAgentTurn(null as never), /must be a string or/);
    assert.throws(() => toAgentTurn({ toolCalls: [{ arguments: {} }] } as never), /string name/);
    assert.throws(() => toAgentTurn({ content: 5 } as never), /content must be a string/);
  });
});

describe('Python literals', () => {
  it('parses strings with escapes and adjacent concatenation', () => {
    assert.equal(parsePythonLiteral(String.raw`'it\'s \x41\n' "b"`), "it's A\nb");
    assert.equal(parsePythonLiteral("'''tri'ple'''"), "tri'ple");
    assert.throws(() => parsePythonLiteral('[1, 2'), /expected/);
    assert.throws(() => parsePythonKeywordArgs('a=1 b=2'), /expected ','/);
    assert.throws(() => parsePythonKeywordArgs('a=1, a=2'), /repeated/);
  });

  it('renders values like Python repr, and tool calls with sorted keys', () => {
    assert.equal(pyRepr({ a: [1, 'x', null, true] }), "{'a': [1, 'x', None, True]}");
    assert.equal(pyRepr("it's"), '"it\'s"');
    assert.equal(pyRepr('a\nb'), "'a\\nb'");
    assert.equal(toFunctionalFormat({ name: 'f', arguments: { b: 1, a: 'x' } }), "f(a='x', b=1)");
  });
});
