'use strict'
// withLease and lease(): the core's keep-alive renews in the background,
// the holder is told when the lease is lost (signal, lost, rejection with
// LEASE_LOST), and the lease is released at the end. Nothing here waits on
// a clock: the tests wait for events (an abort, a renewal showing up in the
// metrics), bounded by the test timeout.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const { setTimeout: sleep } = require('node:timers/promises')
const { open, HeldLease, LeaseLostError, StaleTokenError, FencingError, ClosedError } = require('fencing-tokens')
const { backends } = require('./helpers.js')

/** Waits (polling) until `predicate()` holds. */
async function until(predicate) {
  while (!predicate()) await sleep(5)
}

for (const [name, url] of backends()) {
  describe(name, () => {
    test('runs the work with the lease, renews it, releases it, resolves to the result', { timeout: 30_000 }, async () => {
      const store = await open(url())
      try {
        const result = await store.withLease('job', { holder: 'w', ttlMs: 600 }, async (lease) => {
          assert.ok(lease instanceof HeldLease)
          assert.equal(lease.token, 1n)
          assert.equal(lease.scope, 'job')
          assert.equal(lease.holder, 'w')
          assert.equal(lease.lost, null)
          const firstExpiry = lease.expiresAt.getTime()
          await store.put('job', 'out', 'partial', { token: lease.token })
          // Outlive the TTL: only renewals keep the lease.
          await until(() => store.metrics().renewals >= 4n)
          lease.check()
          assert.equal(lease.signal.aborted, false)
          assert.ok(lease.expiresAt.getTime() > firstExpiry, 'renewals moved the expiry')
          const st = await store.status('job')
          assert.equal(st.lease.token, 1n)
          await store.put('job', 'out', 'done', { token: lease.token })
          return 'finished'
        })
        assert.equal(result, 'finished')
        const st = await store.status('job')
        assert.equal(st.lease, null, 'released at the end')
        assert.equal(store.metrics().releases, 1n)
        assert.equal(store.metrics().renewalFailures, 0n)
        assert.equal((await store.get('job', 'out')).value.toString(), 'done')
        // The next holder gets the next token at once.
        const next = await store.acquire('job', { holder: 'x', ttlMs: 1000 })
        assert.equal(next.token, 2n)
      } finally {
        await store.close()
      }
    })

    test("the work's own error rejects withLease, and the lease is still released", async () => {
      const store = await open(url())
      try {
        const boom = new Error('work failed')
        await assert.rejects(
          store.withLease('job', { holder: 'w', ttlMs: 10_000 }, async () => {
            throw boom
          }),
          (e) => e === boom,
        )
        assert.equal((await store.status('job')).lease, null)
        // A synchronous function works too.
        assert.equal(await store.withLease('job', { holder: 'w', ttlMs: 10_000 }, (l) => l.token), 2n)
      } finally {
        await store.close()
      }
    })

    test('a held scope: LEASE_HELD without timeoutMs; with it, waits for the release', { timeout: 30_000 }, async () => {
      const store = await open(url())
      try {
        const a = await store.acquire('job', { holder: 'A', ttlMs: 600_000 })
        await assert.rejects(
          store.withLease('job', { holder: 'w', ttlMs: 1000 }, () => assert.fail('must not run')),
          (e) => e.code === 'LEASE_HELD' && e.holder === 'A' && e.token === 1n,
        )
        const waiting = store.withLease('job', { holder: 'w', ttlMs: 1000, timeoutMs: 30_000 }, (l) => l.token)
        await store.release(a)
        assert.equal(await waiting, 2n)
      } finally {
        await store.close()
      }
    })

    test('losing the lease: the signal aborts, writes are fenced, withLease rejects with LEASE_LOST', { timeout: 30_000 }, async () => {
      const store = await open(url('clock=manual'))
      try {
        let seen
        const outcome = store.withLease('job', { holder: 'A', ttlMs: 300 }, async (lease) => {
          seen = lease
          await store.put('job', 'out', "A's", { token: lease.token })
          // A pause long enough for the lease to expire, and a new holder takes over.
          await store.advanceClock(301)
          const b = await store.acquire('job', { holder: 'B', ttlMs: 600_000 })
          await store.put('job', 'out', "B's", { token: b.token })
          // The keep-alive's next renewal fails: the holder is told.
          await once(lease.signal, 'abort')
          assert.ok(lease.signal.reason instanceof LeaseLostError)
          assert.ok(lease.lost instanceof LeaseLostError)
          assert.throws(() => lease.check(), LeaseLostError)
          // A holder that writes anyway is fenced off.
          await assert.rejects(store.put('job', 'out', "A's late", { token: lease.token }), StaleTokenError)
          return 'done anyway'
        })
        await assert.rejects(outcome, (e) => {
          assert.ok(e instanceof LeaseLostError)
          assert.ok(e instanceof FencingError)
          assert.equal(e.code, 'LEASE_LOST')
          assert.equal(e.scope, 'job')
          assert.equal(e.currentToken, 2n)
          assert.equal(e.currentHolder, 'B')
          return true
        })
        assert.equal((await store.get('job', 'out')).value.toString(), "B's")
        const st = await store.status('job')
        assert.equal(st.lease.holder, 'B', "the lost lease's release left B alone")
        assert.equal(st.fence, 2n)
        assert.ok(store.metrics().renewalFailures >= 1n)
        assert.equal(await seen.release(), false, 'already released by withLease')
      } finally {
        await store.close()
      }
    })

    test("when the work fails because the lease was lost, LEASE_LOST wins and the work's error is the cause", { timeout: 30_000 }, async () => {
      const store = await open(url('clock=manual'))
      try {
        const outcome = store.withLease('job', { holder: 'A', ttlMs: 300 }, async (lease) => {
          await store.advanceClock(301)
          await store.acquire('job', { holder: 'B', ttlMs: 600_000 })
          await once(lease.signal, 'abort')
          await store.put('job', 'out', 'late', { token: lease.token }) // throws STALE_TOKEN
        })
        await assert.rejects(outcome, (e) => e instanceof LeaseLostError && e.cause instanceof StaleTokenError)
      } finally {
        await store.close()
      }
    })

    test('lease(): held until release(); closing the store ends the keep-alive with CLOSED', { timeout: 30_000 }, async () => {
      const store = await open(url())
      const held = await store.lease('job', { holder: 'A', ttlMs: 600 })
      await until(() => store.metrics().renewals >= 1n)
      assert.equal(held.lost, null)
      await store.close()
      await once(held.signal, 'abort')
      assert.ok(held.lost instanceof ClosedError)
      assert.equal(held.lost.code, 'CLOSED')
      await assert.rejects(held.release(), ClosedError)
      assert.equal(await held.release(), false, 'a second release is a no-op')
    })
  })
}

test('a HeldLease release() is idempotent, and the lease is free again', async () => {
  const store = await open('memory:')
  try {
    const held = await store.lease('s', { holder: 'A', ttlMs: 10_000 })
    assert.equal(held.token, 1n)
    assert.equal(await held.release(), true)
    assert.equal(await held.release(), false)
    assert.equal(held.lost, null)
    assert.equal((await store.status('s')).lease, null)
  } finally {
    await store.close()
  }
})

test("a HeldLease's identity cannot be changed under the keep-alive", async () => {
  const store = await open('memory:')
  try {
    const held = await store.lease('s', { holder: 'A', ttlMs: 10_000 })
    assert.throws(() => {
      'use strict'
      held.token = 99n
    }, TypeError)
    assert.equal(held.token, 1n)
    assert.deepEqual(Object.keys(held), ['scope', 'holder', 'token', 'ttlMs'])
    await held.release()
  } finally {
    await store.close()
  }
})
