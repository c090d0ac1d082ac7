/** The scripted user's templated phrasings (chosen with a seeded generator); slot values follow protocol.ts. */
import { ORDER_DESCRIPTION_PHRASES, REASON_PHRASES, renderAddress, renderOptions } from './protocol.ts';
import type { SynthRng } from './rng.ts';
import type { ItemChange, OrderRef, PaymentRef, SynthIdentity, SynthRequest } from './scenario.ts';

const the = (names: readonly string[]): string => {
  const parts = names.map((n) => `the ${n}`);
  return parts.length <= 1 ? parts.join('') : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
};

export function orderRefText(ref: OrderRef, rng: SynthRng): string {
  if (ref.byId) return rng.pick([`order ${ref.orderId}`, `my order ${ref.orderId}`, `the order ${ref.orderId}`]);
  return `${rng.pick(ORDER_DESCRIPTION_PHRASES)} ${the(ref.productNames)}`;
}

export function paymentText(p: PaymentRef): string {
  switch (p.kind) {
    case 'gift_card':
      return 'my gift card';
    case 'paypal':
      return 'my PayPal account';
    case 'credit_card':
      return `my ${p.brand ?? ''} credit card ending in ${p.lastFour ?? ''}`.replace('  ', ' ');
    case 'original':
      return 'the original payment method';
  }
}

export function reasonText(reason: string, rng: SynthRng): string {
  const phrases = REASON_PHRASES[reason];
  if (!phrases) throw new Error(`No phrasing for cancellation reason '${reason}'`);
  return rng.pick(phrases);
}

function changesText(changes: readonly ItemChange[], verb: 'to' | 'for'): string {
  return changes.map((c) => `the ${c.productName} ${verb} the one with ${renderOptions(c.statedOptions)}`).join('; and ');
}

export function paymentSentence(request: SynthRequest, rng: SynthRng): string {
  if (request.kind === 'return') return rng.pick([`Please send the refund to ${paymentText(request.payment)}.`, `I'd like the refund to go to ${paymentText(request.payment)}.`]);
  if (request.kind === 'modify_items' || request.kind === 'exchange') {
    return rng.pick([`Please use ${paymentText(request.payment)} for any price difference.`, `Any price difference can go through ${paymentText(request.payment)}.`]);
  }
  if (request.kind === 'modify_payment') return `I want to pay with ${paymentText(request.payment)}.`;
  return 'I am not sure.';
}

export function reasonSentence(request: SynthRequest, rng: SynthRng): string {
  if (request.kind !== 'cancel') return 'I am not sure.';
  return rng.pick([`It's because ${reasonText(request.reason, rng)}.`, `The reason is that ${reasonText(request.reason, rng)}.`]);
}

/** The sentence(s) stating a request, with any withheld slot left out. */
export function requestStatement(request: SynthRequest, rng: SynthRng): string {
  switch (request.kind) {
    case 'cancel': {
      const ref = orderRefText(request.order, rng);
      const reason = request.withholdReason ? '' : ` because ${reasonText(request.reason, rng)}`;
      return rng.pick([`I'd like to cancel ${ref}${reason}.`, `Please cancel ${ref}${reason}.`, `I need to cancel ${ref}${reason}.`, `Could you cancel ${ref} for me${reason}?`, `I want ${ref} cancelled${reason}.`]);
    }
    case 'modify_items': {
      const ref = orderRefText(request.order, rng);
      const pay = request.withholdPayment ? '' : ' ' + paymentSentence(request, rng);
      const list = changesText(request.changes, 'to');
      return rng.pick([`I'd like to modify ${ref}: please change ${list}.`, `Could you change some items in ${ref}? I want to switch ${list}.`, `I want to modify the items in ${ref}: switch ${list}.`, `Before ${ref} ships, can you change ${list}?`]) + pay;
    }
    case 'exchange': {
      const ref = orderRefText(request.order, rng);
      const pay = request.withholdPayment ? '' : ' ' + paymentSentence(request, rng);
      const list = changesText(request.changes, 'for');
      return rng.pick([`I want to exchange items from ${ref}: ${list}.`, `Can I exchange something I received in ${ref}? I'd like ${list}.`, `I'd like an exchange on ${ref}: ${list}.`]) + pay;
    }
    case 'return': {
      const ref = orderRefText(request.order, rng);
      const pay = request.withholdPayment ? '' : ' ' + paymentSentence(request, rng);
      const items = the(request.items.map((i) => i.productName));
      return rng.pick([`I want to return ${items} from ${ref}.`, `I'd like to return ${items} that came in ${ref}.`, `Can I return ${items} from ${ref}?`, `I need to send back ${items} from ${ref}, so I want to return it.`]) + pay;
    }
    case 'modify_address': {
      const ref = orderRefText(request.order, rng);
      const addr = renderAddress(request.address);
      return rng.pick([`Please change the shipping address of ${ref} to ${addr}.`, `I need ${ref} sent somewhere else. The new shipping address is ${addr}.`, `Could you update the shipping address for ${ref}? It should go to ${addr}.`]);
    }
    case 'modify_payment': {
      const ref = orderRefText(request.order, rng);
      return rng.pick([`I'd like to change the payment method of ${ref} to ${paymentText(request.payment)}.`, `Can I switch the payment method for ${ref}? ${paymentSentence(request, rng)}`, `Please use a different payment method for ${ref}: ${paymentText(request.payment)}.`]);
    }
    case 'modify_user_address': {
      const addr = renderAddress(request.address);
      return rng.pick([`I recently moved. Please update my default address to ${addr}.`, `Can you change the default address on my account to ${addr}?`, `My default address should now be ${addr}. Can you update it?`]);
    }
    case 'info': {
      const ref = request.order ? orderRefText(request.order, rng) : '';
      switch (request.question) {
        case 'order_total':
          return rng.pick([`How much did I pay in total for ${ref}?`, `What was the total of ${ref}?`, `Can you tell me the total price of ${ref}?`]);
        case 'tracking_id':
          return rng.pick([`What's the tracking number of ${ref}?`, `Could you give me the tracking id for ${ref}?`, `I'd like the tracking number for ${ref}, please.`]);
        case 'order_count':
          return rng.pick(['How many orders have I placed with you?', 'How many orders are on my account?', 'Could you tell me how many orders I have in total?']);
        case 'order_status':
          return rng.pick([`What is the current status of ${ref}?`, `Can you tell me the status of ${ref}?`, `Where does ${ref} stand? I'd like to know its status.`]);
        case 'gift_card_balance':
          return rng.pick(['What is the balance of my gift card?', 'How much balance is left on my gift card?', 'Can you check the balance on my gift card?']);
      }
      break;
    }
    case 'human':
      return rng.pick([`I want to speak to a human agent about ${request.topic}.`, `Can you transfer me to a real person? It's about ${request.topic}.`, `This is about ${request.topic}, and I'd rather talk to a human agent.`]);
  }
  throw new Error(`Unknown request kind ${(request as { kind: string }).kind}`);
}

export function identityReply(identity: SynthIdentity, byEmail: boolean, rng: SynthRng): string {
  if (byEmail) return rng.pick([`My email is ${identity.email}.`, `Sure, it's ${identity.email}.`, `You can use my email, ${identity.email}.`, `It's ${identity.email}.`]);
  const nameZip = rng.pick([
    `My name is ${identity.firstName} ${identity.lastName} and my zip code is ${identity.zip}.`,
    `I'm ${identity.firstName} ${identity.lastName}, zip code ${identity.zip}.`,
    `Sure. My name is ${identity.firstName} ${identity.lastName}, and my zip is ${identity.zip}.`,
  ]);
  return identity.knowsEmail ? nameZip : `I don't remember my email. ${nameZip}`;
}

export const GREETINGS = ['Hi!', 'Hello.', 'Hey there.', 'Good morning.', 'Hi,', 'Good afternoon.', 'Hello there!'] as const;
export const YES_REPLIES = ['Yes, please proceed.', 'Yes, go ahead.', "Yes, that's correct.", 'Yes.', 'Yes, please do that.'] as const;
export const NO_REPLIES = ["No, that's not what I asked for.", "No, that's not right.", 'No, please do not do that.'] as const;
export const CHANGE_OF_MIND = ['No, wait, I changed my mind.', 'Hmm, no. Actually, let me change that.', 'No, sorry, I want something slightly different.'] as const;
export const NEXT_PREFIXES = ['Thanks.', 'Great, thank you.', 'Perfect.', 'Okay.', 'Thank you. One more thing:', 'Great. Also,'] as const;
/** What a user with limited patience (`maxRefusals`) says after the last proposal it turns down. */
export const GIVING_UP = ["Never mind, I'll sort this out another time.", "Let's leave it, I'll call back later.", 'Forget it, thanks anyway.'] as const;
export const CLOSINGS = ["That's all I needed, thank you!", 'Great, thanks for your help.', 'Thanks, that is everything.'] as const;
