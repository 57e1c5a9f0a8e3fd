import { afterEach } from "vitest";
import type { WebhookReceiver } from "../../src/ingress/webhook/server.js";
import type { EventHandler, HandleResult, InboundEvent } from "../../src/routing/index.js";

/** A handler that keeps every event the receiver hands it; `outcome` says how each is settled. */
export class RecordingHandler implements EventHandler {
  readonly received: InboundEvent[] = [];
  constructor(private readonly outcome: (event: InboundEvent) => Promise<HandleResult> = () => Promise.resolve({ settled: true })) {}
  handle(event: InboundEvent): Promise<HandleResult> {
    this.received.push(event);
    return this.outcome(event);
  }
}

/** The list a test pushes each receiver it starts onto; every one is stopped after each test. */
export function receiversStoppedAfterEach(): WebhookReceiver[] {
  const started: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((receiver) => receiver.stop()));
  });
  return started;
}
