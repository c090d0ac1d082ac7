import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { itemNote, noteIdKind, variantNote } from '../../../src/domains/retail/synth/expert.ts';

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
});
