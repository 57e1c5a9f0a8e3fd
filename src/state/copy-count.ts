/**
 * What `the-loop state migrate --to postgres` reports of one store it copied into the database
 * (docs/scale.md): the records the files hold, what was copied, what was there already (the same,
 * or otherwise and kept), the files that are not records, and whether every copy read back.
 */
export interface StoreCopyCount {
  /** The store, as the report names it: `sessions`, `start-queue`, `events`, `tracker-items`. */
  readonly name: string;
  /** Records (or documents: 0 or 1) the files hold that are readable. */
  readonly files: number;
  readonly copied: number;
  /** Already in the database, the same. */
  readonly unchanged: number;
  /** Already in the database, otherwise: the database's kept. */
  readonly kept: number;
  /** Files that are not records, with why: not copied. */
  readonly problems: readonly { readonly where: string; readonly message: string }[];
  /** Every readable file's record has its row now. */
  readonly verified: boolean;
}
