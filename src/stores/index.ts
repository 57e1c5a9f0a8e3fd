// Every store of a state opened on one backend, and the one-time copy between two backends.
export { openStores, storesAreShared, storesOn } from "./stores.js";
export type { OpenStoresOptions, Stores } from "./stores.js";
export { migrateState } from "./migrate-state.js";
export type { KindCount, MigrationResult } from "./migrate-state.js";
export { RECORDED_BY, recordOf, rowFilterOf, tableEventLog } from "./event-log.js";
export type { TableEventLogOptions } from "./event-log.js";
