'use strict'
// Tokens above 2^53 (which a double cannot hold) and at 2^63-1 round-trip
// exactly: through put, get, fenceOf, status, errors and metrics, given as
// bigint or as decimal text, on both backends (in stores whose jumps are
// unbounded: past 2^48 a counter or fence jumps only there).

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { open, MAX_TOKEN, parseToken, StaleTokenError, TokenExhaustedError } = require('fencing-tokens')
const { backends, rejectsInvalid } = require('./helpers.js')

const P53 = 2n ** 53n // 9007199254740992
const BIG = P53 + 1n // 9007199254740993: no double holds it
const MAX = 2n ** 63n - 1n

test('MAX_TOKEN is 2^63-1 and parseToken is exact', () => {
  assert.equal(MAX_TOKEN, MAX)
  assert.equal(typeof MAX_TOKEN, 'bigint')
  assert.equal(parseToken('42'), 42n)
  assert.equal(parseToken('9007199254740993'), BIG)
  assert.equal(parseToken('9223372036854775807'), MAX)
  assert.equal(parseToken('0'), 0n)
  // What a double would have made of it:
  assert.notEqual(BigInt(Number('9007199254740993')), BIG)
})

for (const [name, url] of backends()) {
  describe(name, () => {
    for (const [label, asInput] of [
      ['bigint', (t) => t],
      ['decimal text', (t) => t.toString()],
    ]) {
      test(`2^53+1 as ${label}: issued, written, read, fenced, rejected, counted`, async () => {
        const store = await open(url('clock=manual&jumps=unbounded'))
        try {
          assert.equal(await store.advanceCounter('big', asInput(P53)), P53)
          const lease = await store.acquire('big', { holder: 'A', ttlMs: 1000 })
          assert.equal(lease.token, BIG)
          assert.equal(typeof lease.token, 'bigint')

          const r = await store.put('big', 'k', Buffer.from('v'), { token: asInput(BIG), seq: asInput(BIG), expectedVersion: asInput(0n) })
          assert.deepEqual({ ...r }, { version: 1n, token: BIG })
          const e = await store.get('big', 'k', { token: asInput(BIG) })
          assert.equal(e.token, BIG)
          assert.equal(e.version, 1n)
          assert.equal(await store.fenceOf('big'), BIG)
          assert.equal((await store.status('big')).counter, BIG)

          await assert.rejects(store.put('big', 'k', 'w', { token: asInput(P53) }), (err) => {
            assert.ok(err instanceof StaleTokenError)
            assert.equal(err.presented, P53)
            assert.equal(err.current, BIG)
            return true
          })
          await assert.rejects(store.put('big', 'k', 'w', { token: asInput(BIG), seq: asInput(BIG) }), (err) => {
            assert.equal(err.code, 'SEQUENCE_OUT_OF_ORDER')
            assert.equal(err.presented, BIG)
            assert.equal(err.last, BIG)
            return true
          })
          await assert.rejects(store.put('big', 'k', 'w', { token: asInput(BIG), expectedVersion: asInput(BIG) }), (err) => {
            assert.equal(err.code, 'VERSION_MISMATCH')
            assert.equal(err.expected, BIG)
            assert.equal(err.actual, 1n)
            return true
          })
          await assert.rejects(store.acquire('big', { holder: 'B', ttlMs: 1000 }), (err) => {
            assert.equal(err.code, 'LEASE_HELD')
            assert.equal(err.token, BIG)
            return true
          })
          await store.advanceClock(1000)
          await assert.rejects(store.renew(lease), (err) => {
            assert.equal(err.code, 'LEASE_LOST')
            assert.equal(err.currentToken, null)
            return true
          })

          const m = store.metrics()
          assert.equal(m.rejections.length, 2)
          assert.equal(m.rejections[0].presented, P53)
          assert.equal(m.rejections[0].current, BIG)
          assert.equal(m.rejections[1].seq, BIG)
          assert.equal(m.rejections[1].presented, BIG)
          assert.equal(m.tokensIssued, 1n)
        } finally {
          await store.close()
        }
      })

      test(`2^63-1 as ${label}: the last token, then TOKEN_EXHAUSTED`, async () => {
        const store = await open(url('jumps=unbounded'))
        try {
          assert.equal(await store.advanceCounter('max', asInput(MAX - 1n)), MAX - 1n)
          assert.equal(await store.nextToken('max'), MAX)
          await store.claim('max', { token: asInput(MAX - 1n) })
          const r = await store.put('max', 'k', 'v', { token: asInput(MAX), seq: asInput(MAX) })
          assert.deepEqual({ ...r }, { version: 1n, token: MAX })
          const e = await store.get('max', 'k', { token: asInput(MAX) })
          assert.equal(e.token, MAX)
          assert.equal(e.value.toString(), 'v')
          assert.equal(await store.fenceOf('max'), MAX)
          const st = await store.status('max')
          assert.equal(st.counter, MAX)
          assert.equal(st.fence, MAX)

          await assert.rejects(store.nextToken('max'), TokenExhaustedError)
          await assert.rejects(store.acquire('max', { holder: 'A', ttlMs: 1000 }), { code: 'TOKEN_EXHAUSTED' })
          assert.equal((await store.status('max')).counter, MAX, 'exhaustion changes nothing')

          await assert.rejects(store.put('max', 'k', 'w', { token: asInput(MAX - 1n) }), (err) => {
            assert.equal(err.presented, MAX - 1n)
            assert.equal(err.current, MAX)
            return true
          })
          const m = store.metrics()
          assert.equal(m.rejections.at(-1).presented, MAX - 1n)
          assert.equal(m.rejections.at(-1).current, MAX)
          assert.match(store.metricsText(), /^fencing_stale_rejections_total\{store="[^"]*"\} 1$/m)
        } finally {
          await store.close()
        }
      })
    }

    test('a number that is not a safe integer is refused, never rounded', async () => {
      const store = await open(url('jumps=unbounded'))
      try {
        await store.advanceCounter('s', P53)
        // 2**53 + 1 evaluates to 2**53 in a double: refusing it is the only safe answer.
        await rejectsInvalid(store.put('s', 'k', 'v', { token: 2 ** 53 + 1 }), RangeError, '2^53+1 as number')
        await rejectsInvalid(store.put('s', 'k', 'v', { token: Number(MAX) }), RangeError, '2^63-1 as number')
        await rejectsInvalid(store.advanceCounter('s', 2 ** 60), RangeError, '2^60 as number')
        assert.equal(await store.fenceOf('s'), 0n)
        assert.equal((await store.status('s')).counter, P53)
        // The largest safe integer itself is fine.
        const r = await store.put('s', 'k', 'v', { token: Number.MAX_SAFE_INTEGER })
        assert.equal(r.token, P53 - 1n)
      } finally {
        await store.close()
      }
    })
  })
}
