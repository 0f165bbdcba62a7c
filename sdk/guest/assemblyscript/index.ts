// Package entry for `import ... from "guardrail-as"`: asc resolves a package
// import to node_modules/<package>/index.ts.
export * from "./assembly/index";
