export * from "./record.js";
export * from "./record-schema.js";
export * from "./registry.js";
export * from "./listing.js";
