'use strict'
// The package's surface: error classes and their details, ESM import, the
// hand-written types against the runtime, metrics against their Prometheus
// text, and versions that agree.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const fencing = require('fencing-tokens')
const { open, Store, FencingError } = fencing

const ROOT = path.resolve(__dirname, '..')

describe('errors', () => {
  test('each code is its own class, with details, and the caller in its stack', async () => {
    // Jumps unbounded: TOKEN_EXHAUSTED needs a counter at the largest token.
    const store = await open('memory:?clock=manual&jumps=unbounded')
    try {
      const lease = await store.acquire('s', { holder: 'A', ttlMs: 1000 })
      await store.put('s', 'k', 'v', { token: lease.token, seq: 5n })
      const cases = [
        ['STALE_TOKEN', 'StaleTokenError', async () => {
          await store.put('s', 'k', 'v', { token: 1n, seq: 9n })
          await store.advanceClock(1000)
          await store.acquire('s', { holder: 'B', ttlMs: 1000 })
          await store.put('s', 'k', 'x', { token: 1n })
        }, { scope: 's', presented: 1n, current: 2n }],
        ['SEQUENCE_OUT_OF_ORDER', 'SequenceOutOfOrderError', async () => {
          await store.put('s', 'k', 'x', { token: 2n, seq: 1n })
          await store.put('s', 'k', 'x', { token: 2n, seq: 1n })
        }, { presented: 1n, last: 1n }],
        ['VERSION_MISMATCH', 'VersionMismatchError', async () => {
          await store.put('s', 'k', 'x', { token: 2n, expectedVersion: 0n })
        }, { expected: 0n, actual: 3n }],
        ['NOT_FOUND', 'NotFoundError', async () => {
          await store.delete('s', 'missing', { token: 2n })
        }, { scope: 's', key: 'missing' }],
        ['LEASE_HELD', 'LeaseHeldError', async () => {
          await store.acquire('s', { holder: 'C', ttlMs: 1000 })
        }, { scope: 's', holder: 'B', token: 2n, remainingMs: 1000 }],
        ['LEASE_LOST', 'LeaseLostError', async () => {
          await store.renew({ scope: 's', token: 1n }, { ttlMs: 1000 })
        }, { scope: 's', currentToken: 2n, currentHolder: 'B' }],
        ['TIMEOUT', 'TimeoutError', async () => {
          await store.acquireWait('s', { holder: 'C', ttlMs: 1000, timeoutMs: 1 })
        }, {}],
        ['TOKEN_EXHAUSTED', 'TokenExhaustedError', async () => {
          await store.advanceCounter('x', fencing.MAX_TOKEN)
          await store.nextToken('x')
        }, {}],
        ['INVALID_ARGUMENT', 'RangeError', async () => {
          await store.put('s', '', 'v', { token: 2n })
        }, {}],
        ['INVALID_ARGUMENT', 'TypeError', async () => {
          await store.put('s', 'k', 42, { token: 2n })
        }, {}],
      ]
      for (const [code, name, run, details] of cases) {
        let caught
        try {
          await run()
        } catch (e) {
          caught = e
        }
        assert.ok(caught, `${code}: expected a rejection`)
        assert.equal(caught.code, code)
        assert.equal(caught.name, name)
        assert.ok(caught instanceof Error)
        assert.ok(caught instanceof FencingError, code)
        const cls = name.endsWith('Error') && fencing[name] ? fencing[name] : fencing.InvalidArgumentError
        assert.ok(caught instanceof cls, `${code} instanceof ${cls.name}`)
        for (const [k, v] of Object.entries(details)) assert.equal(caught[k], v, `${code}.${k}`)
        assert.match(caught.stack, /api\.test\.js/, `${code}: the stack names the caller`)
        // Exactly one class matches each error.
        const classes = Object.values(fencing).filter((v) => typeof v === 'function' && v.prototype instanceof FencingError)
        assert.equal(classes.filter((c) => caught instanceof c).length, 1, `${code} matches one class`)
      }
      await store.close()
      await assert.rejects(store.get('s', 'k'), { code: 'CLOSED', name: 'ClosedError' })
      await assert.rejects(open('sqlite:/proc/definitely/not/here.db'), fencing.BackendError)
    } finally {
      await store.close()
    }
  })

  test('errors that are not the store’s are not FencingErrors', () => {
    assert.equal(new Error('x') instanceof FencingError, false)
    const look = Object.assign(new TypeError('x'), { code: 'INVALID_ARGUMENT' })
    assert.equal(look instanceof fencing.InvalidArgumentError, false, 'a lookalike is not branded')
    assert.equal(look instanceof FencingError, false)
    assert.equal(null instanceof FencingError, false)
  })
})

test('ESM import gives the same module', async () => {
  const esm = await import('fencing-tokens')
  assert.equal(esm.open, fencing.open)
  assert.equal(esm.StaleTokenError, fencing.StaleTokenError)
  assert.equal(esm.MAX_TOKEN, 9223372036854775807n)
  assert.equal(esm.default, fencing)
  // fencing.mjs re-exports what Node reads from fencing.js's exports literal:
  // every name, none lost to an expression there.
  const named = Object.keys(esm).filter((k) => k !== 'default').sort()
  assert.deepEqual(named, Object.keys(fencing).sort())
  for (const name of named) assert.equal(esm[name], fencing[name], name)
  const store = await esm.open('memory:')
  assert.equal(await store.nextToken('s'), 1n)
  await store.close()
})

test('fencing.d.ts declares exactly the runtime API', () => {
  // Its index.d.ts is beside it (the installed package's, in a release run).
  const dtsFile = fs.realpathSync(path.join(ROOT, 'fencing.d.ts'))
  const dts = fs.readFileSync(dtsFile, 'utf8')
  const members = (cls, text = dts) => {
    const body = text.match(new RegExp(`export declare class ${cls} \\{([\\s\\S]*?)\\n\\}`))[1]
    return [...body.matchAll(/^  (?:static |readonly |get )?(\w+)[(<:]/gm)].map((m) => m[1]).filter((n) => n !== 'constructor')
  }
  // Store's own members, and those it takes from NativeStore (index.d.ts).
  const derived = dts.match(/^export interface Store\s+extends Omit<\s*NativeStore,\s*([^>]*)>/m)
  const omitted = [...derived[1].matchAll(/'(\w+)'/g)].map((m) => m[1])
  const nativeMembers = members('NativeStore', fs.readFileSync(path.join(path.dirname(dtsFile), 'index.d.ts'), 'utf8'))
  for (const n of omitted) assert.ok(nativeMembers.includes(n), `Omit<NativeStore, '${n}'>: NativeStore has no ${n}`)
  const runtime = (cls) => {
    const names = new Set(Object.getOwnPropertyNames(cls.prototype).filter((n) => n !== 'constructor'))
    for (const n of Object.getOwnPropertyNames(cls)) if (!['length', 'name', 'prototype'].includes(n)) names.add(n)
    return names
  }
  const storeDeclared = new Set([...members('Store'), ...nativeMembers.filter((n) => !omitted.includes(n))])
  assert.deepEqual(storeDeclared, runtime(Store))
  const heldDeclared = new Set(members('HeldLease'))
  const heldRuntime = runtime(fencing.HeldLease)
  for (const field of ['scope', 'holder', 'token', 'ttlMs']) heldRuntime.add(field) // instance fields
  assert.deepEqual(heldDeclared, heldRuntime)
  const fenceRuntime = runtime(fencing.Fence)
  for (const field of ['scope', 'token']) fenceRuntime.add(field) // instance fields
  assert.deepEqual(new Set(members('Fence')), fenceRuntime)
  assert.deepEqual(new Set(members('Objects')), runtime(fencing.Objects))
  const exported = new Set([...dts.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]))
  assert.deepEqual(exported, new Set(Object.keys(fencing)))
})

test('metrics() has one field for every Prometheus line, and counts as it says', async () => {
  const store = await open('memory:')
  try {
    await store.put('s', 'k', 'v', { token: 2n })
    await assert.rejects(store.put('s', 'k', 'v', { token: 1n, holder: 'old' }))
    const m = store.metrics()
    const text = store.metricsText()
    // Every sample is labelled with the store; the call-duration histogram
    // has no field of its own in metrics().
    const label = `{store="${store.location}"}`
    const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#') &&
      !l.startsWith('fencing_call_duration_seconds'))
    const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
    const fromText = Object.fromEntries(lines.map((l) => {
      const [series, value] = l.split(' ')
      assert.ok(series.endsWith(label), series)
      const metric = series.slice(0, -label.length)
      if (metric === 'fencing_longest_pause_seconds') return ['longestPauseMs', BigInt(Number(value) * 1000)]
      return [camel(metric.replace(/^fencing_/, '').replace(/_total$/, '')), BigInt(value)]
    }))
    const { rejections, ...counters } = m
    assert.deepEqual(counters, fromText)
    assert.match(text, /^fencing_call_duration_seconds_count\{store="memory:",op="put"\} 2$/m)
    assert.equal(m.writesAccepted, 1n)
    assert.equal(m.staleRejections, 1n)
    assert.equal(rejections.length, 1)
    assert.equal(rejections[0].holder, 'old')
    assert.equal(rejections[0].key, 'k')
    assert.ok(rejections[0].at instanceof Date)
    assert.doesNotMatch(text, /"v"|scope=/, 'no values and no per-scope labels')
  } finally {
    await store.close()
  }
})

test('the rest of the API: renew, release, list, apply, delete, status, retire, closed', async () => {
  const store = await open('memory:?clock=manual')
  try {
    const lease = await store.acquire('s', { holder: 'A', ttlMs: 1000 })
    assert.ok(lease.expiresAt instanceof Date)
    await store.advanceClock(400)
    const renewed = await store.renew(lease) // default TTL: the lease's own
    assert.equal(renewed.remainingMs, 1000)
    assert.equal((await store.renew(lease, { ttlMs: 50 })).ttlMs, 50)
    const receipts = await store.apply('s', [
      { put: 'a', value: '1' },
      { put: 'b', value: Buffer.from([0, 255]) },
      { put: 'c', value: '3', expectedVersion: 0n },
      { delete: 'a', expectedVersion: 1n },
    ], { token: lease.token })
    assert.deepEqual(receipts.map((r) => r.version), [1n, 1n, 1n, 0n])
    assert.deepEqual(await store.list('s'), { keys: ['b', 'c'], next: null })
    assert.deepEqual(await store.list('s', { limit: 1 }), { keys: ['b'], next: 'b' })
    assert.deepEqual(await store.list('s', { after: 'b' }), { keys: ['c'], next: null })
    assert.deepEqual((await store.get('s', 'b')).value, Buffer.from([0, 255]))
    assert.deepEqual({ ...(await store.delete('s', 'b', { token: lease.token })) }, { version: 0n, token: 1n })
    assert.equal(await store.get('s', 'b'), null)
    assert.equal((await store.status('s')).entries, 1n)
    await assert.rejects(store.retire('s'), { code: 'LEASE_HELD' })
    assert.equal(await store.release(lease), true)
    assert.equal(await store.release(lease), false)
    await store.delete('s', 'c', { token: lease.token })
    assert.equal(await store.retire('s'), true)
    assert.equal(await store.retire('s'), false)
    assert.equal(await store.nextToken('s'), 2n, 'the scope created again starts above its retired life')
    assert.equal(store.closed, false)
  } finally {
    await store.close()
  }
  assert.equal(store.closed, true)
  await store.close() // closing twice is harmless
})

test('versions agree: package.json, Cargo workspace', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  const cargo = fs.readFileSync(path.join(ROOT, '../../Cargo.toml'), 'utf8')
  const workspaceVersion = cargo.match(/\[workspace\.package\][^[]*?\nversion = "([^"]+)"/)[1]
  assert.equal(pkg.version, workspaceVersion)
})

test('failover: every earlier token is stale, new ones start above the base', async () => {
  const store = await open('memory:')
  try {
    const t = await store.nextToken('s')
    await store.put('s', 'k', 'v', { token: t })
    // The store's ceiling (1 + 2^32 after token 1) is below its jump limit
    // (2^48 before any step): the base is 2^40 above the limit.
    const base = (1n << 48n) + (1n << 40n)
    assert.equal(await store.failover(), base)
    await assert.rejects(store.put('s', 'k', 'late', { token: t }), { code: 'STALE_TOKEN' })
    assert.equal(await store.nextToken('s'), base + 1n)
    assert.equal(await store.fenceOf('never-seen'), base)
  } finally {
    await store.close()
  }
})

test('a store says where it is: a relative SQLite path as this process resolved it', async () => {
  // Two processes in two directories that open sqlite:fencing.db open two
  // stores; the location shows which file this one is.
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'fencing-location-'))
  const cwd = process.cwd()
  process.chdir(dir)
  let store
  try {
    store = await open('sqlite:fencing.db')
  } finally {
    process.chdir(cwd)
  }
  const here = path.join(fs.realpathSync(dir), 'fencing.db')
  try {
    assert.equal(store.location, `sqlite:${here}`)
    assert.equal(String(store), `[fencing.Store sqlite:${here}]`)
  } finally {
    await store.close()
  }
  assert.equal(String(store), `[fencing.Store sqlite:${here} closed]`, 'still known after close')
  const memory = await open('memory:')
  assert.equal(memory.location, 'memory:')
  await memory.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

test('acquireWait gives up on its signal, and a lease it gets later is released at once', async () => {
  const store = await open('memory:')
  try {
    const first = await store.acquire('quit', { holder: 'first', ttlMs: 300 })
    const controller = new AbortController()
    const quitting = store.acquireWait('quit', { holder: 'quitter', ttlMs: 60_000, timeoutMs: 5_000, signal: controller.signal })
    setTimeout(() => controller.abort(new Error('gave up')), 50)
    await assert.rejects(quitting, /gave up/)
    // The native wait stopped with the promise: once the first lease
    // expires, the quitter takes no token (before, its wait ran on to take
    // the lease, and let it go).
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal((await store.status('quit')).counter, first.token)
    const next = await store.acquireWait('quit', { holder: 'next', ttlMs: 60_000, timeoutMs: 5_000 })
    assert.equal(next.token, first.token + 1n)
    assert.equal((await store.status('quit')).lease.holder, 'next')
    const aborted = AbortSignal.abort()
    await assert.rejects(store.acquireWait('quit', { holder: 'x', ttlMs: 1000, timeoutMs: 10, signal: aborted }), { name: 'AbortError' })
    await assert.rejects(store.acquireWait('quit', { holder: 'x', ttlMs: 1000, timeoutMs: 10, signal: 'no' }), { code: 'INVALID_ARGUMENT' })
  } finally {
    await store.close()
  }
})

test('Symbol.asyncDispose: a store closes and a held lease releases', async () => {
  const store = await open('memory:')
  const lease = await store.lease('d', { holder: 'a', ttlMs: 60_000 })
  await lease[Symbol.asyncDispose]()
  assert.equal((await store.status('d')).lease, null, 'the lease was released')
  await store[Symbol.asyncDispose]()
  assert.equal(store.closed, true)
})

test('watchRejections yields each rejection recorded after it began, and its signal ends it', async () => {
  const store = await open('memory:')
  try {
    const stale = async (scope) => {
      await store.advanceCounter(scope, 2n)
      await store.put(scope, 'k', 'v', { token: 2n })
      await assert.rejects(store.put(scope, 'k', 'SECRET', { token: 1n }), { code: 'STALE_TOKEN' })
    }
    await stale('before') // recorded before the watch: not yielded
    const controller = new AbortController()
    const watch = await store.watchRejections({ signal: controller.signal })
    setTimeout(() => stale('a'), 20)
    const first = await watch.next()
    assert.equal(first.done, false)
    assert.equal(first.value.scope, 'a')
    assert.equal(first.value.presented, 1n)
    assert.equal(first.value.current, 2n)
    assert.ok(!JSON.stringify(first.value).includes('SECRET'))
    await stale('b')
    const seen = []
    for await (const r of watch) {
      seen.push(r.scope)
      break
    }
    assert.deepEqual(seen, ['b'])
    // A break returned the watch: it is done, as an iterator is.
    assert.deepEqual(await watch.next(), { value: undefined, done: true })
    // return() ends a step that waits (nothing pending), and the watch.
    const returned = await store.watchRejections()
    const step = returned.next()
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepEqual(await returned.return(), { value: undefined, done: true })
    assert.deepEqual(await step, { value: undefined, done: true })
    // Nothing pending: the signal ends the step that waits.
    const signalled = await store.watchRejections({ signal: controller.signal })
    const waiting = signalled.next()
    controller.abort(new Error('enough'))
    await assert.rejects(waiting, /enough/)
    await assert.rejects(store.watchRejections({ scope: '' }), { code: 'INVALID_ARGUMENT' })
    await assert.rejects(store.watchRejections({ signal: 'no' }), { code: 'INVALID_ARGUMENT' })
  } finally {
    await store.close()
  }
})
