import { randomUUID } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import { ghWebhookSchema } from "../../src/config/schema.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { WebhookReceiver } from "../../src/ingress/webhook/server.js";
import { waitFor } from "../support/wait.js";
import { RecordingHandler, receiversStoppedAfterEach } from "../support/webhook.js";

/** A correctly signed delivery that is not what GitHub sends is refused, never handed over (issue 15, item 4). */

const SECRET = "s3cret-for-the-malformed-test";

const started = receiversStoppedAfterEach();

function payload(issueExtra: Record<string, unknown>): Record<string, unknown> {
  return {
    action: "created",
    issue: {
      number: 7,
      title: "Bug",
      body: "",
      state: "open",
      labels: [{ name: "the-loop" }],
      html_url: "https://github.com/octo/repo/issues/7",
      ...issueExtra,
    },
    comment: { id: 107, body: "please start", user: { login: "alice" }, html_url: "https://github.com/octo/repo/issues/7#issuecomment-107" },
    repository: { full_name: "octo/repo", html_url: "https://github.com/octo/repo" },
    sender: { login: "alice" },
  };
}

describe("the webhook receiver and a signed payload that is not what GitHub sends", () => {
  it("answers 400, records webhook.rejected with the delivery id, and hands nothing over", async () => {
    const handler = new RecordingHandler();
    const events = new MemoryEventSink();
    const config = ghWebhookSchema.parse({ enabled: true, port: 0, maxBodyBytes: 16_384 });
    const receiver = new WebhookReceiver({ config, handler, events, env: { THE_LOOP_GH_WEBHOOK_SECRET: SECRET }, defaultHost: "github.com" });
    const address = await receiver.start();
    started.push(receiver);
    const url = `http://127.0.0.1:${address.port}${config.path}`;
    const send = async (body: string): Promise<{ status: number; deliveryId: string }> => {
      const deliveryId = randomUUID();
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "issue_comment",
          "x-github-delivery": deliveryId,
          "x-hub-signature-256": await sign(SECRET, body),
        },
        body,
      });
      await response.text();
      return { status: response.status, deliveryId };
    };

    const malformed = [
      payload({ labels: ["the-loop"] }),
      payload({ pull_request: "yes" }),
      payload({ html_url: "javascript:alert(1)" }),
      payload({ html_url: "https://evil.example/octo/repo/issues/7" }),
      { ...payload({}), comment: { id: "107", body: "please start", user: { login: "alice" } } },
    ];
    const sent: string[] = [];
    for (const body of malformed) {
      const answer = await send(JSON.stringify(body));
      expect(answer.status).toBe(400);
      sent.push(answer.deliveryId);
    }
    // The same delivery, well formed, is acted on: the refusals were about the shape alone.
    const good = await send(JSON.stringify(payload({})));
    expect(good.status).toBe(202);
    await waitFor("the good delivery", () => handler.received.length === 1 || undefined);

    expect(handler.received.map((event) => event.deliveryId)).toEqual([good.deliveryId]);
    const rejected = events.events.filter((event) => event.type === "webhook.rejected");
    expect(rejected.map((event) => event.fields)).toEqual(
      sent.map((deliveryId) => ({
        reason: "invalid-payload",
        status: 400,
        delivery_id: deliveryId,
        github_event: "issue_comment",
        detail: expect.any(String),
      })),
    );
    // The detail names the field, never the value it held.
    expect(rejected.map((event) => String(event.fields.detail).split(":")[0])).toEqual([
      expect.stringMatching(/labels/),
      expect.stringMatching(/pull_request/),
      expect.stringMatching(/html_url/),
      expect.stringMatching(/html_url/),
      expect.stringMatching(/comment\.id/),
    ]);
    expect(rejected.some((event) => /javascript|evil\.example/.test(String(event.fields.detail)))).toBe(false);
    expect(events.events.some((event) => event.type === "webhook.received" && event.fields.delivery_id !== good.deliveryId)).toBe(false);
  });
});
