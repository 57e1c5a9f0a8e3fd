import type { PageAnswerName, PageAnswers } from "../answer-schemas.js";
import { ANSWER_SCHEMAS } from "./answer-schemas.js";
import { departure } from "./check.js";

/**
 * What the page reads from the daemon, parsed rather than trusted: an answer that is not its
 * route's documented shape (docs/dashboard.md, "Responses") is an error the page shows, never a
 * crash or `undefined` drawn as text.
 */

export class AnswerError extends Error {}

/** `value` as the answer `name` is, or an AnswerError saying where it departs from the route's schema. */
export function parseAnswer<K extends PageAnswerName>(name: K, value: unknown): PageAnswers[K] {
  const { route, schema } = ANSWER_SCHEMAS[name];
  const problem = departure(schema, value);
  if (problem !== null) {
    throw new AnswerError(
      `The daemon's answer to ${route.split(" (")[0] ?? route} is not the shape this page reads (${problem}). Reload the page; if it stays, the page and the daemon are from different builds: restart the daemon.`,
    );
  }
  // boundary-cast: checked just above against the JSON Schema generated from the zod schema whose output PageAnswers[K] is
  return value as PageAnswers[K];
}
