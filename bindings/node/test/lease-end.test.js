'use strict'
// How a held lease ends (docs/semantics.md, "Ending a held lease"): the
// core gives one verdict, withLease and HeldLease.release only translate
// it. On a manual clock with a 60 s lease no renewal runs during a test,
// so a loss can only be found by the end itself.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { open, LeaseLostError, ClosedError, StaleTokenError, TimeoutError } = require('fencing-tokens')
const { backends } = require('./helpers.js')

const TTL = 60_000

for (const [name, url] of backends()) {
  describe(name, () => {
    test('a takeover during the work rejects withLease with LEASE_LOST naming the new holder', async () => {
      const store = await open(url('clock=manual'))
      try {
        await assert.rejects(
          store.withLease('job', { holder: 'a', ttlMs: TTL }, async (lease) => {
            await store.advanceClock(TTL + 1)
            await store.acquire('job', { holder: 'b', ttlMs: TTL })
            assert.equal(lease.lost, null, 'no renewal ran yet')
            return 'done'
          }),
          (e) => e instanceof LeaseLostError && e.currentToken === 2n && e.currentHolder === 'b' && e.cause === undefined,
        )
        assert.equal((await store.status('job')).lease.holder, 'b', "the new holder's lease is untouched")
      } finally {
        await store.close()
      }
    })

    test('a store closed during the work rejects withLease with CLOSED', async () => {
      const store = await open(url('clock=manual'))
      await assert.rejects(
        store.withLease('job', { holder: 'a', ttlMs: TTL }, async () => {
          await store.close()
          return 'done'
        }),
        (e) => e instanceof ClosedError,
      )
    })

    test("failed work under a lost lease: the loss wins, the work's error is its cause", async () => {
      const store = await open(url('clock=manual'))
      try {
        let work
        await assert.rejects(
          store.withLease('job', { holder: 'a', ttlMs: TTL }, async (lease) => {
            await store.advanceClock(TTL + 1)
            await store.acquire('job', { holder: 'b', ttlMs: TTL })
            try {
              await store.put('job', 'out', 'x', { token: lease.token })
            } catch (e) {
              work = e
              throw e
            }
          }),
          (e) => e instanceof LeaseLostError && e.cause === work && work instanceof StaleTokenError,
        )
      } finally {
        await store.close()
      }
    })

    test('HeldLease.release gives the verdict: true when held to the end, false when lost', async () => {
      const store = await open(url('clock=manual'))
      try {
        const held = await store.lease('job', { holder: 'a', ttlMs: TTL })
        assert.equal(await held.release(), true)
        assert.equal(await held.release(), false, 'a second release releases nothing')
        const lost = await store.lease('job', { holder: 'a', ttlMs: TTL })
        await store.advanceClock(TTL)
        assert.equal(await lost.release(), false)
        assert.ok(lost.lost instanceof LeaseLostError, 'the loss found at release is recorded')
        assert.equal(lost.lost.currentToken, null)
        const closing = await store.lease('other', { holder: 'a', ttlMs: TTL })
        await store.close()
        await assert.rejects(closing.release(), ClosedError)
      } finally {
        await store.close()
      }
    })

    test('withLease takes an AbortSignal: aborting before the lease is held rejects, nothing held', async () => {
      const store = await open(url('clock=manual'))
      try {
        const controller = new AbortController()
        controller.abort(new Error('stop'))
        await assert.rejects(
          store.withLease('job', { holder: 'a', ttlMs: TTL, signal: controller.signal }, () => assert.fail('must not run')),
          (e) => e.message === 'stop',
        )
        assert.equal((await store.status('job')).lease, null)
        // A wait for a held scope ends when the signal aborts.
        await store.acquire('job', { holder: 'b', ttlMs: TTL })
        const waiting = new AbortController()
        const pending = store.withLease('job', { holder: 'a', ttlMs: TTL, timeoutMs: 600_000, signal: waiting.signal }, () =>
          assert.fail('must not run'),
        )
        waiting.abort(new Error('gave up'))
        await assert.rejects(pending, (e) => e.message === 'gave up')
        // The abandoned wait stopped with it: once B releases, it takes
        // nothing (before, it took the lease and released it at once).
        await store.release({ scope: 'job', token: 1n })
        await new Promise((resolve) => setTimeout(resolve, 200))
        assert.equal((await store.status('job')).counter, 1n)
        assert.equal((await store.status('job')).lease, null)
        // The lease.signal a running work sees aborts with the caller's signal too.
        const during = new AbortController()
        await assert.rejects(
          store.withLease('other', { holder: 'a', ttlMs: TTL, signal: during.signal }, async (lease) => {
            during.abort(new Error('cancelled'))
            assert.equal(lease.signal.aborted, true)
            throw lease.signal.reason
          }),
          (e) => e.message === 'cancelled',
        )
        assert.equal((await store.status('other')).lease, null, 'released at the end')
      } finally {
        await store.close()
      }
    })

    test('await using releases a HeldLease; unref() lets the process exit while held', async () => {
      const store = await open(url('clock=manual'))
      try {
        const held = await store.lease('job', { holder: 'a', ttlMs: TTL })
        assert.equal(typeof held[Symbol.asyncDispose], 'function')
        assert.equal(held.unref(), held)
        await held[Symbol.asyncDispose]()
        assert.equal((await store.status('job')).lease, null)
        await assert.rejects(store.lease('job', { holder: 'a', ttlMs: TTL, timeoutMs: -1 }), (e) => e.code === 'INVALID_ARGUMENT')
        await store.acquire('job', { holder: 'b', ttlMs: TTL })
        await assert.rejects(store.lease('job', { holder: 'a', ttlMs: TTL, timeoutMs: 10 }), TimeoutError)
      } finally {
        await store.close()
      }
    })
  })
}

test('a process whose only handle is an unref()ed HeldLease exits', { timeout: 120_000 }, () => {
  const { spawnSync } = require('node:child_process')
  const script = `
    const { open } = require('fencing-tokens')
    open('memory:').then(async (store) => {
      const held = await store.lease('job', { holder: 'a', ttlMs: 60000 })
      held.unref()
      console.log('held', held.token)
    })`
  // Without unref the keep-alive holds the process open: the child would
  // run until the limit and be killed.
  const r = spawnSync(process.execPath, ['-e', script], { cwd: __dirname, encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.signal, null, `killed: ${r.stderr}`)
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, 'held 1n\n')
})
