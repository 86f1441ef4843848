'use strict'
// Shared test helpers: fresh SQLite files, and the checks every bad-input
// test makes.

const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { FencingError, InvalidArgumentError } = require('fencing')

/** A fresh temporary directory, removed when the process exits. */
function tempDir(prefix = 'fencing-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

let counter = 0
/** A URL of a fresh SQLite file. */
function sqliteUrl(dir, query = '') {
  counter += 1
  const url = `sqlite:${path.join(dir, `store-${process.pid}-${counter}.db`)}`
  return query === '' ? url : `${url}?${query}`
}

/** Both backends, each with a fresh store per call. */
function backends() {
  const dir = tempDir()
  return [
    ['memory', (query = '') => (query === '' ? 'memory:' : `memory:?${query}`)],
    ['sqlite', (query = '') => sqliteUrl(dir, query)],
  ]
}

/**
 * Asserts that `promise` rejects with INVALID_ARGUMENT: a TypeError or
 * RangeError (as `kind` says, when given) that is also an
 * InvalidArgumentError and a FencingError.
 */
async function rejectsInvalid(promise, kind, label = '') {
  await assert.rejects(promise, (e) => {
    assert.equal(e.code, 'INVALID_ARGUMENT', `${label}: ${e.message}`)
    assert.ok(e instanceof TypeError || e instanceof RangeError, `${label}: ${e.constructor.name}`)
    if (kind !== undefined) assert.ok(e instanceof kind, `${label}: expected ${kind.name}, got ${e.constructor.name}: ${e.message}`)
    assert.ok(e instanceof InvalidArgumentError, label)
    assert.ok(e instanceof FencingError, label)
    assert.equal(typeof e.message, 'string')
    assert.notEqual(e.message, '', label)
    return true
  })
}

module.exports = { tempDir, sqliteUrl, backends, rejectsInvalid }
