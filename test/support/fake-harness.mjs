// A stand-in agent harness for the tmux tests: it records what it was started with and every
// input submitted to it, as JSON lines in the transcript file named by its first argument.
//
//   node fake-harness.mjs <transcriptPath> [argv the harness would get...]
//
// FAKE_HARNESS_EXIT_AFTER_BOOT=1  exit right after the boot line (a pane that dies at once)
// FAKE_HARNESS_IGNORE_TERM=1      ignore SIGTERM (so SIGKILL escalation can be observed)
// FAKE_HARNESS_RECORD_ENV=1       put its whole environment on the boot line (`environment`)
import { appendFileSync } from "node:fs";

const [transcript, ...rest] = process.argv.slice(2);
if (!transcript) {
  process.stderr.write("usage: fake-harness.mjs <transcriptPath> [argv...]\n");
  process.exit(2);
}

const record = (entry) => appendFileSync(transcript, `${JSON.stringify(entry)}\n`);

process.on("SIGTERM", () => {
  if (process.env.FAKE_HARNESS_IGNORE_TERM !== "1") process.exit(0);
});

// Bracketed paste and raw mode come before the boot line: a test that saw the boot line may
// deliver at once, and the paste must already arrive bracketed, byte for byte.
// FAKE_HARNESS_NO_BRACKETED_PASTE=1: a harness that never asks for it, yet reads the markers.
if (process.env.FAKE_HARNESS_NO_BRACKETED_PASTE !== "1") process.stdout.write("\x1b[?2004h");
if (process.stdin.isTTY) process.stdin.setRawMode(true);

record({
  type: "boot",
  argv: rest,
  cwd: process.cwd(),
  env: { THE_LOOP_WORK_ITEM: process.env.THE_LOOP_WORK_ITEM ?? null },
  ...(process.env.FAKE_HARNESS_RECORD_ENV === "1" ? { environment: { ...process.env } } : {}),
});
// Raw mode turns off output post-processing, so lines end in \r\n.
if (process.env.FAKE_HARNESS_EXIT_AFTER_BOOT === "1") {
  process.stdout.write("fake-harness: exiting after boot\r\n");
  process.exit(0);
}
// tmux has read the bracketed paste switch once this line is on the screen, which is what tests
// wait for before delivering.
process.stdout.write("fake-harness: ready\r\n");

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
let pending = "";
let pendingSeen = false;
let pasting = false;
let buffer = "";

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  for (;;) {
    if (pasting) {
      const end = buffer.indexOf(PASTE_END);
      if (end === -1) return;
      // A terminal (and tmux) turns a pasted line feed into a carriage return; inside a paste
      // that is a line break, not Enter.
      pending += buffer.slice(0, end).replace(/\r\n?/g, "\n");
      pendingSeen = true;
      buffer = buffer.slice(end + PASTE_END.length);
      pasting = false;
      continue;
    }
    if (buffer === "") return;
    if (buffer.startsWith(PASTE_START)) {
      buffer = buffer.slice(PASTE_START.length);
      pasting = true;
      continue;
    }
    // A split escape sequence: wait for the rest before deciding what it is.
    if (PASTE_START.startsWith(buffer)) return;
    const char = buffer[0];
    buffer = buffer.slice(1);
    if (char === "\r" || char === "\n") {
      if (!pendingSeen) continue;
      record({ type: "input", text: pending });
      process.stdout.write(`fake-harness: got ${pending.length} chars: ${JSON.stringify(pending.split("\n")[0])}\r\n`);
      pending = "";
      pendingSeen = false;
    } else {
      pending += char;
      pendingSeen = true;
    }
  }
});
