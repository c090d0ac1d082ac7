/** Parameter descriptions shared by several retail tools (written for this project; same hints as τ²'s). */
import type { ParamSpec } from './define.ts';

export const ORDER_ID_PARAM: ParamSpec = {
  name: 'order_id',
  type: 'string',
  description: "The order id, e.g. '#W0000000'. Order ids start with a '#' character; keep it.",
};

export const CONFIRMATION_RULE =
  'Before calling, lay out the details of the change for the user and ask for an explicit yes/no confirmation.';

export function addressParams(): ParamSpec[] {
  return [
    { name: 'address1', type: 'string', description: "First line of the address, e.g. '123 Main St'." },
    { name: 'address2', type: 'string', description: "Second line of the address, e.g. 'Apt 1', or '' if there is none." },
    { name: 'city', type: 'string', description: "City, e.g. 'San Francisco'." },
    { name: 'state', type: 'string', description: "State, e.g. 'CA'." },
    { name: 'country', type: 'string', description: "Country, e.g. 'USA'." },
    { name: 'zip', type: 'string', description: "Zip code, e.g. '12345'." },
  ];
}

export const PRICE_DIFFERENCE_PAYMENT_PARAM: ParamSpec = {
  name: 'payment_method_id',
  type: 'string',
  description:
    "Payment method that pays, or is refunded, the price difference, e.g. 'gift_card_0000000' or " +
    "'credit_card_0000000'. The user's and the order's details list the available ids.",
};
