'use strict'
// registerMetrics: the stores' metrics in a real prom-client Registry, read
// at each scrape, the same numbers as metricsText().

const { test } = require('node:test')
const assert = require('node:assert/strict')
const os = require('node:os')
const path = require('node:path')
const fs = require('node:fs')
const { Registry } = require('prom-client')
const { open, registerMetrics } = require('fencing-tokens')

/** The value of the one line `series value` in a scrape. */
function sample(text, series) {
  const found = text.split('\n').filter((l) => l.startsWith(series + ' '))
  assert.equal(found.length, 1, `${series} in\n${text}`)
  return Number(found[0].slice(series.length + 1))
}

test('registerMetrics exports counters, the pause gauge and call durations at scrape time', async () => {
  const store = await open('memory:?clock=manual')
  try {
    const registry = new Registry()
    registerMetrics(store, registry)
    const before = await registry.metrics()
    assert.equal(sample(before, 'fencing_writes_accepted_total{store="memory:"}'), 0)

    await store.put('s', 'k', 'v', { token: 2n })
    await assert.rejects(store.put('s', 'k', 'w', { token: 1n }))
    const text = await registry.metrics()
    assert.match(text, /^# TYPE fencing_writes_accepted_total counter$/m)
    assert.equal(sample(text, 'fencing_writes_accepted_total{store="memory:"}'), 1)
    assert.equal(sample(text, 'fencing_stale_rejections_total{store="memory:"}'), 1)
    assert.match(text, /^# TYPE fencing_longest_pause_seconds gauge$/m)
    assert.equal(sample(text, 'fencing_longest_pause_seconds{store="memory:"}'), 0)
    assert.match(text, /^# TYPE fencing_call_duration_seconds histogram$/m)
    const put = 'store="memory:",op="put"'
    assert.equal(sample(text, `fencing_call_duration_seconds_count{${put}}`), 2)
    assert.equal(sample(text, `fencing_call_duration_seconds_bucket{${put},le="+Inf"}`), 2)
    assert.equal(sample(text, `fencing_call_duration_seconds_bucket{${put},le="10"}`), 2)
    assert.ok(sample(text, `fencing_call_duration_seconds_sum{${put}}`) > 0)
    assert.equal(sample(text, 'fencing_call_duration_seconds_count{store="memory:",op="get"}'), 0)
    // Every sample line of the core's text is in the scrape (values aside:
    // the scrape read the store once more than the text).
    const series = (t) => new Set(t.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.slice(0, l.lastIndexOf(' '))))
    assert.deepEqual(series(text), series(store.metricsText()))
  } finally {
    await store.close()
  }
})

test('two stores share one family, told apart by the store label; escapes survive', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencing-metrics-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const a = await open('memory:')
  // Windows names may not hold a quote; there the path's backslashes are
  // the escapes.
  const name = process.platform === 'win32' ? 'ab.db' : 'a"b.db'
  const b = await open(`sqlite:${path.join(dir, name)}`)
  try {
    await b.nextToken('s')
    const registry = new Registry()
    registerMetrics([a, b], registry)
    const text = await registry.metrics()
    assert.equal(text.match(/^# TYPE fencing_tokens_issued_total counter$/gm).length, 1)
    assert.equal(sample(text, 'fencing_tokens_issued_total{store="memory:"}'), 0)
    const escaped = b.location.replace(/\\/g, '\\\\').replace(/"/g, '\\"')
    assert.equal(sample(text, `fencing_tokens_issued_total{store="${escaped}"}`), 1)
    // A registry takes a name once: registering a store again is refused.
    assert.throws(() => registerMetrics(a, registry), /already been registered/)
  } finally {
    await a.close()
    await b.close()
  }
})

test('registerMetrics refuses what is not a store or a registry', async () => {
  const store = await open('memory:')
  try {
    assert.throws(() => registerMetrics({}, new Registry()), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
    assert.throws(() => registerMetrics([], new Registry()), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
    assert.throws(() => registerMetrics(store, {}), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
  } finally {
    await store.close()
  }
})
