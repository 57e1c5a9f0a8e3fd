/**
 * fnmatch-style globs for event types, as operators already type them for the earlier Python
 * the-loop: `*` is any run of characters (dots included, so `session.*` covers every session
 * event), `?` is one character, `[abc]` / `[a-z]` / `[!abc]` a set. Everything else is literal.
 * Matching is case-sensitive: event types are lower case by construction.
 */

const REGEXP_SPECIAL = /[\\^$.*+?()[\]{}|/-]/g;

function escapeLiteral(text: string): string {
  return text.replace(REGEXP_SPECIAL, "\\$&");
}

/** The set starting at `pattern[open] === "["`, as a regexp class and the index after it; undefined when unclosed. */
function translateSet(pattern: string, open: number): { source: string; next: number } | undefined {
  let index = open + 1;
  let negated = false;
  if (pattern[index] === "!" || pattern[index] === "^") {
    negated = true;
    index += 1;
  }
  // A `]` right after the opening (or after `!`) is a member, as in fnmatch.
  const close = pattern.indexOf("]", pattern[index] === "]" ? index + 1 : index);
  if (close < 0) return undefined;
  const members = pattern
    .slice(index, close)
    .split("-")
    .map((part) => part.replace(/[\\\]^[]/g, "\\$&"))
    .join("-");
  const source = `[${negated ? "^" : ""}${members}]`;
  try {
    new RegExp(source);
  } catch {
    // A reversed range such as [z-a] names no character: the set matches nothing, as in fnmatch.
    return { source: "(?!)", next: close + 1 };
  }
  return { source, next: close + 1 };
}

export function globToRegExp(pattern: string): RegExp {
  let source = "";
  let index = 0;
  while (index < pattern.length) {
    const char = pattern[index] ?? "";
    if (char === "*") {
      source += ".*";
      index += 1;
    } else if (char === "?") {
      source += ".";
      index += 1;
    } else if (char === "[") {
      const set = translateSet(pattern, index);
      if (set) {
        source += set.source;
        index = set.next;
      } else {
        source += "\\[";
        index += 1;
      }
    } else {
      source += escapeLiteral(char);
      index += 1;
    }
  }
  return new RegExp(`^${source}$`, "s");
}

export function matchesGlob(text: string, pattern: string): boolean {
  return globToRegExp(pattern).test(text);
}
