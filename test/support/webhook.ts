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

/** An `issue_comment` payload for issue `number`, shaped as GitHub sends it. */
export function commentPayload(body: string, number = 7): Record<string, unknown> {
  return {
    action: "created",
    issue: { number, title: "Bug", body: "", state: "open", labels: [], html_url: `https://github.com/octo/repo/issues/${number}` },
    comment: { id: 100, body, user: { login: "alice" }, created_at: "2025-01-01T00:00:00Z" },
    repository: { full_name: "octo/repo", html_url: "https://github.com/octo/repo" },
    sender: { login: "alice" },
  };
}
