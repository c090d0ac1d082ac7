/**
 * The 16 retail tools of τ²-bench (v1.0), in the order τ² shows them to the model, with τ²'s exact checks, error
 * strings, float arithmetic and output rendering.
 *
 * `tau2Compat: true` (default) keeps τ²'s behaviour, quirks included. With `tau2Compat: false` the tools fix them:
 * - modify_pending_order_items: each changed item takes the price and options of its *own* new variant (τ² copies
 *   them from the last variant of the call, so results depend on the order of the pairs), and the payment row and
 *   gift-card change use the price difference rounded to cents (τ² stores the raw float sum);
 * - modify_pending_order_address / _payment: only status "pending" qualifies (τ² accepts any status containing
 *   "pending", so also "pending (item modified)", which the policy says can no longer be modified);
 * - exchange_delivered_order_items: exchanging an item for the same item id is refused, with the modify-items message;
 * - exchange / modify-items / return: item lists must be non-empty arrays of strings (τ² accepts empty lists and
 *   iterates a string character by character);
 * - cancel_pending_order: every refund target is checked before any gift card is credited (τ² can fail half-way).
 */
import type { Tool } from '../../tooluse/types.ts';
import type { RetailDb } from './db.ts';
import { calculateTool, transferToHumanAgentsTool } from './tools/generic-tools.ts';
import type { RetailToolOptions } from './tools/lookups.ts';
import {
  createModifyPendingOrderAddressTool,
  createModifyPendingOrderItemsTool,
  createModifyPendingOrderPaymentTool,
  createModifyUserAddressTool,
} from './tools/modify-tools.ts';
import {
  createCancelPendingOrderTool,
  createExchangeDeliveredOrderItemsTool,
  createReturnDeliveredOrderItemsTool,
} from './tools/order-tools.ts';
import {
  findUserIdByEmailTool,
  findUserIdByNameZipTool,
  getItemDetailsTool,
  getOrderDetailsTool,
  getProductDetailsTool,
  getUserDetailsTool,
  listAllProductTypesTool,
} from './tools/read-tools.ts';

export type { RetailToolOptions } from './tools/lookups.ts';

/** Which τ² release's tool list: v1.0 has 16 tools; v0.x lacks `get_item_details`. */
export type RetailToolSet = 'v1' | 'v0';

export function createRetailTools(options: Partial<RetailToolOptions> & { toolSet?: RetailToolSet } = {}): Tool<RetailDb>[] {
  const opts: RetailToolOptions = { tau2Compat: options.tau2Compat ?? true };
  const tools: Tool<RetailDb>[] = [
    calculateTool,
    createCancelPendingOrderTool(opts),
    createExchangeDeliveredOrderItemsTool(opts),
    findUserIdByNameZipTool,
    findUserIdByEmailTool,
    getOrderDetailsTool,
    getProductDetailsTool,
    getItemDetailsTool,
    getUserDetailsTool,
    listAllProductTypesTool,
    createModifyPendingOrderAddressTool(opts),
    createModifyPendingOrderItemsTool(opts),
    createModifyPendingOrderPaymentTool(opts),
    createModifyUserAddressTool(),
    createReturnDeliveredOrderItemsTool(opts),
    transferToHumanAgentsTool,
  ];
  return (options.toolSet ?? 'v1') === 'v0' ? tools.filter((t) => t.name !== 'get_item_details') : tools;
}
