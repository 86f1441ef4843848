'use strict'
// Shared test helpers: fresh SQLite files, and the checks every bad-input
// test makes.

const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { FencingError, InvalidArgumentError } = require('fencing-tokens')

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

/**
 * The test PostgreSQL server: `{ url }` from $FENCING_TEST_PG_URL, else
 * `{ url: null, skip }` with the reason, or `{ url: null, fail }` when
 * FENCING_REQUIRE_PG=1 (CI runs everything under scripts/pg-cluster).
 */
function postgresBase() {
  const url = process.env.FENCING_TEST_PG_URL ?? ''
  if (url !== '') return { url }
  if (process.env.FENCING_REQUIRE_PG === '1') {
    return { url: null, fail: 'FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set: run under scripts/pg-cluster run' }
  }
  return { url: null, skip: 'no PostgreSQL: run the tests under `scripts/pg-cluster run -- ...`' }
}

/**
 * Registers one test that stands for a missing server: skipped, or failed
 * under FENCING_REQUIRE_PG=1. Returns the server's URL, or null.
 */
function postgresOrSkip(test) {
  const pg = postgresBase()
  if (pg.url === null) {
    test('PostgreSQL server', { skip: pg.skip }, () => {
      throw new Error(pg.fail)
    })
  }
  return pg.url
}

/**
 * The test etcd cluster: `{ members }` from $FENCING_TEST_ETCD_CLUSTER
 * (HOST:PORT,HOST:PORT,...), else `{ members: null, skip }` with the reason,
 * or `{ members: null, fail }` when FENCING_REQUIRE_ETCD=1 (CI runs
 * everything under scripts/etcd-cluster).
 */
function etcdMembers() {
  const members = process.env.FENCING_TEST_ETCD_CLUSTER ?? ''
  if (members !== '') return { members }
  if (process.env.FENCING_REQUIRE_ETCD === '1') {
    return { members: null, fail: 'FENCING_REQUIRE_ETCD=1 but FENCING_TEST_ETCD_CLUSTER is not set: run under scripts/etcd-cluster run' }
  }
  return { members: null, skip: 'no etcd: run the tests under `scripts/etcd-cluster run -- ...`' }
}

/**
 * Registers one test that stands for a missing cluster: skipped, or failed
 * under FENCING_REQUIRE_ETCD=1. Returns `etcd://MEMBERS` (a key prefix
 * goes after it, `/PREFIX`), or null.
 */
function etcdOrSkip(test) {
  const etcd = etcdMembers()
  if (etcd.members === null) {
    test('etcd cluster', { skip: etcd.skip }, () => {
      throw new Error(etcd.fail)
    })
    return null
  }
  return `etcd://${etcd.members}`
}

let schemas = 0
/**
 * A schema name (or etcd key prefix) no earlier run used (the tests share
 * one server and drop nothing).
 */
function freshSchema(tag) {
  schemas += 1
  return `t_node_${tag}_${process.pid}_${Date.now()}_${schemas}`
}

module.exports = {
  tempDir,
  sqliteUrl,
  backends,
  rejectsInvalid,
  postgresBase,
  postgresOrSkip,
  etcdMembers,
  etcdOrSkip,
  freshSchema,
}
