// ESM entry point: the same module as fencing.js (one native addon, one set
// of error classes, so `instanceof` works across both). Node takes the
// named exports from fencing.js's `module.exports = { ... }` literal.
export * from './fencing.js'
export { default } from './fencing.js'
