import { hasLabel } from "../../workitem/index.js";
import { LocalTrackerInputError } from "./errors.js";

/**
 * What the local tracker accepts. The limits follow GitHub's where it has one, so a flow tried
 * locally does not break when it moves to GitHub.
 */
export const LOCAL_LIMITS = {
  titleMax: 256,
  bodyMax: 65_536,
  labelMax: 50,
  labelsPerItem: 100,
} as const;

export const LOGIN_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The login the-loop itself acts as (postComment, addLabel, removeLabel). */
export const SELF_LOGIN = "the-loop";

// C0 and C1 control characters and DEL: they would break one-line output (tables, events).
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

export function checkActor(login: string): string {
  if (!LOGIN_PATTERN.test(login)) {
    throw new LocalTrackerInputError(`invalid login "${login}": use letters, digits, ".", "_" and "-", starting with a letter or digit (at most 64)`);
  }
  return login;
}

export function checkTitle(title: string): string {
  const trimmed = title.trim();
  if (trimmed === "") throw new LocalTrackerInputError("the title is empty");
  if (CONTROL_CHARACTER.test(trimmed)) throw new LocalTrackerInputError("the title must be one line without control characters");
  const length = characterCount(trimmed);
  if (length > LOCAL_LIMITS.titleMax) {
    throw new LocalTrackerInputError(`the title is ${length} characters long; at most ${LOCAL_LIMITS.titleMax} are allowed`);
  }
  return trimmed;
}

function checkText(text: string, what: string): string {
  const length = characterCount(text);
  if (length > LOCAL_LIMITS.bodyMax) {
    throw new LocalTrackerInputError(`the ${what} is ${length} characters long; at most ${LOCAL_LIMITS.bodyMax} are allowed`);
  }
  return text;
}

export function checkBody(body: string): string {
  return checkText(body, "body");
}

export function checkCommentBody(body: string): string {
  if (body.trim() === "") throw new LocalTrackerInputError("the comment is empty");
  return checkText(body, "comment");
}

export function checkLabel(label: string): string {
  const trimmed = label.trim();
  if (trimmed === "") throw new LocalTrackerInputError("a label is empty");
  if (CONTROL_CHARACTER.test(trimmed)) throw new LocalTrackerInputError(`the label ${JSON.stringify(trimmed)} contains a control character`);
  const length = characterCount(trimmed);
  if (length > LOCAL_LIMITS.labelMax) {
    throw new LocalTrackerInputError(`the label "${trimmed}" is ${length} characters long; at most ${LOCAL_LIMITS.labelMax} are allowed`);
  }
  return trimmed;
}

/** Checks every label and drops repeats (as labels compare: see workitem/label.ts), keeping the first spelling. */
export function checkLabels(labels: readonly string[]): string[] {
  const result: string[] = [];
  for (const label of labels) {
    const checked = checkLabel(label);
    if (!hasLabel(result, checked)) result.push(checked);
  }
  return result;
}

export function checkLabelCount(count: number): void {
  if (count > LOCAL_LIMITS.labelsPerItem) {
    throw new LocalTrackerInputError(`an item may carry at most ${LOCAL_LIMITS.labelsPerItem} labels; this change would give it ${count}`);
  }
}
