/**
 * The in-memory half of delivery dedupe: webhooks are redelivered and a poll can see what a
 * webhook already brought. Session records keep their own recent ids, which is what survives a
 * restart; this only has to be cheap and bounded.
 */
export class DeliveryLru {
  // A Set iterates in insertion order, so its first element is always the oldest.
  private readonly ids = new Set<string>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`DeliveryLru capacity must be a positive integer, got ${capacity}`);
    }
  }

  /** A pure query: the router calls it, and deciding must not change what is remembered. */
  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Adding a remembered id makes it the newest again. */
  add(id: string): void {
    this.ids.delete(id);
    this.ids.add(id);
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.values().next();
      if (oldest.done !== true) this.ids.delete(oldest.value);
    }
  }

  /** Forgets an id, so a delivery whose handling failed can be retried. */
  delete(id: string): void {
    this.ids.delete(id);
  }

  get size(): number {
    return this.ids.size;
  }
}
