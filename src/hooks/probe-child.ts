import { messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import { HookLoadError, loadHooks } from "./load.js";
import { isLoadRequest } from "./probe.js";
import type { HookLoadRequest, HookLoadResult } from "./probe.js";

/**
 * The child of probe.ts: loads the declaration it is given with the daemon's loader, answers over
 * IPC, and exits — whatever a hook module left running (a timer, an open socket) ends with it.
 */

function reply(result: HookLoadResult): void {
  // eslint-disable-next-line no-restricted-properties -- a process of its own, not the CLI: what a module left running (a timer, a socket) must not keep it alive
  process.send?.(result, () => process.exit(0));
}

// As the daemon with hooks loaded does (serve.ts): a promise a module leaves rejected does not end it.
process.on("unhandledRejection", () => undefined);

// A check records nothing: the event log is the daemon's.
const events: EventSink = { emit: () => undefined };

async function check(request: HookLoadRequest): Promise<void> {
  try {
    const chain = await loadHooks({
      raw: request.raw,
      configDir: request.configDir,
      ...(request.configPath === undefined ? {} : { configPath: request.configPath }),
      ...(request.importTimeoutMs === undefined ? {} : { importTimeoutMs: request.importTimeoutMs }),
      events,
    });
    const hooks = chain.names;
    // The entries loaded, which is all a check asks; a hook whose close fails is the daemon's to report when it stops, and this process exits next.
    await chain.close().catch(() => undefined);
    reply({ ok: true, hooks });
  } catch (error) {
    reply({ ok: false, message: messageOf(error), ...(error instanceof HookLoadError && error.hook !== undefined ? { hook: error.hook } : {}) });
  }
}

// The parent sends one request (probe.ts), and the child ends after answering it.
process.once("message", (request: unknown) => {
  if (isLoadRequest(request)) void check(request);
  else reply({ ok: false, message: "the hook check was sent no valid request (configDir, and optionally configPath and importTimeoutMs)" });
});
