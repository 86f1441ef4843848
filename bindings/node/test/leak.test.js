'use strict'
// Resident memory stays bounded over many open/close cycles and many
// operations, per backend (docs/testing.md, "Leak tests"). Each run is a
// child process of its own with --expose-gc (leak-worker.js). Memory only,
// no timing.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const path = require('node:path')
const { tempDir, postgresOrSkip, freshSchema } = require('./helpers.js')

const WORKER = path.join(__dirname, 'leak-worker.js')
// Growth allowed after the warm-up. Before the fix, 10,000 memory: stores
// grew the process by about 450 MiB; each handle still waits for a turn of
// the event loop to be finalized (about 1 KiB each in a tight loop).
const BOUND_MIB = 24

function run(url, opens, ops) {
  const out = execFileSync(process.execPath, ['--expose-gc', WORKER, url, String(opens), String(ops)], {
    encoding: 'utf8',
    timeout: 600000,
  })
  return JSON.parse(out)
}

function bounded(what, { before, after }) {
  const line = `${what}: RSS ${before.toFixed(1)} -> ${after.toFixed(1)} MiB`
  console.log(line)
  assert.ok(after - before <= BOUND_MIB, line)
}

test('memory: 10,000 open/close cycles and 100,000 operations', () => {
  const r = run('memory:', 10000, 100000)
  bounded('memory: open/close', r.openClose)
  bounded('memory: operations', r.operations)
})

test('sqlite: 2,000 open/close cycles and 100,000 operations', () => {
  // Each open opens the file and checks its schema in a write transaction;
  // synchronous=normal spares an fsync per commit: memory is what counts.
  const url = `sqlite:${path.join(tempDir(), 'leak.db')}?synchronous=normal`
  const r = run(url, 2000, 100000)
  bounded('sqlite: open/close', r.openClose)
  bounded('sqlite: operations', r.operations)
})

const base = postgresOrSkip(test)
if (base !== null) {
  test('postgres: 200 open/close cycles and 5,000 operations', () => {
    // Each open is a new server connection (a backend process) and each
    // operation a round trip: fewer, to keep CI time bounded.
    const r = run(`${base}?schema=${freshSchema('leak')}`, 200, 5000)
    bounded('postgres: open/close', r.openClose)
    bounded('postgres: operations', r.operations)
  })
}
