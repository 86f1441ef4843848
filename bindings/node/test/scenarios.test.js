'use strict'
// Every shared scenario (tests/scenarios/*.json) on memory:, on sqlite:
// (a fresh file per scenario), on postgres:// ($FENCING_TEST_PG_URL, a
// fresh schema per scenario) and on etcd:// ($FENCING_TEST_ETCD_CLUSTER, a
// fresh key prefix per scenario), through the package's public API.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { loadAll, run } = require('./runner.js')
const { tempDir, sqliteUrl, postgresOrSkip, etcdOrSkip, freshSchema } = require('./helpers.js')

const scenarios = loadAll()

test('the shared scenario files are all here', () => {
  assert.ok(scenarios.length >= 60, `expected at least 60 scenarios, found ${scenarios.length}`)
})

describe('memory:', () => {
  for (const s of scenarios) {
    test(s.name, () => run(s, 'memory:'))
  }
})

describe('sqlite:', () => {
  const dir = tempDir()
  for (const s of scenarios) {
    test(s.name, () => run(s, sqliteUrl(dir)))
  }
})

describe('postgres://', () => {
  const base = postgresOrSkip(test)
  if (base === null) return
  for (const s of scenarios) {
    // Scenario options follow the schema with `&`.
    test(s.name, () => run(s, `${base}?schema=${freshSchema('scn')}`))
  }
})

describe('etcd://', () => {
  const base = etcdOrSkip(test)
  if (base === null) return
  for (const s of scenarios) {
    // A fresh key prefix is a fresh store; scenario options follow with `?`.
    test(s.name, () => run(s, `${base}/${freshSchema('scn')}`))
  }
})

// The runner itself must be able to fail: a wrong expectation, a wrong
// error code, a success where an error is expected, a missing field.
describe('the runner catches mismatches', () => {
  const base = { name: 'runner self-check', file: '<inline>', query: 'clock=manual' }
  const wrong = [
    ['a wrong token', [{ op: 'acquire', scope: 's', holder: 'A', ttl_ms: 1000, expect: { token: '2' } }]],
    ['a token rendered as a number', [{ op: 'next_token', scope: 's', expect: { token: 1 } }]],
    ['a wrong error code', [
      { op: 'put', scope: 's', key: 'k', value: 'v', token: '2' },
      { op: 'put', scope: 's', key: 'k', value: 'v', token: '1', error: { code: 'NOT_FOUND' } },
    ]],
    ['a wrong error detail', [
      { op: 'put', scope: 's', key: 'k', value: 'v', token: '2' },
      { op: 'put', scope: 's', key: 'k', value: 'v', token: '1', error: { code: 'STALE_TOKEN', current: '3' } },
    ]],
    ['success where an error is expected', [{ op: 'next_token', scope: 's', error: { code: 'INVALID_ARGUMENT' } }]],
    ['an unexpected error', [{ op: 'next_token', scope: '' }]],
    ['a missing field', [{ op: 'get', scope: 's', key: 'k', expect: { found: false, version: '1' } }]],
    ['an array of another length', [{ op: 'list', scope: 's', expect: { keys: ['k'] } }]],
    ['a wrong object token', [
      { op: 'object_put', path: 'p', value: 'v', token: '2' },
      { op: 'object_get', path: 'p', expect: { found: true, token: '1' } },
    ]],
    ['a wrong object error detail', [
      { op: 'object_put', path: 'p', value: 'v', token: '2' },
      { op: 'object_put', path: 'p', value: 'v', token: '1', error: { code: 'STALE_TOKEN', scope: 'other' } },
    ]],
    ['an unknown object op', [{ op: 'object_frobnicate', path: 'p' }]],
    ['an unknown op', [{ op: 'frobnicate' }]],
  ]
  for (const [label, steps] of wrong) {
    test(label, async () => {
      await assert.rejects(run({ ...base, steps }, 'memory:'))
    })
  }
})
