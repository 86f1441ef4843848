'use strict'
// The event loop stays free while operations run. Never timed: a timer
// callback is what releases the lease that a pending acquireWait waits
// for, so the operations can only finish if the event loop kept turning
// while they were in flight. A blocking call would sit out its timeout and
// fail with TIMEOUT.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { open } = require('fencing-tokens')
const { backends } = require('./helpers.js')

/** Ticks every millisecond; on tick `at`, runs `action` once. */
function ticker(at, action) {
  const state = { ticks: 0, done: null }
  const timer = setInterval(() => {
    state.ticks += 1
    if (state.ticks === at) state.done = action()
  }, 1)
  return { state, stop: () => clearInterval(timer) }
}

for (const [name, url] of backends()) {
  describe(name, () => {
    test('a timer fires while acquireWait is pending, and its release is what lets it through', { timeout: 60_000 }, async () => {
      const store = await open(url())
      const a = await store.acquire('s', { holder: 'A', ttlMs: 600_000 })
      const { state, stop } = ticker(3, () => store.release(a))
      try {
        const b = await store.acquireWait('s', { holder: 'B', ttlMs: 1000, timeoutMs: 30_000 })
        assert.equal(await state.done, true, "the timer's release ended A's lease")
        assert.equal(b.token, 2n)
        assert.ok(state.ticks >= 3)
      } finally {
        stop()
        await store.close()
      }
    })

    test('many writes in flight at once; the timer keeps ticking and releases the waiter', { timeout: 60_000 }, async () => {
      const store = await open(url())
      const a = await store.acquire('lock', { holder: 'A', ttlMs: 600_000 })
      const writes = 200
      const { state, stop } = ticker(3, () => store.release(a))
      try {
        const puts = Array.from({ length: writes }, (_, i) =>
          store.put('data', `k${i % 10}`, Buffer.from(`v${i}`), { token: 1n }),
        )
        const waiter = store.acquireWait('lock', { holder: 'B', ttlMs: 1000, timeoutMs: 30_000 })
        const [receipts, b] = await Promise.all([Promise.all(puts), waiter])
        assert.equal(await state.done, true)
        assert.equal(b.holder, 'B')
        assert.equal(receipts.length, writes)
        const versions = receipts.map((r) => r.version).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
        assert.equal(versions.at(-1), BigInt(writes / 10), 'every write was applied once')
        assert.equal(store.metrics().writesAccepted, BigInt(writes))
      } finally {
        stop()
        await store.close()
      }
    })
  })
}
