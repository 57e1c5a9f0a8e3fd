import type { ControlCommand, ControlOutcome } from "../../../control/types.js";
import { queuedSentence } from "./queued.js";
import type { QueuedPlace } from "./queued.js";

/** What an applied command did, in a sentence. */
export function effectSentence(command: ControlCommand, ref: string, outcome: Extract<ControlOutcome, { applied: true }>, place?: QueuedPlace): string {
  const session = outcome.session ? ` (${outcome.session.tmuxTarget})` : "";
  const start = `\`the-loop sessions start --work-item ${ref}\``;
  const queued = place === undefined ? undefined : queuedSentence(command, ref, outcome.effect, place);
  if (queued !== undefined) return queued;
  switch (outcome.effect) {
    case "started":
      return `started a session for ${ref}${session}; watch it with \`the-loop sessions attach --work-item ${ref}\``;
    case "start-pending":
      return `the start of ${ref} is recorded, but its session could not be spawned${outcome.problem ? `: ${outcome.problem}` : ""}`;
    case "resumed":
      return `resumed the session of ${ref}${session}; it is told to re-read the thread, as events that arrived while it was paused were not delivered`;
    case "paused":
      return `paused the session of ${ref}${session}; events are recorded and dropped until \`the-loop sessions resume --work-item ${ref}\``;
    case "stopped":
      return `stopped the session of ${ref}${session}; ${ref} does not start again until ${start}`;
    case "recorded":
      return `${ref} has no live session; recorded the ${command}: no session starts for it until ${start}`;
    case "noop":
      if (command === "pause") return `the session of ${ref}${session} is already paused; recorded the pause again`;
      if (command === "resume") return `the session of ${ref}${session} is not paused; nothing to resume`;
      return `the session of ${ref}${session} is already running; nothing to start`;
  }
}
