import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { itemNote, noteIdKind, variantEntries, variantNote, walkNote } from '../../../src/domains/retail/synth/expert.ts';

describe('noteIdKind (which id of a note starts here)', () => {
  const item = { name: 'Digital Camera', product_id: '4887067900', item_id: '6928044763' };
  const order = `{"order_id": "#W1", "items": [${itemNote(item).slice(0, -1)}, "price": 1.0}]}`;
  const note = `${itemNote(item)}\n${variantNote(item, { options: { zoom: '10x' }, item_id: '2638576702' })}`;
  const text = `<|start|>functions.get_order_details to=assistant<|channel|>commentary<|message|>${order}<|end|>` +
    `<|start|>assistant<|channel|>analysis<|message|>${note}<|end|><|start|>assistant<|channel|>final<|message|>ok`;
  const at = (needle: string, from = 0) => text.indexOf(needle, from) + needle.length;
  const noteStart = text.indexOf('analysis<|message|>');

  it('names the product, item and new-variant ids of a note, and nothing outside notes', () => {
    assert.equal(noteIdKind(text, at('"product_id": "', noteStart)), 'product');
    assert.equal(noteIdKind(text, at('"item_id": "', noteStart)), 'item');
    // second line: the item's own ids come before ` -> ` and are scored as the item's; the one after it is the variant
    const line2 = text.indexOf('\n', noteStart);
    assert.equal(noteIdKind(text, at('"product_id": "', line2)), 'product');
    assert.equal(noteIdKind(text, at('"item_id": "', line2)), 'item');
    assert.equal(noteIdKind(text, at('} -> {"options": {"zoom": "10x"}, "item_id": "', noteStart)), 'variant');
    // the same text in the tool result is not a note
    assert.equal(noteIdKind(text, at('"product_id": "')), undefined);
    assert.equal(noteIdKind(text, at('"item_id": "')), undefined);
    // after the note's message ended
    assert.equal(noteIdKind(text, text.length), undefined);
    // a note position that is not an id
    assert.equal(noteIdKind(text, noteStart + 'analysis<|message|>'.length), undefined);
  });

  it('a variant walk: its entries\' ids are `walk`, the id after ` -> {"item_id": "` is the variant', () => {
    const product = '{"name": "Digital Camera", "product_id": "4887067900", "variants": {"9999999999": {"item_id": "9999999999", "options": {"zoom": "3x"}, "available": true, "price": 1.5}, ' +
      '"1234567890": {"item_id": "1234567890", "options": {"zoom": "10x", "note": "a } in {text}"}, "available": false, "price": 2.0}, "2638576702": {"item_id": "2638576702", "options": {"zoom": "10x"}, "available": true, "price": 3.0}}}';
    // printed order (a parsed object would put 1234567890, below 2^32 - 1, first), up to the one asked for
    const entries = variantEntries(product, '2638576702')!;
    assert.deepEqual(entries.map((e) => /^"(\d+)"/.exec(e)![1]), ['9999999999', '1234567890', '2638576702']);
    assert.ok(entries.every((e) => product.includes(e)));
    assert.equal(entries[1], '"1234567890": {"item_id": "1234567890", "options": {"zoom": "10x", "note": "a } in {text}"}', 'up to the options, braces in strings skipped');
    assert.deepEqual(variantEntries(product, '9999999999'), [entries[0]]);
    assert.equal(variantEntries(product, '5555555555'), null);
    assert.equal(variantEntries('{"name": "x"}', '9999999999'), null);
    const walk = walkNote(item, { options: { zoom: '10x' }, item_id: '2638576702' }, entries);
    const t = `<|start|>assistant<|channel|>analysis<|message|>${walk}<|end|>`;
    const lines = walk.split('\n');
    assert.equal(lines.length, 5);
    assert.equal(lines[4], `${itemNote(item)} -> {"item_id": "2638576702", "options": {"zoom": "10x"}}`);
    const from = t.indexOf(lines[2]!);
    assert.equal(noteIdKind(t, from + 1), 'walk');
    assert.equal(noteIdKind(t, from + '"1234567890": {"item_id": "'.length), 'walk');
    assert.equal(noteIdKind(t, t.indexOf(' -> {"item_id": "') + ' -> {"item_id": "'.length), 'variant');
    assert.equal(noteIdKind(t, t.indexOf('"product_id": "') + '"product_id": "'.length), 'product');
  });
});
