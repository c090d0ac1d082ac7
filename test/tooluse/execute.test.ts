import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { executeToolCall, pythonBindingError } from '../../src/tooluse/execute.ts';
import { createKvDomain } from './fake-domain.ts';

const domain = createKvDomain();

describe('executeToolCall', () => {
  it('returns the tool output on success and mutates the DB in place', () => {
    const db = domain.freshDb();
    assert.deepEqual(executeToolCall(domain, db, { name: 'get_value', arguments: { key: 'apple' } }), { output: 'red', error: false });
    assert.deepEqual(executeToolCall(domain, db, { name: 'set_value', arguments: { key: 'kiwi', value: 'green' } }), { output: 'Set kiwi', error: false });
    assert.equal(db.values.kiwi, 'green');
  });

  it('reports an unknown tool like τ²', () => {
    const db = domain.freshDb();
    assert.deepEqual(executeToolCall(domain, db, { name: 'foo', arguments: {} }), { output: "Error: Tool 'foo' not found.", error: true });
  });

  it('rejects arguments that are not a JSON object', () => {
    const db = domain.freshDb();
    for (const bad of [null, [], 'key=apple', 3, undefined]) {
      const r = executeToolCall(domain, db, { name: 'get_value', arguments: bad });
      assert.equal(r.error, true);
      assert.match(r.output, /^Error: Arguments of tool 'get_value' must be a JSON object/);
    }
  });

  it('reports an unexpected keyword before missing arguments, as CPython does', () => {
    const db = domain.freshDb();
    assert.deepEqual(executeToolCall(domain, db, { name: 'get_value', arguments: { foo: 1 } }), {
      output: "Error: KvTools.get_value() got an unexpected keyword argument 'foo'",
      error: true,
    });
    // The first unknown keyword in argument order is the one reported.
    const r = executeToolCall(domain, db, { name: 'set_value', arguments: { key: 'a', zeta: 1, alpha: 2 } });
    assert.equal(r.output, "Error: KvTools.set_value() got an unexpected keyword argument 'zeta'");
  });

  it('formats missing arguments like CPython for one, two and three names', () => {
    const db = domain.freshDb();
    assert.equal(
      executeToolCall(domain, db, { name: 'get_value', arguments: {} }).output,
      "Error: KvTools.get_value() missing 1 required positional argument: 'key'",
    );
    assert.equal(
      executeToolCall(domain, db, { name: 'set_value', arguments: {} }).output,
      "Error: KvTools.set_value() missing 2 required positional arguments: 'key' and 'value'",
    );
    assert.equal(
      executeToolCall(domain, db, { name: 'concat', arguments: {} }).output,
      "Error: KvTools.concat() missing 3 required positional arguments: 'a', 'b', and 'c'",
    );
    assert.equal(
      executeToolCall(domain, db, { name: 'concat', arguments: { b: 1 } }).output,
      "Error: KvTools.concat() missing 2 required positional arguments: 'a' and 'c'",
    );
  });

  it('binds a null argument value (present key) without a binding error', () => {
    assert.equal(pythonBindingError('X', { name: 'f', params: ['a'] }, { a: null }), null);
  });

  it('turns ToolError and any other exception into an error result', () => {
    const db = domain.freshDb();
    assert.deepEqual(executeToolCall(domain, db, { name: 'get_value', arguments: { key: 'nope' } }), { output: 'Error: Key not found', error: true });
    assert.deepEqual(executeToolCall(domain, db, { name: 'crash', arguments: {} }), {
      output: "Error: 'NoneType' object is not subscriptable",
      error: true,
    });
  });
});
