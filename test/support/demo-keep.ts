/** The three commands `the-loop demo --keep` prints to stop what it kept running and remove its state, as printed. */
export function printedStopCommands(stdout: string): string[] {
  return (
    stdout
      .split("To stop them, and remove the state:\n")[1]
      ?.split("\n")
      .slice(0, 3)
      .map((line) => line.trim()) ?? []
  );
}
