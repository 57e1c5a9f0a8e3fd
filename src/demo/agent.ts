import { execFile } from "node:child_process";
import { appendFileSync } from "node:fs";

/**
 * The demo's stand-in for a coding agent, run as a harness (`node dist/demo/agent.js {prompt}`)
 * so `the-loop demo` can show a real session without an AI harness installed. It reads its boot
 * prompt, asks one question through `the-loop ask`, and acknowledges every event pasted into it.
 * On a process graph (its prompt or a pasted assignment names the claim command), once its
 * question is answered it claims its node with that command, as a real agent does when done.
 * Standalone on purpose: it imports nothing from the rest of the-loop.
 */

const QUESTION = "Should the /healthz endpoint also report the build version?";
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
const LINE_WIDTH = 70;
/** The claim an assignment tells the agent to make (src/graph-run/assignment.ts's claimCommand). */
const CLAIM = /the-loop graph complete --node ([a-z0-9-]+)/;
const ASSIGNMENT = "the-loop assignment for ";

const prompt = process.argv[2] ?? "";
const workItem = process.env.THE_LOOP_WORK_ITEM;
const transcript = process.env.THE_LOOP_DEMO_TRANSCRIPT;

function record(entry: Record<string, unknown>): void {
  if (transcript) appendFileSync(transcript, `${JSON.stringify(entry)}\n`);
}

/** Raw mode turns off the terminal's newline translation, so every line ends in \r\n itself. */
function say(text: string): void {
  process.stdout.write(`${text.replace(/\n/g, "\r\n")}\r\n`);
}

function firstLines(text: string, count: number): string {
  return text
    .split(/\r?\n|\r/)
    .filter((line) => line.trim() !== "")
    .slice(0, count)
    .join("\n");
}

process.on("SIGTERM", () => {
  say("👋 demo agent stopping");
  // eslint-disable-next-line no-restricted-properties -- a harness process of its own, not the CLI: nothing above it to throw to
  process.exit(0);
});

// Ask for pastes to arrive bracketed, so a multi-line event is one input, not one per line.
process.stdout.write("\x1b[?2004h");
if (process.stdin.isTTY) process.stdin.setRawMode(true);
record({ type: "boot", prompt });
let claimNode = CLAIM.exec(prompt)?.[1];
let claimed = false;
let asked = false;

say(`🤖 demo agent here. I was started with:\n${(firstLines(prompt, 3) || "(no prompt)").replace(/^/gm, "   │ ")}`);

if (workItem) {
  say(`❓ asking: ${QUESTION}`);
  execFile("the-loop", ["ask", "--work-item", workItem, QUESTION], (error) => {
    if (error) say(`⚠️  the-loop ask failed: ${error.message.trim()}`);
    else {
      asked = true;
      say("⏳ waiting for an answer on the work item…");
    }
  });
} else {
  say("⚠️  THE_LOOP_WORK_ITEM is not set, so there is nobody to ask");
}

let buffer = "";
let pasting = false;
let pending: string | undefined;

/** Short enough that the demo's narration, which quotes these lines indented, fits an 80-column terminal. */
function clipped(line: string): string {
  return line.length > LINE_WIDTH ? `${line.slice(0, LINE_WIDTH - 1)}…` : line;
}

/** The first lines of an input, so the answer a person wrote is seen arriving, not only its header. */
function submit(text: string): void {
  record({ type: "input", text });
  const [first = "", ...rest] = firstLines(text, 3).split("\n");
  say(clipped(`✅ got it: ${first}`));
  for (const line of rest) say(clipped(`   │ ${line}`));
  claimNode = CLAIM.exec(text)?.[1] ?? claimNode;
  // An input that is not an assignment is the answer to its question: the work is done, so claim.
  if (!text.includes(ASSIGNMENT)) claim();
}

/** `the-loop graph complete --node NODE`, once: the daemon checks the node and moves the item. */
function claim(): void {
  if (claimNode === undefined || claimed || !asked || !workItem) return;
  claimed = true;
  say(`📌 done; claiming: the-loop graph complete --node ${claimNode}`);
  execFile("the-loop", ["graph", "complete", "--node", claimNode], (error, out) => {
    if (error) say(`⚠️  the-loop graph complete failed: ${error.message.trim()}`);
    else say(clipped(`🏁 ${out.trim().split("\n")[0] ?? "claimed"}`));
  });
}

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
  buffer += chunk;
  for (;;) {
    if (pasting) {
      const end = buffer.indexOf(PASTE_END);
      if (end === -1) return;
      pending = (pending ?? "") + buffer.slice(0, end).replace(/\r\n?/g, "\n");
      buffer = buffer.slice(end + PASTE_END.length);
      pasting = false;
    } else if (buffer.startsWith(PASTE_START)) {
      buffer = buffer.slice(PASTE_START.length);
      pasting = true;
    } else if (buffer === "" || PASTE_START.startsWith(buffer)) {
      return;
    } else {
      const char = buffer[0];
      buffer = buffer.slice(1);
      if (char === "\u0003") {
        // Ctrl-C in raw mode arrives as a byte, not a signal; honour it like a terminal would.
        process.kill(process.pid, "SIGTERM");
      } else if (char === "\r" || char === "\n") {
        if (pending !== undefined) submit(pending);
        pending = undefined;
      } else {
        pending = (pending ?? "") + char;
      }
    }
  }
});
