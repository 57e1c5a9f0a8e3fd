/**
 * The capability family of the event catalog (catalog.ts takes them in, in this order): a
 * capability bundle consented to, installed, loaded or refused. The same field specs and rules
 * as the rest of the catalog.
 */
export const CAPABILITY_EVENTS = {
  "capability.consent_required": {
    family: "capability",
    level: "info",
    summary:
      "The bundle at `path` was shown to the operator (`the-loop capabilities add`): everything it runs; nothing changed. Running it again with `--yes` gives consent.",
    fields: { id: "string", version: "string", path: "string", bundle_hash: "string" },
  },
  "capability.installed": {
    family: "capability",
    level: "info",
    summary: "The operator consented to the bundle at `path` (`the-loop capabilities add --yes`): the config declares it at `bundle_hash` (`reconsented` when it was declared already).",
    fields: { id: "string", version: "string", path: "string", bundle_hash: "string", config: "string", reconsented: "boolean" },
  },
  "capability.removed": {
    family: "capability",
    level: "info",
    summary: "The capability's entry was taken out of the config (`the-loop capabilities remove`).",
    fields: { id: "string", path: "string", config: "string" },
  },
  "capability.loaded": {
    family: "capability",
    level: "info",
    summary: "An installed capability's bundle matched the hash consented to and loaded.",
    fields: { id: "string", version: "string", path: "string", bundle_hash: "string" },
  },
  "capability.refused": {
    family: "capability",
    level: "error",
    summary:
      "An installed capability did not load (`reason`): its bundle changed since consent, or it is not a valid bundle; nothing loads and the daemon does not start.",
    fields: { path: "string", bundle_hash: "string", reason: "string", id: "string?" },
  },
} as const;
