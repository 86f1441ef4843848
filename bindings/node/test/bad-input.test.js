'use strict'
// Bad input of every kind is INVALID_ARGUMENT (a TypeError for a wrong type,
// a RangeError for a bad value), never a crash, and changes nothing: the
// fence, the entry, the counter and the metrics stay as they were.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { open, parseToken, Store, HeldLease } = require('fencing-tokens')
const { backends, rejectsInvalid } = require('./helpers.js')

const T = TypeError
const R = RangeError
const MAX = 2n ** 63n - 1n

// Every token input that must be refused, with the error class it gets.
const BAD_TOKENS = [
  [undefined, T],
  [null, T],
  [true, T],
  [{}, T],
  [[], T],
  [[1], T],
  [Symbol('t'), T],
  [() => 1, T],
  [new Number(1), T],
  [Object('1'), T],
  [Buffer.from('1'), T],
  [1.5, R],
  [-1, R],
  [-0.5, R],
  [NaN, R],
  [Infinity, R],
  [-Infinity, R],
  [2 ** 53, R],
  [2 ** 53 + 1, R],
  [1e300, R],
  [0, R],
  [0n, R],
  [-1n, R],
  [2n ** 63n, R],
  [2n ** 64n - 1n, R],
  [2n ** 64n, R],
  [-(2n ** 64n) - 1n, R],
  ['', R],
  ['abc', R],
  ['007', R],
  ['0', R],
  ['00', R],
  [' 1', R],
  ['1 ', R],
  ['+1', R],
  ['-1', R],
  ['1e3', R],
  ['1.0', R],
  ['0x10', R],
  ['١', R],
  ['9223372036854775808', R],
  ['18446744073709551616', R],
  ['99999999999999999999', R],
  ['1\u0000', R],
  ['\ud800', R],
]

const show = (v) => {
  try {
    return typeof v === 'bigint' ? `${v}n` : typeof v === 'symbol' ? v.toString() : JSON.stringify(v) ?? String(v)
  } catch {
    return String(v)
  }
}

for (const [name, url] of backends()) {
  describe(name, () => {
    /** A store with one accepted write (token 1) and a live lease; snapshot() reads everything. */
    async function fixture() {
      const store = await open(url('clock=manual'))
      const lease = await store.acquire('s', { holder: 'A', ttlMs: 1000 })
      await store.put('s', 'k', 'v', { token: lease.token, seq: 3n })
      const snapshot = async () => ({
        entry: await store.get('s', 'k'),
        status: await store.status('s'),
        list: await store.list('s'),
        metrics: { ...store.metrics(), rejections: store.metrics().rejections.length },
      })
      return { store, lease, snapshot, before: await snapshot() }
    }

    test('a bad token is refused by every operation that takes one, and changes nothing', async () => {
      const { store, lease, snapshot, before } = await fixture()
      try {
        for (const [bad, kind] of BAD_TOKENS) {
          const label = show(bad)
          await rejectsInvalid(store.put('s', 'k', 'bad', { token: bad }), kind, `put ${label}`)
          await rejectsInvalid(store.delete('s', 'k', { token: bad }), kind, `delete ${label}`)
          await rejectsInvalid(store.apply('s', [{ put: 'k', value: 'bad' }], { token: bad }), kind, `apply ${label}`)
          await rejectsInvalid(store.execute('s', { put: 'k', value: 'bad' }, { token: bad }), kind, `execute ${label}`)
          await rejectsInvalid(store.claim('s', { token: bad }), kind, `claim ${label}`)
          await rejectsInvalid(store.get('s', 'k', { token: bad }), kind, `get ${label}`)
          await rejectsInvalid(store.renew({ scope: 's', token: bad }, { ttlMs: 5000 }), kind, `renew ${label}`)
          await rejectsInvalid(store.release({ scope: 's', token: bad }), kind, `release ${label}`)
          await rejectsInvalid(store.advanceCounter('s', bad), kind, `advanceCounter ${label}`)
        }
        assert.deepEqual(await snapshot(), before)
        assert.equal((await store.status('s')).lease.token, lease.token)
      } finally {
        await store.close()
      }
    })

    test('a bad seq or expectedVersion is refused before the sequence check, and changes nothing', async () => {
      const { store, snapshot, before } = await fixture()
      try {
        // 0 is a valid seq and version, so only the other bad values apply.
        const bad = BAD_TOKENS.filter(([v]) => v !== 0 && v !== 0n && v !== '0' && v !== undefined)
        bad.push([2n ** 63n, R], ['9223372036854775808', R])
        for (const [v, kind] of bad) {
          const label = show(v)
          await rejectsInvalid(store.put('s', 'k', 'bad', { token: 1n, seq: v }), kind, `seq ${label}`)
          await rejectsInvalid(store.put('s', 'k', 'bad', { token: 1n, expectedVersion: v }), kind, `expectedVersion ${label}`)
          await rejectsInvalid(store.delete('s', 'k', { token: 1n, expectedVersion: v }), kind, `delete expectedVersion ${label}`)
          await rejectsInvalid(store.claim('s', { token: 1n, seq: v }), kind, `claim seq ${label}`)
          await rejectsInvalid(store.apply('s', [{ delete: 'k', expectedVersion: v }], { token: 1n }), kind, `apply op ${label}`)
          await rejectsInvalid(store.execute('s', { delete: 'k', expectedVersion: v }, { token: 1n }), kind, `execute op ${label}`)
          await rejectsInvalid(store.execute('s', { delete: 'k' }, { token: 1n, seq: v }), kind, `execute seq ${label}`)
        }
        assert.deepEqual(await snapshot(), before)
      } finally {
        await store.close()
      }
    })

    test('bad scopes, keys and holders: wrong types, empty, oversized, NUL, lone surrogates', async () => {
      const { store, snapshot, before } = await fixture()
      try {
        const badNames = [
          [undefined, T],
          [null, T],
          [42, T],
          [42n, T],
          [{}, T],
          [['s'], T],
          [Symbol('s'), T],
          [Buffer.from('s'), T],
          ['', R],
          ['a\u0000b', R],
          ['\ud800', R],
          ['a\udc00b', R],
          ['\udbff\udbff', R],
        ]
        const scopes = [...badNames, ['x'.repeat(257), R], ['é'.repeat(129), R]]
        const keys = [...badNames, ['x'.repeat(1025), R]]
        const holders = [...badNames, ['x'.repeat(257), R]]
        for (const [scope, kind] of scopes) {
          const l = `scope ${show(scope)}`
          await rejectsInvalid(store.put(scope, 'k', 'v', { token: 1n }), kind, l)
          await rejectsInvalid(store.nextToken(scope), kind, l)
          await rejectsInvalid(store.acquire(scope, { holder: 'A', ttlMs: 1000 }), kind, l)
          await rejectsInvalid(store.fenceOf(scope), kind, l)
          await rejectsInvalid(store.status(scope), kind, l)
          await rejectsInvalid(store.retire(scope), kind, l)
          await rejectsInvalid(store.list(scope), kind, l)
          await rejectsInvalid(store.get(scope, 'k'), kind, l)
        }
        for (const [key, kind] of keys) {
          const l = `key ${show(key)}`
          await rejectsInvalid(store.put('s', key, 'v', { token: 1n }), kind, l)
          await rejectsInvalid(store.delete('s', key, { token: 1n }), kind, l)
          await rejectsInvalid(store.get('s', key), kind, l)
          await rejectsInvalid(store.apply('s', [{ put: key, value: 'v' }], { token: 1n }), kind, l)
          if (key !== undefined) await rejectsInvalid(store.list('s', { after: key }), kind, l)
        }
        for (const [holder, kind] of holders) {
          const l = `holder ${show(holder)}`
          await rejectsInvalid(store.acquire('t', { holder, ttlMs: 1000 }), kind, l)
          if (holder !== undefined) await rejectsInvalid(store.put('s', 'k', 'v', { token: 1n, holder }), kind, l)
        }
        // The limits themselves are accepted.
        await store.put('x'.repeat(256), 'y'.repeat(1024), 'v', { token: 1n, holder: 'h'.repeat(256) })
        // A well-formed surrogate pair is a valid character, and U+FFFD is just a character.
        await store.put('s', '\ud83d\ude00', 'v', { token: 1n })
        await store.put('s', '\ufffd', 'v', { token: 1n })
        const keysNow = (await store.list('s')).keys
        assert.deepEqual(keysNow, ['k', '\ufffd', '\ud83d\ude00'])
        assert.equal((await store.status('t')).counter, 0n, 'no acquire on t went through')
        assert.deepEqual((await snapshot()).entry, before.entry)
      } finally {
        await store.close()
      }
    })

    test('bad values: wrong types and over 1 MiB', async () => {
      const { store, snapshot, before } = await fixture()
      try {
        for (const [value, kind] of [
          [undefined, T],
          [null, T],
          [42, T],
          [true, T],
          [{}, T],
          [[1, 2], T],
          [new Uint16Array(2), T],
          [new ArrayBuffer(2), T],
          [new DataView(new ArrayBuffer(2)), T],
          ['\ud800', R],
          [Buffer.alloc(1024 * 1024 + 1), R],
          ['x'.repeat(1024 * 1024 + 1), R],
        ]) {
          const l = `value ${value?.constructor?.name ?? show(value)}`
          await rejectsInvalid(store.put('s', 'k', value, { token: 1n }), kind, l)
          await rejectsInvalid(store.apply('s', [{ put: 'k', value }], { token: 1n }), kind, l)
        }
        assert.deepEqual(await snapshot(), before)
        // The limit itself, an empty value, a Uint8Array view with an offset, and text all work.
        await store.put('s', 'big', Buffer.alloc(1024 * 1024, 7), { token: 1n })
        assert.equal((await store.get('s', 'big')).value.length, 1024 * 1024)
        await store.put('s', 'empty', new Uint8Array(0), { token: 1n })
        assert.equal((await store.get('s', 'empty')).value.length, 0)
        const backing = Buffer.from('..view..')
        await store.put('s', 'view', new Uint8Array(backing.buffer, backing.byteOffset + 2, 4), { token: 1n })
        assert.equal((await store.get('s', 'view')).value.toString(), 'view')
        await store.put('s', 'text', 'zürich', { token: 1n })
        assert.deepEqual((await store.get('s', 'text')).value, Buffer.from('zürich'))
      } finally {
        await store.close()
      }
    })

    test('bad options objects, TTLs, timeouts, limits and batches', async () => {
      const { store, snapshot, before } = await fixture()
      try {
        for (const [options, kind] of [
          [undefined, T],
          [null, T],
          ['1', T],
          [1n, T],
          [{}, T],
          [{ token: 1n, expected_version: 1n }, T],
          [{ token: 1n, seq: undefined, Seq: 1n }, T],
          [{ token: 1n, holder: 42 }, T],
          [{ token: 1n, holder: null }, T],
        ]) {
          await rejectsInvalid(store.put('s', 'k', 'v', options), kind, `put options ${show(options)}`)
        }
        await rejectsInvalid(store.get('s', 'k', null), T, 'get options null')
        await rejectsInvalid(store.get('s', 'k', { tokn: 1n }), T, 'get options typo')
        await rejectsInvalid(store.claim('s', { token: 1n, expectedVersion: 1n }), T, 'claim takes no expectedVersion')

        for (const [ttlMs, kind] of [
          [undefined, T],
          [null, T],
          ['1000', T],
          [0, R],
          [-1, R],
          [1.5, R],
          [NaN, R],
          [Infinity, R],
          [366 * 24 * 3600 * 1000 + 1, R],
          [2 ** 53, R],
          [-1n, R],
        ]) {
          const l = `ttlMs ${show(ttlMs)}`
          await rejectsInvalid(store.acquire('t', { holder: 'A', ttlMs }), kind, l)
          await rejectsInvalid(store.acquireWait('t', { holder: 'A', ttlMs, timeoutMs: 10 }), kind, l)
          await rejectsInvalid(store.renew({ scope: 's', token: 1n }, { ttlMs }), kind, l)
          await rejectsInvalid(store.lease('t', { holder: 'A', ttlMs }), kind, l)
        }
        for (const [timeoutMs, kind] of [[undefined, T], [-1, R], [0.5, R], ['10', T]]) {
          await rejectsInvalid(store.acquireWait('t', { holder: 'A', ttlMs: 1000, timeoutMs }), kind, `timeoutMs ${show(timeoutMs)}`)
        }
        await rejectsInvalid(store.acquire('t', { holder: 'A', ttlMs: 1000, ttl: 5 }), T, 'unknown acquire option')
        await rejectsInvalid(store.renew({ scope: 's', token: 1n }), T, 'renew without any ttl')
        await rejectsInvalid(store.renew(null, { ttlMs: 100 }), T, 'renew(null)')
        await rejectsInvalid(store.release(undefined), T, 'release(undefined)')
        await rejectsInvalid(store.release('s'), T, 'release(string)')
        await rejectsInvalid(store.release({ token: 1n }), T, 'release without scope')
        await rejectsInvalid(store.release({ scope: 's' }), T, 'release without token')

        for (const [limit, kind] of [[0, R], [1001, R], [-1, R], [1.5, R], ['10', T], [null, T]]) {
          await rejectsInvalid(store.list('s', { limit }), kind, `limit ${show(limit)}`)
        }
        await rejectsInvalid(store.list('s', { after: 'k', limt: 5 }), T, 'list option typo')

        for (const [ops, kind] of [
          [undefined, T],
          [null, T],
          [{ put: 'k', value: 'v' }, T],
          ['ops', T],
          [[], R],
          [[null], T],
          [[42], T],
          [[{}], T],
          [[{ put: 'k' }], T],
          [[{ put: 'k', delete: 'k', value: 'v' }], T],
          [[{ delete: 'k', value: 'v' }], T],
          [[{ put: 'k', value: 'v', expected: 1n }], T],
          [[{ put: 'a', value: 'v' }, { put: '', value: 'v' }], R],
          [Array.from({ length: 1001 }, (_, i) => ({ put: `k${i}`, value: 'v' })), R],
        ]) {
          await rejectsInvalid(store.apply('s', ops, { token: 1n }), kind, `ops ${show(ops)?.slice(0, 40)}`)
        }
        for (const [op, kind] of [
          [undefined, T],
          [null, T],
          ['op', T],
          [[{ put: 'k', value: 'v' }], T],
          [{}, T],
          [{ put: 'k' }, T],
          [{ put: 'k', delete: 'k', value: 'v' }, T],
          [{ delete: 'k', value: 'v' }, T],
          [{ put: 'k', value: 'v', expected: 1n }, T],
          [{ put: '', value: 'v' }, R],
          [{ put: 'k', value: 42 }, T],
        ]) {
          await rejectsInvalid(store.execute('s', op, { token: 1n }), kind, `execute op ${show(op)}`)
        }
        for (const options of [undefined, null, {}, { token: 1n, expectedVersion: 1n }]) {
          await rejectsInvalid(store.execute('s', { put: 'k', value: 'v' }, options), T, `execute options ${show(options)}`)
        }
        for (const [ms, kind] of [[-1, R], [0.5, R], [undefined, T], ['5', T]]) {
          await rejectsInvalid(store.advanceClock(ms), kind, `advanceClock ${show(ms)}`)
        }
        assert.deepEqual(await snapshot(), before)
      } finally {
        await store.close()
      }
    })

    test('withLease and lease refuse bad arguments without acquiring', async () => {
      const { store, snapshot, before } = await fixture()
      try {
        for (const fn of [undefined, null, 42, 'fn', {}]) {
          await rejectsInvalid(store.withLease('t', { holder: 'A', ttlMs: 1000 }, fn), T, `withLease fn ${show(fn)}`)
        }
        await rejectsInvalid(store.withLease('', { holder: 'A', ttlMs: 1000 }, async () => {}), R, 'withLease scope')
        await rejectsInvalid(store.lease('t', { holder: 'A', ttlMs: 1000, timeout: 5 }), T, 'lease option typo')
        assert.equal((await store.status('t')).counter, 0n)
        assert.deepEqual(await snapshot(), before)
      } finally {
        await store.close()
      }
    })

    test('keepAlive refuses anything but a lease as acquire returns it, keeping nothing alive', async () => {
      const { store, lease, snapshot, before } = await fixture()
      try {
        const held = await store.lease('t', { holder: 'A', ttlMs: 1000 })
        for (const [bad, kind] of [
          [undefined, T],
          [null, T],
          ['s', T],
          [1n, T],
          [{}, T],
          [{ scope: 's', token: lease.token }, T],
          [held, T], // no remainingMs: it is already kept alive
          [{ ...lease, holder: 42 }, T],
          [{ ...lease, token: 0n }, R],
          [{ ...lease, token: 1.5 }, R],
          [{ ...lease, ttlMs: '1000' }, T],
          [{ ...lease, ttlMs: -1 }, R],
          [{ ...lease, remainingMs: undefined }, T],
          [{ ...lease, remainingMs: 0.5 }, R],
          [{ ...lease, expiresAt: lease.expiresAt.getTime() }, T],
          [{ ...lease, expiresAt: lease.expiresAt.toISOString() }, T],
          [{ ...lease, expiresAt: new Date(NaN) }, R],
        ]) {
          await rejectsInvalid((async () => store.keepAlive(bad))(), kind, `keepAlive ${show(bad)}`)
        }
        assert.equal(await held.release(), true)
        const { metrics, ...now } = await snapshot()
        const { metrics: was, ...then } = before
        assert.deepEqual(now, then)
        // Beside the lease on 't' (acquired, maybe renewed, released), nothing.
        assert.deepEqual({ ...metrics, renewals: was.renewals }, {
          ...was,
          tokensIssued: was.tokensIssued + 1n,
          leasesAcquired: was.leasesAcquired + 1n,
          releases: was.releases + 1n,
        })
      } finally {
        await store.close()
      }
    })
  })
}

describe('outside a store', () => {
  test('open refuses bad URLs with INVALID_ARGUMENT', async () => {
    for (const [url, kind] of [
      [undefined, T],
      [null, T],
      [42, T],
      [{ url: 'memory:' }, T],
      ['', R],
      ['memory', R],
      ['mem:', R],
      ['memory:?clock=fast', R],
      ['memory:?strict=true&strict=true', R],
      ['memory:\ud800', R],
      ['sqlite:', R],
      ['postgres://localhost/x?schema=Not-An-Identifier', R],
      ['postgres://localhost/x?pool_size=0', R],
      ['redis://localhost:6379', R],
      ['memory:?' + 'x'.repeat(5000), R],
    ]) {
      await rejectsInvalid(open(url), kind, `open ${show(url)}`)
    }
  })

  test('open refuses sqlite://rel.db and names sqlite:rel.db and sqlite:/rel.db', async () => {
    // SQLAlchemy's habit: taken as a path, sqlite://rel.db would be /rel.db.
    for (const url of ['sqlite://rel.db', 'sqlite:///rel.db']) {
      await assert.rejects(open(url), (err) => {
        assert.equal(err.code, 'INVALID_ARGUMENT')
        assert.match(err.message, /sqlite:rel\.db/)
        assert.match(err.message, /sqlite:\/rel\.db/)
        return true
      })
    }
  })

  test('open of a file it cannot use is BACKEND, not a crash', async () => {
    await assert.rejects(open('sqlite:/nonexistent-dir/sub/fence.db'), { code: 'BACKEND', name: 'BackendError' })
  })

  test('parseToken takes canonical decimal text only', () => {
    for (const [text, kind] of [
      [undefined, T],
      [null, T],
      [42, T],
      [42n, T],
      ['', R],
      ['007', R],
      ['-1', R],
      ['1e3', R],
      ['9223372036854775808', R],
      ['\ud800', R],
    ]) {
      assert.throws(() => parseToken(text), (e) => e instanceof kind && e.code === 'INVALID_ARGUMENT', show(text))
    }
    assert.equal(parseToken('9223372036854775807'), MAX)
  })

  test('Store and HeldLease cannot be constructed by hand', () => {
    assert.throws(() => new Store(), { code: 'INVALID_ARGUMENT', name: 'TypeError' })
    assert.throws(() => new HeldLease(), { code: 'INVALID_ARGUMENT', name: 'TypeError' })
  })

  test('a throwing getter on an options object propagates its own error and changes nothing', async () => {
    const store = await open('memory:')
    try {
      const boom = new Error('boom from getter')
      const options = {
        get token() {
          throw boom
        },
      }
      await assert.rejects(store.put('s', 'k', 'v', options), (e) => e === boom)
      assert.equal(await store.fenceOf('s'), 0n)
      assert.equal(await store.get('s', 'k'), null)
    } finally {
      await store.close()
    }
  })
})

test('a batch over the limit is refused having read one operation past the limit, not every one', async () => {
  const store = await open('memory:')
  /** An array of `n` deletes, each element read through a getter that counts. */
  const counted = (n) => {
    const seen = { reads: 0 }
    const ops = []
    for (let i = 0; i < n; i += 1) {
      Object.defineProperty(ops, i, {
        get() {
          seen.reads += 1
          return { delete: 'k' }
        },
        enumerable: true,
      })
    }
    return [ops, seen]
  }
  try {
    const [ops, seen] = counted(5000)
    await rejectsInvalid(store.apply('s', ops, { token: 1n }), R, 'apply 5000')
    assert.equal(seen.reads, 1001)
    const held = await store.lease('h', { holder: 'a', ttlMs: 60_000 })
    const [heldOps, heldSeen] = counted(5000)
    await rejectsInvalid(held.apply(heldOps), R, 'held apply 5000')
    assert.equal(heldSeen.reads, 1001)
    await held.release()
    assert.equal(await store.fenceOf('s'), 0n)
  } finally {
    await store.close()
  }
})
