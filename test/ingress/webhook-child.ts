/**
 * The webhook receiver alone in a child process, for tests whose client must not share its
 * event loop (a refused upload's timing depends on it) or that read its memory. Started with
 * fork() and `--import tsx`; the parent sends the config's overrides and the receiver's options,
 * the child answers `{ port }`, and then `"rss"` with `{ rss, rejected }` on each request.
 */
import { ghWebhookSchema } from "../../src/config/schema.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { WebhookReceiver } from "../../src/ingress/webhook/server.js";

interface Setup {
  readonly config: Record<string, unknown>;
  readonly options: Record<string, number>;
  readonly secret: string;
}

process.once("message", (setup: Setup) => {
  void (async () => {
    const events = new MemoryEventSink();
    const receiver = new WebhookReceiver({
      config: ghWebhookSchema.parse({ enabled: true, port: 0, ...setup.config }),
      handler: { handle: () => Promise.resolve({ settled: true }) },
      events,
      env: { THE_LOOP_GH_WEBHOOK_SECRET: setup.secret },
      stopGraceMs: 100,
      ...setup.options,
    });
    const address = await receiver.start();
    process.on("message", (message: unknown) => {
      if (message !== "rss") return;
      const rejected: Record<string, number> = {};
      for (const event of events.events) {
        if (event.type !== "webhook.rejected") continue;
        const key = `${String(event.fields.reason)} ${String(event.fields.status)}`;
        rejected[key] = (rejected[key] ?? 0) + 1;
      }
      process.send?.({ rss: process.memoryUsage().rss, rejected });
    });
    process.on("disconnect", () => void receiver.stop().finally(() => process.exit(0)));
    process.send?.({ port: address.port });
  })();
});
