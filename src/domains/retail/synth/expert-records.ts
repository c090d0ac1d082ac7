/** The parts of tool outputs (JSON) the expert reads. */

export interface OrderItemJson {
  name: string;
  product_id: string;
  item_id: string;
  price: number;
  options: Record<string, string>;
}

export interface OrderJson {
  order_id: string;
  user_id: string;
  items: OrderItemJson[];
  status: string;
  fulfillments: { tracking_id: string[]; item_ids: string[] }[];
  payment_history: { transaction_type: string; amount: number; payment_method_id: string }[];
}

export interface PaymentMethodJson {
  source: string;
  id: string;
  brand?: string;
  last_four?: string;
  balance?: number;
}

export interface UserJson {
  user_id: string;
  orders: string[];
  payment_methods: Record<string, PaymentMethodJson>;
}

export interface ProductJson {
  name: string;
  product_id: string;
  variants: Record<string, { item_id: string; options: Record<string, string>; available: boolean; price: number }>;
}

export function parseJsonObject<T>(text: string): T | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as T) : null;
  } catch {
    return null;
  }
}
