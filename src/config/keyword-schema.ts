import { z } from "zod";

/**
 * A comment keyword, as an operator configures one: the control commands' (`routing.control`)
 * and the gate answers' (`graph.keywords`) alike, since one parser reads them all.
 */
export function commandKeywordSchema(defaultKeyword: string, meaning: string) {
  return (
    z
      .string()
      .trim()
      .min(3)
      .max(100)
      // A keyword is matched as a whole token on one line, so it cannot span lines or hold a tab.
      .regex(/^[^\s](?:[^\t\r\n]*[^\s])?$/, "one line of text without tabs")
      // What the parser skips as quoted or hidden text (code spans, quotes, HTML comments) could
      // never be typed as a command: refuse it here rather than configure a keyword that never works.
      .refine((keyword) => !keyword.includes("`") && !keyword.includes("<!--") && !keyword.startsWith(">"), {
        message: "a keyword cannot contain a backtick or `<!--`, or start with `>`: the parser reads those as quoted text",
      })
      .default(defaultKeyword)
      .describe(`Comment keyword that ${meaning}. Matched as a whole token, case-insensitively.`)
  );
}
