'use strict'
// store.keepAlive(lease): a lease already acquired, kept alive by the core's
// keep-alive as store.lease() keeps its own, as the same HeldLease. The
// store's clock is manual: it moves past the TTL only between renewals,
// which the tests wait for (in the metrics), never for a time.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const { setTimeout: sleep } = require('node:timers/promises')
const { open, HeldLease, LeaseHeldError, LeaseLostError } = require('fencing-tokens')
const { backends } = require('./helpers.js')

const TTL = 600

/** Waits (polling) until the keep-alive has renewed once more than `seen`. */
async function renewedAfter(store, seen) {
  while (store.metrics().renewals <= seen) await sleep(5)
  return store.metrics().renewals
}

for (const [name, url] of backends()) {
  describe(name, () => {
    test('keeps an acquired lease past its TTL, then releases it through the HeldLease', { timeout: 30_000 }, async () => {
      const store = await open(url('clock=manual'))
      try {
        const lease = await store.acquire('job', { holder: 'A', ttlMs: TTL })
        const held = store.keepAlive(lease)
        assert.ok(held instanceof HeldLease)
        assert.deepEqual([held.scope, held.holder, held.token, held.ttlMs], ['job', 'A', lease.token, TTL])
        // Twice the TTL passes on the store's clock, 400 ms after each renewal.
        let renewals = 0n
        for (let i = 0; i < 3; i++) {
          renewals = await renewedAfter(store, renewals)
          await store.advanceClock(400)
        }
        held.check()
        assert.equal(held.signal.aborted, false)
        assert.equal((await store.status('job')).lease.token, lease.token, 'still the current lease')
        assert.ok(held.expiresAt > lease.expiresAt, 'renewals moved the expiry')
        await assert.rejects(store.acquire('job', { holder: 'B', ttlMs: TTL }), LeaseHeldError)
        assert.equal((await held.put('out', 'done')).token, lease.token)
        assert.equal(await held.release(), true)
        assert.equal((await store.status('job')).lease, null, 'released')
        assert.equal(store.metrics().releases, 1n)
      } finally {
        await store.close()
      }
    })

    test('a kept lease that is lost aborts its signal with the loss', { timeout: 30_000 }, async () => {
      const store = await open(url('clock=manual'))
      try {
        const held = store.keepAlive(await store.acquire('job', { holder: 'A', ttlMs: TTL }))
        await store.advanceClock(TTL + 1)
        const b = await store.acquire('job', { holder: 'B', ttlMs: 60_000 })
        if (!held.signal.aborted) await once(held.signal, 'abort')
        assert.ok(held.signal.reason instanceof LeaseLostError)
        assert.ok(held.lost instanceof LeaseLostError)
        await assert.rejects(held.put('out', 'late'), LeaseLostError)
        assert.equal(await held.release(), false)
        assert.equal((await store.status('job')).lease.token, b.token, "B's lease is untouched")
      } finally {
        await store.close()
      }
    })
  })
}
