import { z } from "zod";

/**
 * The config's side of capabilities: which bundles are installed and the hash each was consented
 * at. What a bundle holds is the capability's own manifest (src/capabilities/manifest.ts); the
 * config only names the folders, and `the-loop capabilities add DIR --yes` writes the entries.
 */

/** A SHA-256 in lowercase hex, as `the-loop capabilities add` records it. */
export const SHA256_PATTERN = "^[0-9a-f]{64}$";

export const capabilityEntrySchema = z
  .strictObject({
    path: z
      .string()
      .min(1)
      .describe(
        "The capability's bundle folder (holding capability.yaml or capability.json): absolute, ~-relative, or relative to the config file's folder (never a checkout).",
      ),
    sha256: z
      .string()
      .regex(new RegExp(SHA256_PATTERN), "a sha256 is 64 lowercase hex digits, as `the-loop capabilities add DIR --yes` writes it")
      .describe(
        "The hash of the bundle consented to (every file's relative path and content). A bundle that no longer matches refuses to load until consented again.",
      ),
    config: z
      .record(z.string(), z.union([z.boolean(), z.string(), z.number()]))
      .optional()
      .describe(
        "The operator's values for the capability's config slice, over the defaults its manifest declares (a key it does not declare is refused). A hook's `when` holds only for the boolean true. Not part of the consent: changing a value needs no new consent.",
      ),
  })
  .describe("One installed capability.");

export const capabilitiesSchema = z
  .array(capabilityEntrySchema)
  .superRefine((entries, context) => {
    const seen = new Map<string, number>();
    entries.forEach((entry, index) => {
      const earlier = seen.get(entry.path);
      if (earlier !== undefined)
        context.addIssue({ code: "custom", path: [index, "path"], message: `capabilities[${earlier}] already installs ${entry.path}` });
      seen.set(entry.path, index);
    });
  })
  .describe(
    "Installed capabilities (docs/capabilities.md): bundles that add steps, contributions, gates and a task-content resolver at the loop points. Written by `the-loop capabilities add DIR --yes` after the operator read what the bundle runs.",
  );

export type CapabilityEntryConfig = z.output<typeof capabilityEntrySchema>;
