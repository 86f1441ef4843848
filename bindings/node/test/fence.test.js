'use strict'
// store.fence(scope, token): the hot path's shape. Its putSync and put must
// be the options-object calls with { token } in every outcome: the same
// receipt, the same error (class, code, details) for every bad input, a
// stale token and a closed store, and a refused call changes nothing.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { open, Fence, FencingError, StaleTokenError, ClosedError } = require('fencing-tokens')
const { backends } = require('./helpers.js')

const MAX = 2n ** 63n - 1n

/** What a call did: `{ value }` or `{ error }`, thrown or rejected alike. */
async function outcome(fn) {
  try {
    return { value: await fn() }
  } catch (error) {
    return { error }
  }
}

/** The parts of an error a caller branches on. */
function shape(e) {
  assert.ok(e instanceof Error, `not an Error: ${String(e)}`)
  return {
    name: e.name,
    code: e.code,
    fencing: e instanceof FencingError,
    presented: e.presented,
    current: e.current,
  }
}

async function snapshot(store) {
  return {
    entry: await store.get('s', 'k'),
    fence: await store.fenceOf('s'),
    list: await store.list('s'),
    writes: store.metrics().writesAccepted,
  }
}

const LONG = 'n'.repeat(64 * 1024)

// [label, scope, token, key, value]: each argument bad in each way it can be.
const BAD = [
  ['scope a number', 42, 5n, 'k', 'v'],
  ['scope undefined', undefined, 5n, 'k', 'v'],
  ['scope null', null, 5n, 'k', 'v'],
  ['scope empty', '', 5n, 'k', 'v'],
  ['scope with a NUL', 's\0t', 5n, 'k', 'v'],
  ['scope with a lone surrogate', 's\uD800', 5n, 'k', 'v'],
  ['scope of 64 KiB', LONG, 5n, 'k', 'v'],
  ['token negative', 's', -1n, 'k', 'v'],
  ['token 0', 's', 0n, 'k', 'v'],
  ['token 2^63', 's', 2n ** 63n, 'k', 'v'],
  ['token 2^64', 's', 2n ** 64n, 'k', 'v'],
  ['token not a safe integer', 's', 2 ** 60, 'k', 'v'],
  ['token a fraction', 's', 1.5, 'k', 'v'],
  ['token text not canonical', 's', '05', 'k', 'v'],
  ['token text not a number', 's', 'five', 'k', 'v'],
  ['token a lease', 's', { scope: 's', token: 5n }, 'k', 'v'],
  ['token undefined', 's', undefined, 'k', 'v'],
  ['token null', 's', null, 'k', 'v'],
  ['token a boolean', 's', true, 'k', 'v'],
  ['key a number', 's', 5n, 42, 'v'],
  ['key undefined', 's', 5n, undefined, 'v'],
  ['key empty', 's', 5n, '', 'v'],
  ['key with a NUL', 's', 5n, 'k\0', 'v'],
  ['key with a lone surrogate', 's', 5n, '\uDC00k', 'v'],
  ['key of 64 KiB', 's', 5n, LONG, 'v'],
  ['value a number', 's', 5n, 'k', 42],
  ['value undefined', 's', 5n, 'k', undefined],
  ['value null', 's', 5n, 'k', null],
  ['value an object', 's', 5n, 'k', {}],
  ['value an array', 's', 5n, 'k', [1, 2]],
  ['value a Uint16Array', 's', 5n, 'k', new Uint16Array(2)],
  ['value a string with a lone surrogate', 's', 5n, 'k', 'v\uD800'],
]

for (const [name, url] of backends()) {
  describe(name, () => {
    test('a fence writes what put with { token } writes, with the same receipt', async () => {
      // Jumps unbounded: the fence goes up to the largest token.
      const store = await open(url('jumps=unbounded'))
      try {
        const fence = store.fence('s', 5n)
        assert.ok(fence instanceof Fence)
        assert.equal(fence.scope, 's')
        assert.equal(fence.token, 5n)
        const r1 = fence.putSync('k', Buffer.from('one'))
        assert.deepEqual({ ...r1 }, { version: 1n, token: 5n })
        const r2 = await fence.put('k', 'two')
        assert.deepEqual({ ...r2 }, { version: 2n, token: 5n })
        const r3 = fence.putSync('k', new Uint8Array([3]))
        const slow = store.putSync('s', 'k', new Uint8Array([4]), { token: 5n })
        assert.equal(r3.version + 1n, slow.version)
        // JSON as every receipt's: bigints as decimal strings.
        assert.equal(JSON.stringify(slow), '{"version":"4","token":"5"}')
        assert.equal(JSON.stringify(fence.putSync('k', 'five')), '{"version":"5","token":"5"}')
        const e = await store.get('s', 'k')
        assert.equal(e.value.toString(), 'five')
        assert.equal(e.version, 5n)
        assert.equal(e.token, 5n)
        // Tokens in every form the options take, and the greatest one.
        assert.equal(store.fence('u', '7').token, 7n)
        assert.equal(store.fence('u', 8).token, 8n)
        assert.equal(store.fence('u', MAX).putSync('k', '').token, MAX)
      } finally {
        await store.close()
      }
    })

    test('every bad input fails as it does through put and putSync, and changes nothing', async () => {
      const store = await open(url())
      try {
        store.putSync('s', 'k', 'v', { token: 5n })
        const before = await snapshot(store)
        for (const [label, scope, token, key, value] of BAD) {
          const slowSync = await outcome(() => store.putSync(scope, key, value, { token }))
          const slow = await outcome(() => store.put(scope, key, value, { token }))
          const fastSync = await outcome(() => store.fence(scope, token).putSync(key, value))
          const fast = await outcome(() => store.fence(scope, token).put(key, value))
          for (const o of [slowSync, slow, fastSync, fast]) assert.ok(o.error, `${label}: refused`)
          assert.equal(slowSync.error.code, 'INVALID_ARGUMENT', `${label}: ${slowSync.error.message}`)
          assert.deepEqual(shape(fastSync.error), shape(slowSync.error), `${label}: putSync`)
          assert.deepEqual(shape(fast.error), shape(slow.error), `${label}: put`)
        }
        assert.deepEqual(await snapshot(store), before)
      } finally {
        await store.close()
      }
    })

    test('a bad key or value throws from putSync and rejects from put, the fence stays usable', async () => {
      const store = await open(url())
      try {
        const fence = store.fence('s', 5n)
        assert.throws(() => fence.putSync(42, 'v'), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
        const pending = fence.put('k', 42)
        assert.ok(pending instanceof Promise, 'put rejects rather than throws')
        await assert.rejects(pending, { name: 'TypeError', code: 'INVALID_ARGUMENT' })
        assert.equal(fence.putSync('k', 'v').version, 1n)
      } finally {
        await store.close()
      }
    })

    test('a stale fence is refused like a stale put, and changes nothing', async () => {
      const store = await open(url())
      try {
        const old = store.fence('s', 9n)
        old.putSync('k', 'old')
        store.putSync('s', 'k', 'new', { token: 10n })
        const before = await snapshot(store)
        const slow = await outcome(() => store.putSync('s', 'k', 'x', { token: 9n }))
        const fastSync = await outcome(() => old.putSync('k', 'x'))
        const fast = await outcome(() => old.put('k', 'x'))
        for (const o of [fastSync, fast]) {
          assert.ok(o.error instanceof StaleTokenError)
          assert.deepEqual(shape(o.error), shape(slow.error))
          assert.equal(o.error.presented, 9n)
          assert.equal(o.error.current, 10n)
          assert.equal(o.error.scope, 's')
        }
        assert.deepEqual(await snapshot(store), before)
        // The newer token's fence writes.
        assert.equal(store.fence('s', 10n).putSync('k', 'newer').version, 3n)
      } finally {
        await store.close()
      }
    })

    test('closing the store closes its fences: CLOSED, as put says', async () => {
      const store = await open(url())
      const before = store.fence('s', 5n)
      before.putSync('k', 'v')
      await store.close()
      const slow = await outcome(() => store.putSync('s', 'k', 'v', { token: 5n }))
      assert.equal(slow.error.code, 'CLOSED')
      const after = store.fence('s', 5n)
      for (const fence of [before, after]) {
        const sync = await outcome(() => fence.putSync('k', 'v'))
        const awaited = await outcome(() => fence.put('k', 'v'))
        for (const o of [sync, awaited]) {
          assert.ok(o.error instanceof ClosedError)
          assert.deepEqual(shape(o.error), shape(slow.error))
        }
      }
      // Arguments are still checked first, as on the slow path.
      assert.throws(() => store.fence(42, 5n), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
      assert.throws(() => after.putSync('k', 42), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
    })

    test('a Fence is made only by store.fence', async () => {
      assert.throws(() => new Fence(), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
      // The addon's fencePut takes only a fence's own handle; its putSync is
      // bound to its fence, whatever `this` it is called on.
      const native = require('../index.js')
      const store = await native.open(url())
      try {
        const fence = store.fence('s', 5n)
        const putSync = fence.putSyncFunction
        assert.equal(putSync('k', 'v'), 1n)
        assert.equal(putSync.call(store, 'k', 'v'), 2n)
        assert.equal(await native.fencePut(fence.handle, 'k', 'v'), 3n)
        for (const bad of [{}, null, undefined, 'handle', store]) {
          assert.throws(() => native.fencePut(bad, 'k', 'v'), { name: 'TypeError', code: 'INVALID_ARGUMENT' })
        }
        assert.equal((await store.get('s', 'k')).version, 3n)
      } finally {
        await store.close()
      }
    })
  })
}
