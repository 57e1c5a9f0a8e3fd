// Prints the gate verdict the-loop reads: {block, message?} as JSON on stdout, exit 0.
// It runs inside its bundle; the work it judges is in THE_LOOP_WORKDIR, the session's directory.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const notes = join(process.env.THE_LOOP_WORKDIR ?? process.cwd(), "RELEASE-NOTES.md");
const text = existsSync(notes) ? readFileSync(notes, "utf8") : "";
const thin = text.trim().split(/\s+/).filter(Boolean).length < 20;
process.stdout.write(`${JSON.stringify(thin ? { block: true, message: "RELEASE-NOTES.md has fewer than 20 words" } : { block: false })}\n`);
