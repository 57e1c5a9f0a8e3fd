/**
 * Generated sections inside hand-written markdown: the prose stays editable while the tables
 * (config keys, event types) are rendered from code and kept equal to it by a test.
 */

export function sectionMarkers(name: string): { begin: string; end: string } {
  return {
    begin: `<!-- BEGIN GENERATED: ${name} (npm run generate) -->`,
    end: `<!-- END GENERATED: ${name} -->`,
  };
}

/** The generated section as it stands in a document; undefined when the markers are missing. */
export function extractSection(document: string, name: string): string | undefined {
  const { begin, end } = sectionMarkers(name);
  const from = document.indexOf(begin);
  const to = document.indexOf(end);
  if (from < 0 || to < from) return undefined;
  return document.slice(from + begin.length, to).trim();
}

/** Replaces the generated section's content, keeping the prose around it. */
export function spliceSection(document: string, name: string, content: string): string {
  const { begin, end } = sectionMarkers(name);
  const from = document.indexOf(begin);
  const to = document.indexOf(end);
  if (from < 0 || to < from) throw new Error(`the document has no generated "${name}" section (${begin} … ${end})`);
  return `${document.slice(0, from + begin.length)}\n${content.trim()}\n${document.slice(to)}`;
}
