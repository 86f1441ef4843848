'use strict'
// Writing through a held lease (docs/semantics.md, "Writing through a held
// lease"): HeldLease.put and the rest present the lease's own scope and
// token, so a mistyped scope cannot give an unprotected write.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { open, LeaseLostError, StaleTokenError, VersionMismatchError } = require('fencing-tokens')
const { backends, rejectsInvalid } = require('./helpers.js')

const TTL = 60_000

for (const [name, url] of backends()) {
  describe(name, () => {
    test("writes land in the lease's scope with its token", async () => {
      const store = await open(url('clock=manual'))
      try {
        await store.withLease('sc', { holder: 'a', ttlMs: TTL }, async (lease) => {
          assert.equal((await lease.put('k', Buffer.from('v'))).version, 1n)
          assert.equal(lease.putSync('t', 'text').version, 1n)
          const e = await store.get('sc', 'k')
          assert.deepEqual([e.value.toString(), e.token], ['v', lease.token])
          assert.equal(await store.get('other', 'k'), null)
          await lease.apply([{ put: 'k2', value: 'w' }, { delete: 't' }])
          assert.equal((await lease.get('k2')).value.toString(), 'w')
          assert.equal(await lease.get('t'), null)
          assert.equal((await lease.delete('k2')).version, 0n)
          await lease.put('k', 'v2', { expectedVersion: 1 })
          await assert.rejects(lease.put('k', 'v3', { expectedVersion: 1 }), VersionMismatchError)
          await lease.claim()
          assert.equal(await store.fenceOf('sc'), lease.token)
        })
        assert.equal((await store.status('sc')).lease, null)
      } finally {
        await store.close()
      }
    })

    test('after a takeover a write is STALE_TOKEN and changes nothing', async () => {
      const store = await open(url('clock=manual'))
      try {
        await assert.rejects(
          store.withLease('job', { holder: 'a', ttlMs: TTL }, async (lease) => {
            await lease.put('k', 'old')
            await store.advanceClock(TTL)
            const b = await store.acquire('job', { holder: 'b', ttlMs: TTL })
            await store.claim('job', { token: b.token })
            await assert.rejects(lease.put('k', 'new'), StaleTokenError)
            assert.throws(() => lease.putSync('k', 'new'), StaleTokenError)
            await assert.rejects(lease.delete('k'), StaleTokenError)
            await assert.rejects(lease.apply([{ put: 'k', value: 'new' }]), StaleTokenError)
            await assert.rejects(lease.get('k'), StaleTokenError)
            assert.equal((await store.get('job', 'k')).value.toString(), 'old')
          }),
          LeaseLostError,
        )
      } finally {
        await store.close()
      }
    })

    test('bad input rejects before anything is written', async () => {
      const store = await open(url('clock=manual'))
      try {
        const lease = await store.lease('sc', { holder: 'a', ttlMs: TTL })
        await rejectsInvalid(lease.put(1, 'v'), TypeError, 'key')
        await rejectsInvalid(lease.put('k', 5), TypeError, 'value')
        await rejectsInvalid(lease.put('k', 'v', { expected_version: 1 }), TypeError, 'misspelt option')
        await rejectsInvalid(lease.put('k', 'v', { expectedVersion: -1 }), RangeError, 'negative version')
        await rejectsInvalid(lease.apply('ops'), TypeError, 'ops')
        await rejectsInvalid(lease.get(null), TypeError, 'get key')
        assert.deepEqual((await store.list('sc')).keys, [])
        assert.equal(await lease.release(), true)
        // After the release nothing more is written through it.
        await rejectsInvalid(lease.put('k', 'v'), undefined, 'after release')
        assert.throws(() => lease.putSync('k', 'v'), { code: 'INVALID_ARGUMENT' })
        assert.equal(await store.get('sc', 'k'), null)
      } finally {
        await store.close()
      }
    })
  })
}

test('a lease known lost writes nothing', async () => {
  // Without eager fencing the takeover raises no fence: the store alone
  // would accept the old token, so only the lease's own check stops it.
  const store = await open('memory:?eager_fencing=false')
  try {
    const lease = await store.lease('job', { holder: 'a', ttlMs: 300 })
    await store.release(lease.lease)
    await store.acquire('job', { holder: 'b', ttlMs: TTL })
    const limit = Date.now() + 60_000
    while (lease.lost === null && Date.now() < limit) await new Promise((r) => setTimeout(r, 5))
    assert.ok(lease.lost instanceof LeaseLostError)
    await assert.rejects(lease.put('k', 'v'), LeaseLostError)
    assert.throws(() => lease.putSync('k', 'v'), LeaseLostError)
    await assert.rejects(lease.claim(), LeaseLostError)
    assert.equal(await store.get('job', 'k'), null)
    assert.equal(await store.fenceOf('job'), 0n)
    assert.equal(await lease.release(), false)
  } finally {
    await store.close()
  }
})
