import { describe, expect, it } from "vitest";
import { DeliveryLru } from "../../src/routing/dedupe.js";

describe("DeliveryLru", () => {
  it("remembers what was added", () => {
    const lru = new DeliveryLru(3);
    lru.add("a");
    expect(lru.has("a")).toBe(true);
    expect(lru.has("b")).toBe(false);
    expect(lru.size).toBe(1);
  });

  it("evicts the oldest beyond capacity", () => {
    const lru = new DeliveryLru(3);
    for (const id of ["a", "b", "c", "d"]) lru.add(id);
    expect(["a", "b", "c", "d"].map((id) => lru.has(id))).toEqual([false, true, true, true]);
    expect(lru.size).toBe(3);
  });

  it("makes a re-added id the newest", () => {
    const lru = new DeliveryLru(3);
    for (const id of ["a", "b", "c", "a", "d"]) lru.add(id);
    expect(["a", "b", "c", "d"].map((id) => lru.has(id))).toEqual([true, false, true, true]);
    expect(lru.size).toBe(3);
  });

  it("does not refresh on has: a query changes nothing", () => {
    const lru = new DeliveryLru(2);
    lru.add("a");
    lru.add("b");
    expect(lru.has("a")).toBe(true);
    lru.add("c");
    expect(lru.has("a")).toBe(false);
    expect(lru.has("b")).toBe(true);
  });

  it("forgets a deleted id, and deleting an unknown id is a no-op", () => {
    const lru = new DeliveryLru(2);
    lru.add("a");
    lru.delete("a");
    lru.delete("zzz");
    expect(lru.has("a")).toBe(false);
    expect(lru.size).toBe(0);
  });

  it("holds exactly one with capacity 1", () => {
    const lru = new DeliveryLru(1);
    lru.add("a");
    lru.add("b");
    expect(lru.has("a")).toBe(false);
    expect(lru.has("b")).toBe(true);
    expect(lru.size).toBe(1);
  });

  it("stays bounded over many adds", () => {
    const lru = new DeliveryLru(16);
    for (let i = 0; i < 10_000; i++) lru.add(`d-${i}`);
    expect(lru.size).toBe(16);
    expect(lru.has("d-9999")).toBe(true);
    expect(lru.has("d-9984")).toBe(true);
    expect(lru.has("d-9983")).toBe(false);
  });

  it.each([1, 2, 5, 64])("holds what a plain list of the newest ids would, over seeded adds, re-adds and deletes (capacity %i)", (capacity) => {
    // The reference: the ids in order, oldest first.
    const model: string[] = [];
    const lru = new DeliveryLru(capacity);
    let seed = 7 + capacity;
    const random = (below: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % below;
    };
    const universe = capacity * 3;
    const ids = Array.from({ length: universe }, (_, i) => `d-${i}`);
    for (let step = 0; step < 5_000; step++) {
      const id = ids[random(universe)] ?? "";
      const at = model.indexOf(id);
      if (random(10) < 8) {
        if (at !== -1) model.splice(at, 1);
        model.push(id);
        if (model.length > capacity) model.shift();
        lru.add(id);
      } else {
        if (at !== -1) model.splice(at, 1);
        lru.delete(id);
      }
      if (lru.size !== model.length || step % 7 === 0) {
        expect(lru.size).toBe(model.length);
        expect(ids.filter((known) => lru.has(known))).toEqual(ids.filter((known) => model.includes(known)));
      }
    }
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("rejects capacity %s", (capacity) => {
    expect(() => new DeliveryLru(capacity)).toThrow(RangeError);
  });
});
