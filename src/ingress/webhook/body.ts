import { createHmac, timingSafeEqual } from "node:crypto";
import type { Hmac } from "node:crypto";

/**
 * What the receiver needs to hold a delivery's body safely before anyone is authenticated: a
 * budget shared by every body in flight, the signature computed over the raw bytes as they
 * arrive, and the bytes decoded as UTF-8 only after the signature holds.
 */

/**
 * The bytes all bodies in flight may hold together. A body reserves its declared length up
 * front (refused at once when there is no room) and grows its reservation as undeclared
 * (chunked) bytes arrive; the reservation is given back when the body is done with, refused or
 * abandoned.
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Bytes reserved by the bodies in flight. */
  get inFlight(): number {
    return this.used;
  }

  /** A reservation of `bytes`, or undefined when the budget has no room for them. */
  open(bytes: number): BodyReservation | undefined {
    if (!this.take(bytes)) return undefined;
    return new BodyReservation(this, bytes);
  }

  /** @internal */
  take(bytes: number): boolean {
    if (!Number.isFinite(bytes) || bytes < 0 || this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  /** @internal */
  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

export class BodyReservation {
  private released = false;

  constructor(
    private readonly budget: BodyBudget,
    private held: number,
  ) {}

  /** Makes the reservation cover `total` bytes; false (and nothing taken) when the budget has no room. */
  cover(total: number): boolean {
    if (this.released) return false;
    if (total <= this.held) return true;
    if (!this.budget.take(total - this.held)) return false;
    this.held = total;
    return true;
  }

  /** Gives the bytes back; a second call does nothing. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.give(this.held);
    this.held = 0;
  }
}

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;

/** GitHub's X-Hub-Signature-256 over the raw body bytes, fed chunk by chunk as they arrive. */
export class BodySignature {
  private readonly hmac: Hmac;

  constructor(secret: string) {
    this.hmac = createHmac("sha256", secret);
  }

  update(chunk: Buffer): void {
    this.hmac.update(chunk);
  }

  /** Whether `header` is `sha256=<hex>` of the bytes fed; compared in constant time. Call once. */
  matches(header: string): boolean {
    const digest = this.hmac.digest();
    const match = SIGNATURE.exec(header.trim());
    if (match?.[1] === undefined) return false;
    return timingSafeEqual(digest, Buffer.from(match[1], "hex"));
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The bytes as text, or undefined when they are not valid UTF-8 (a leading BOM is dropped). */
export function utf8Text(bytes: Buffer): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Whether a Content-Encoding header leaves the body as sent: absent, empty or only `identity`. */
export function isIdentityEncoding(header: string | undefined): boolean {
  if (header === undefined) return true;
  return header
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .every((coding) => coding === "" || coding === "identity");
}
