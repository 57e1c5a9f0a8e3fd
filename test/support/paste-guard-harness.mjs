// A stand-in TUI with Gemini CLI's paste guard: an Enter that arrives within <guardMs> of a
// bracketed paste is taken as a newline in the input box, not as a submit. Its screen is an input
// box under a rule: ">   Type your message" when empty, "> <text>" while it holds text.
//
//   node paste-guard-harness.mjs <transcriptPath> <guardMs>
//
//   {"type":"ready"}                  raw mode and bracketed paste are on
//   {"type":"newline"}                an Enter the guard took as a newline
//   {"type":"submitted","text":"..."} what an Enter submitted (the box's text, newlines and all)
import { appendFileSync } from "node:fs";

const [transcript, guard] = process.argv.slice(2);
const guardMs = Number(guard);
if (!transcript || !Number.isFinite(guardMs)) {
  process.stderr.write("usage: paste-guard-harness.mjs <transcriptPath> <guardMs>\n");
  process.exit(2);
}
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
const record = (entry) => appendFileSync(transcript, `${JSON.stringify(entry)}\n`);

const stop = () => {
  process.stdout.write("\x1b[?2004l");
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGHUP", stop);

let box = "";
let pastedAt = 0;
let pending = "";
const render = () => {
  const shown = box === "" ? ">   Type your message" : `> ${box.replace(/\n/g, "\n  ")}`;
  process.stdout.write(`\x1b[2J\x1b[H${"─".repeat(40)}\r\n${shown.replace(/\n/g, "\r\n")}\r\n`);
};

process.stdin.setRawMode(true);
process.stdout.write("\x1b[?2004h");
render();
record({ type: "ready" });
process.stdin.on("data", (chunk) => {
  pending += chunk.toString("utf8");
  for (;;) {
    if (pending.startsWith(PASTE_START)) {
      const end = pending.indexOf(PASTE_END);
      if (end < 0) return;
      box += pending.slice(PASTE_START.length, end);
      pending = pending.slice(end + PASTE_END.length);
      pastedAt = Date.now();
      render();
    } else if (pending.startsWith("\r")) {
      pending = pending.slice(1);
      if (Date.now() - pastedAt < guardMs) {
        box += "\n";
        record({ type: "newline" });
      } else if (box.trim() !== "") {
        record({ type: "submitted", text: box });
        box = "";
      }
      render();
    } else if (pending === "" || PASTE_START.startsWith(pending)) {
      return;
    } else {
      pending = pending.slice(1);
    }
  }
});
