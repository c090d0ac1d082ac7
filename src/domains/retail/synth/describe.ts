/** The τ²-style instruction texts of a generated task (second person, for an LLM user simulator reading the task). */
import { renderAddress, renderOptions } from './protocol.ts';
import type { OrderRef, SynthRequest, SynthScenario } from './scenario.ts';
import { paymentText } from './user-phrasing.ts';

const yours = (s: string): string => s.replace(/^my /, 'your ');

function orderText(ref: OrderRef): string {
  return ref.byId ? `order ${ref.orderId}` : `your order containing ${ref.productNames.join(' and ')} (you do not remember its id)`;
}

function describeRequest(r: SynthRequest): string {
  switch (r.kind) {
    case 'cancel':
      return `You want to cancel ${orderText(r.order)}; your reason: ${r.reason}.`;
    case 'modify_items':
    case 'exchange': {
      const verb = r.kind === 'exchange' ? 'exchange' : 'modify';
      const list = r.changes.map((c) => `the ${c.productName} to the variant with ${renderOptions(c.statedOptions)}`).join('; ');
      const mind = r.droppedChange ? ` At first you also ask to change the ${r.droppedChange.productName} to the variant with ${renderOptions(r.droppedChange.statedOptions)}, but when the agent asks you to confirm, you change your mind and leave it as it is.` : '';
      return `You want to ${verb} items in ${orderText(r.order)}: ${list}. Use ${yours(paymentText(r.payment))} for the price difference.${mind}`;
    }
    case 'return': {
      const mind = r.droppedItem ? ` At first you also ask to return the ${r.droppedItem.productName}, but when the agent asks you to confirm, you change your mind and keep it.` : '';
      return `You want to return ${r.items.map((i) => `the ${i.productName}`).join(' and ')} from ${orderText(r.order)}, refunded to ${yours(paymentText(r.payment))}.${mind}`;
    }
    case 'modify_address':
      return `You want the shipping address of ${orderText(r.order)} changed to ${renderAddress(r.address)}.`;
    case 'modify_payment':
      return `You want to pay for ${orderText(r.order)} with ${yours(paymentText(r.payment))} instead.`;
    case 'modify_user_address':
      return `You moved and want your default address changed to ${renderAddress(r.address)}.`;
    case 'info': {
      const about = r.order ? ` of ${orderText(r.order)}` : '';
      const q = { order_total: 'the total', tracking_id: 'the tracking number', order_count: 'how many orders you have', order_status: 'the status', gift_card_balance: 'your gift card balance' }[r.question];
      return `You want to know ${q}${about}.`;
    }
    case 'human':
      return `You want to talk to a human agent about ${r.topic}.`;
  }
}

export function reasonForCall(s: SynthScenario): string {
  const parts = s.requests.map(describeRequest);
  const order = s.requests.length > 1 ? ' Ask for one thing at a time, in this order.' : '';
  return parts.join(' ') + order;
}

export function knownInfo(s: SynthScenario): string {
  const { firstName, lastName, zip, email, knowsEmail } = s.identity;
  return `You are ${firstName} ${lastName}, zip code ${zip}.` + (knowsEmail ? ` Your email is ${email}.` : '');
}

export function unknownInfo(s: SynthScenario): string | null {
  return s.identity.knowsEmail ? null : 'You do not remember your email address.';
}

export const TASK_INSTRUCTIONS = [
  'You reveal details about yourself only when asked.',
  'You are polite and answer the agent’s questions briefly.',
  'You like to do one thing at a time.',
] as const;
