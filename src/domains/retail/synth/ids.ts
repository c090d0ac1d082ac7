/** Unique ids in the τ² retail shapes (tau2.md §2), drawn from a seeded generator. */
import type { SynthRng } from './rng.ts';

export class IdFactory {
  private readonly used = new Set<string>();

  constructor(private readonly rng: SynthRng) {}

  private unique(make: () => string): string {
    for (let tries = 0; tries < 1000; tries++) {
      const id = make();
      if (!this.used.has(id)) {
        this.used.add(id);
        return id;
      }
    }
    throw new Error('Could not draw a unique id after 1000 tries (the id space is exhausted)');
  }

  /** 10-digit product or item id; the two kinds share one namespace so no string is both. */
  catalogId(): string {
    return this.unique(() => this.rng.digits(10, true));
  }

  orderId(): string {
    return this.unique(() => '#W' + this.rng.digits(7, true));
  }

  trackingId(): string {
    return this.unique(() => this.rng.digits(12, true));
  }

  paymentMethodId(source: 'credit_card' | 'gift_card' | 'paypal'): string {
    return this.unique(() => `${source}_${this.rng.digits(7, true)}`);
  }

  userId(first: string, last: string): string {
    return this.unique(() => `${first.toLowerCase()}_${last.toLowerCase()}_${this.rng.digits(4, true)}`);
  }
}
