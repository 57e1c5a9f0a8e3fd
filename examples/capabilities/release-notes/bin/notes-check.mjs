// Prints the gate verdict the-loop reads: {block, message?} as JSON on stdout, exit 0.
import { existsSync, readFileSync } from "node:fs";

const text = existsSync("RELEASE-NOTES.md") ? readFileSync("RELEASE-NOTES.md", "utf8") : "";
const thin = text.trim().split(/\s+/).filter(Boolean).length < 20;
process.stdout.write(`${JSON.stringify(thin ? { block: true, message: "RELEASE-NOTES.md has fewer than 20 words" } : { block: false })}\n`);
