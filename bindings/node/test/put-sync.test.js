'use strict'
// putSync: the same write as put, without a Promise. Every outcome put has
// (accepted, stale, version mismatch, bad input, closed store) comes back
// the same way, synchronously, and a rejected call changes nothing.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const {
  open,
  FencingError,
  StaleTokenError,
  VersionMismatchError,
  ClosedError,
} = require('fencing-tokens')
const { backends, rejectsInvalid } = require('./helpers.js')

const MAX = 2n ** 63n - 1n

/** Asserts that `fn()` throws (not rejects) INVALID_ARGUMENT of `kind`. */
async function throwsInvalid(fn, kind, label) {
  let result
  try {
    result = fn()
  } catch (e) {
    await rejectsInvalid(Promise.reject(e), kind, label)
    return
  }
  assert.fail(`${label}: returned ${String(result)} instead of throwing`)
}

async function snapshot(store, scope) {
  return { entry: await store.get(scope, 'k'), fence: await store.fenceOf(scope) }
}

for (const [name, url] of backends()) {
  describe(name, () => {
    test('accepted: a receipt with bigint version and token, like put', async () => {
      const store = await open(url('jumps=unbounded')) // up to the largest token
      try {
        const r1 = store.putSync('s', 'k', Buffer.from('one'), { token: 5n })
        assert.deepEqual({ ...r1 }, { version: 1n, token: 5n })
        const r2 = store.putSync('s', 'k', 'two', { token: '5', expectedVersion: 1 })
        assert.deepEqual({ ...r2 }, { version: 2n, token: 5n })
        const r3 = await store.put('s', 'k', new Uint8Array([3]), { token: 6n })
        assert.deepEqual({ ...r3 }, { version: 3n, token: 6n })
        const r4 = store.putSync('s', 'k', 'four', { token: MAX, seq: 1, holder: 'h' })
        assert.deepEqual({ ...r4 }, { version: 4n, token: MAX })
        const e = await store.get('s', 'k')
        assert.equal(e.value.toString(), 'four')
        assert.equal(e.version, 4n)
        assert.equal(e.token, MAX)
      } finally {
        await store.close()
      }
    })

    test('stale token and version mismatch throw the typed errors and change nothing', async () => {
      const store = await open(url())
      try {
        store.putSync('s', 'k', 'v', { token: 10n })
        const before = await snapshot(store, 's')
        assert.throws(
          () => store.putSync('s', 'k', 'old', { token: 9n, holder: 'paused' }),
          (e) => {
            assert.ok(e instanceof StaleTokenError && e instanceof FencingError)
            assert.equal(e.code, 'STALE_TOKEN')
            assert.equal(e.presented, 9n)
            assert.equal(e.current, 10n)
            return true
          },
        )
        assert.throws(
          () => store.putSync('s', 'k', 'x', { token: 10n, expectedVersion: 7 }),
          (e) => e instanceof VersionMismatchError && e.expected === 7n && e.actual === 1n,
        )
        assert.deepEqual(await snapshot(store, 's'), before)
      } finally {
        await store.close()
      }
    })

    test('bad input throws INVALID_ARGUMENT synchronously and changes nothing', async () => {
      const store = await open(url())
      try {
        store.putSync('s', 'k', 'v', { token: 3n })
        const before = await snapshot(store, 's')
        const cases = [
          ['no options', () => store.putSync('s', 'k', 'v'), TypeError],
          ['null options', () => store.putSync('s', 'k', 'v', null), TypeError],
          ['token 0', () => store.putSync('s', 'k', 'v', { token: 0n }), RangeError],
          ['token 2^63', () => store.putSync('s', 'k', 'v', { token: MAX + 1n }), RangeError],
          ['negative token', () => store.putSync('s', 'k', 'v', { token: -1n }), RangeError],
          ['token as float', () => store.putSync('s', 'k', 'v', { token: 1.5 }), undefined],
          ['unknown option', () => store.putSync('s', 'k', 'v', { token: 3n, tokn: 4n }), TypeError],
          ['scope undefined', () => store.putSync(undefined, 'k', 'v', { token: 3n }), TypeError],
          ['scope number', () => store.putSync(1, 'k', 'v', { token: 3n }), TypeError],
          ['empty key', () => store.putSync('s', '', 'v', { token: 3n }), RangeError],
          ['lone surrogate key', () => store.putSync('s', '\ud800', 'v', { token: 3n }), undefined],
          ['value number', () => store.putSync('s', 'k', 42, { token: 3n }), TypeError],
          ['oversized value', () => store.putSync('s', 'k', Buffer.alloc(1024 * 1024 + 1), { token: 3n }), RangeError],
        ]
        for (const [label, fn, kind] of cases) await throwsInvalid(fn, kind, label)
        assert.deepEqual(await snapshot(store, 's'), before)
      } finally {
        await store.close()
      }
    })

    test('a closed store throws ClosedError', async () => {
      const store = await open(url())
      await store.close()
      assert.throws(() => store.putSync('s', 'k', 'v', { token: 1n }), (e) => e instanceof ClosedError && e.code === 'CLOSED')
    })
  })
}
