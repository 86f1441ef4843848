'use strict'
// Logs: the core's records on diagnostics_channel 'fencing:log'.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const diagnosticsChannel = require('node:diagnostics_channel')
const fencing = require('fencing-tokens')

/** The records published while `body` runs, and a turn of the loop after. */
async function published(body) {
  const records = []
  const listen = (record) => records.push(record)
  diagnosticsChannel.subscribe('fencing:log', listen)
  try {
    await body()
    // Records cross from the thread that logged on the next turns.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
  } finally {
    diagnosticsChannel.unsubscribe('fencing:log', listen)
  }
  return records
}

const mine = (records, scope) => records.filter((r) => r.message.includes(`scope="${scope}"`))

test('a stale put publishes one warning naming the scope and tokens, never the value', async () => {
  const store = await fencing.open('memory:')
  let old, fresh
  const records = await published(async () => {
    old = await store.acquire('js-log-stale', { holder: 'worker-a', ttlMs: 30_000 })
    await store.release(old)
    fresh = await store.acquire('js-log-stale', { holder: 'worker-b', ttlMs: 30_000 })
    await assert.rejects(
      store.put('js-log-stale', 'k', 'secret-value-bytes', { token: old.token, holder: 'worker-a' }),
      fencing.StaleTokenError,
    )
  })
  const ours = mine(records, 'js-log-stale')
  assert.equal(ours.length, 1, JSON.stringify(records))
  const [record] = ours
  assert.equal(record.level, 'warn')
  assert.equal(record.target, 'fencing')
  assert.match(record.message, /STALE_TOKEN/)
  assert.ok(record.message.includes(`presented=${old.token} current=${fresh.token}`), record.message)
  assert.ok(!record.message.includes('secret'), record.message)
  await store.close()
})

test("normal operation is silent at the default level, shown at 'debug'", async () => {
  const store = await fencing.open('memory:')
  const quiet = await published(async () => {
    const lease = await store.acquire('js-log-quiet', { holder: 'w', ttlMs: 30_000 })
    await store.put('js-log-quiet', 'k', 'v', { token: lease.token })
    await store.release(lease)
  })
  assert.deepEqual(mine(quiet, 'js-log-quiet'), [])

  fencing.setLogLevel('debug')
  try {
    const loud = await published(async () => {
      const lease = await store.acquire('js-log-debug', { holder: 'w', ttlMs: 30_000 })
      await store.release(lease)
    })
    const ours = mine(loud, 'js-log-debug')
    assert.ok(ours.some((r) => r.level === 'debug' && r.message.startsWith('lease acquired')), JSON.stringify(ours))
  } finally {
    fencing.setLogLevel('info')
  }
  assert.throws(() => fencing.setLogLevel('loud'), fencing.InvalidArgumentError)
  await store.close()
})

test('a lease lost by the keep-alive is published from its thread', async () => {
  const store = await fencing.open('memory:?clock=manual')
  const records = await published(async () => {
    const held = await store.lease('js-log-lost', { holder: 'worker-a', ttlMs: 300 })
    const lost = new Promise((resolve) => held.signal.addEventListener('abort', resolve, { once: true }))
    await store.advanceClock(10_000)
    await store.acquire('js-log-lost', { holder: 'worker-b', ttlMs: 30_000 })
    await lost
    await held.release().catch(() => {})
  })
  const ours = mine(records, 'js-log-lost').filter((r) => r.message.startsWith('lease lost'))
  assert.equal(ours.length, 1, JSON.stringify(records))
  assert.equal(ours[0].level, 'warn')
  assert.match(ours[0].message, /reason="LEASE_LOST"/)
  await store.close()
})

test('the log callback keeps no process alive, and what was logged just before exit is published', () => {
  const script = `
    const fencing = require('fencing-tokens')
    require('node:diagnostics_channel').subscribe('fencing:log', (r) => console.log(r.level, r.message))
    ;(async () => {
      const store = await fencing.open('memory:')
      await store.put('js-log-exit', 'k', 'v', { token: 2n })
      await store.put('js-log-exit', 'k', 'v', { token: 1n }).catch(() => {})
    })()`
  const run = spawnSync(process.execPath, ['-e', script], { cwd: __dirname, timeout: 20_000, encoding: 'utf8' })
  assert.equal(run.status, 0, run.stderr)
  assert.match(run.stdout, /^warn fenced operation rejected code="STALE_TOKEN" scope="js-log-exit"/m)
})
