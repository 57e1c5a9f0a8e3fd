// A stand-in agent for the paste-safety tests: its terminal is in raw mode with bracketed paste on,
// and it records, as JSON lines in the file named by its first argument, exactly what reached it,
// split into what arrived inside a bracketed paste and what arrived as typed keys.
//
//   node raw-harness.mjs <transcriptPath> [--run-bang-lines]
//
//   {"type":"ready"}                   raw mode and bracketed paste are on
//   {"type":"paste","text":"..."}      the bytes between ESC[200~ and ESC[201~, as received
//   {"type":"typed","text":"..."}      bytes outside a paste, one entry per read (never joined)
//   {"type":"ran","command":"..."}     a typed "!" line run as a shell command (see below)
//
// --run-bang-lines behaves like Claude Code, which runs a submitted line starting with "!" as a
// shell command in its working directory: a test can then see a typed-line escape do harm, not
// only appear in the transcript.
import { spawnSync } from "node:child_process";
import { appendFileSync } from "node:fs";

const [transcript, ...flags] = process.argv.slice(2);
if (!transcript || flags.some((flag) => flag !== "--run-bang-lines")) {
  process.stderr.write("usage: raw-harness.mjs <transcriptPath> [--run-bang-lines]\n");
  process.exit(2);
}
const runBangLines = flags.includes("--run-bang-lines");

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";

const record = (entry) => appendFileSync(transcript, `${JSON.stringify(entry)}\n`);

// Node puts the tty back in its own mode on exit; bracketed paste is the terminal's, so it is
// switched off here.
const stop = () => {
  process.stdout.write("\x1b[?2004l");
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGHUP", stop);

// Raw mode first: without it the line discipline would act on ^C or ^Z itself, and the test could
// not see them arrive. Bracketed paste before the ready line: a test that sees the line may paste.
if (process.stdin.isTTY) process.stdin.setRawMode(true);
process.stdout.write("\x1b[?2004h");
record({ type: "ready" });
// Raw mode turns off output post-processing, so lines end in \r\n.
process.stdout.write("raw-harness: ready\r\n");

let pasting = false;
let paste = "";
let buffer = "";
/** The typed keys since the last typed Enter: the line a submit would run. */
let typedLine = "";

function typed(text) {
  record({ type: "typed", text });
  for (const char of text) {
    if (char !== "\r" && char !== "\n") {
      typedLine += char;
      continue;
    }
    if (runBangLines && typedLine.startsWith("!")) {
      const command = typedLine.slice(1);
      record({ type: "ran", command });
      spawnSync("/bin/sh", ["-c", command], { stdio: "ignore" });
    }
    typedLine = "";
  }
}

/** How many trailing characters of `text` could be the start of `marker`, split across reads. */
function heldBack(text, marker) {
  for (let length = Math.min(text.length, marker.length - 1); length > 0; length--) {
    if (marker.startsWith(text.slice(text.length - length))) return length;
  }
  return 0;
}

// The decoder keeps a character split across reads whole.
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  for (;;) {
    if (pasting) {
      const end = buffer.indexOf(PASTE_END);
      if (end === -1) {
        const keep = heldBack(buffer, PASTE_END);
        paste += buffer.slice(0, buffer.length - keep);
        buffer = buffer.slice(buffer.length - keep);
        return;
      }
      record({ type: "paste", text: paste + buffer.slice(0, end) });
      paste = "";
      buffer = buffer.slice(end + PASTE_END.length);
      pasting = false;
      continue;
    }
    const start = buffer.indexOf(PASTE_START);
    if (start === -1) {
      const keep = heldBack(buffer, PASTE_START);
      if (buffer.length > keep) typed(buffer.slice(0, buffer.length - keep));
      buffer = buffer.slice(buffer.length - keep);
      return;
    }
    if (start > 0) typed(buffer.slice(0, start));
    buffer = buffer.slice(start + PASTE_START.length);
    pasting = true;
  }
});
process.stdin.on("end", stop);
