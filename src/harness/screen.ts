/**
 * The bottom of a pane's visible screen: where a TUI keeps its input box, its footer and its
 * dialogs. The conversation above it quotes ticket text, so nothing that decides what to paste
 * or when to press Enter reads further up.
 */
export const SCREEN_TAIL_LINES = 6;

export function screenTail(screen: string, lines: number = SCREEN_TAIL_LINES): string {
  return screen
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "")
    .slice(-lines)
    .join("\n");
}
