import { styleText } from "node:util";
import { anySecretKnown, redactKnownSecrets } from "../secrets.js";

type Style = "red" | "yellow" | "green" | "cyan" | "dim" | "bold";

/**
 * Colour only for a terminal, and never under NO_COLOR (any non-empty value); FORCE_COLOR
 * turns it on for pipes. Decided per stream, so `cmd | less` keeps stderr coloured.
 */
export function colorEnabled(stream: NodeJS.WriteStream): boolean {
  const env = process.env;
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR && env.FORCE_COLOR !== "0") return true;
  return Boolean(stream.isTTY) && env.TERM !== "dumb";
}

export function paint(stream: NodeJS.WriteStream, style: Style, text: string): string {
  return colorEnabled(stream) ? styleText(style, text) : text;
}

/*
 * Everything the CLI prints goes through `stdout` and `stderr` here, and none of it carries a
 * secret the process read (src/secrets.ts): an error quoting a hook's reply or a server's answer
 * reaches a terminal, a CI log or a bug report.
 */

/** A JSON.stringify replacer: every string, wherever it sits (a class's toJSON included), redacted. */
function redactedString(_key: string, value: unknown): unknown {
  return typeof value === "string" ? redactKnownSecrets(value) : value;
}

export const stdout = {
  line(text = ""): void {
    process.stdout.write(`${redactKnownSecrets(text)}\n`);
  },
  /** The whole of stdout for a --json command: one JSON document. Redacted string by string, so it stays JSON. */
  json(value: unknown): void {
    // A replacer makes JSON.stringify several times slower (10,000 sessions: ~250 ms), so only when there is a secret to redact.
    process.stdout.write(`${jsonText(value)}\n`);
  },
  /** The whole of stdout for a --json command whose document was built in parts, each of them jsonText (or jsonText's own output, kept). */
  jsonDocument(parts: readonly Uint8Array[]): void {
    process.stdout.write(Buffer.concat([...parts, NEWLINE]));
  },
  paint(style: Style, text: string): string {
    return paint(process.stdout, style, text);
  },
};

const NEWLINE = Buffer.from("\n");

/** A value as `stdout.json` writes it: two spaces of indent, redacted string by string when a secret is known. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, anySecretKnown() ? redactedString : undefined, 2);
}

export const stderr = {
  line(text = ""): void {
    process.stderr.write(`${redactKnownSecrets(text)}\n`);
  },
  warn(text: string): void {
    process.stderr.write(`${paint(process.stderr, "yellow", "warning:")} ${redactKnownSecrets(text)}\n`);
  },
  error(text: string): void {
    process.stderr.write(`${paint(process.stderr, "red", "error:")} ${redactKnownSecrets(text)}\n`);
  },
  paint(style: Style, text: string): string {
    return paint(process.stderr, style, text);
  },
};

/** Pads cells to column widths; the last column is never padded. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const render = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [render(header), ...rows.map(render)].join("\n");
}
