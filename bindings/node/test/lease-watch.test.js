'use strict'
// store.watch(scope): who holds a scope's lease, live (docs/semantics.md,
// "Watching a lease"): the lease as it is, then each change (acquired,
// renewed, released, expired), in order, seen from another handle than the
// one that makes them; return() (a break) and a signal end a step's wait.
// Nothing here times a call: BOUND only turns a hang into a failure.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')
const { open, LeaseWatch, InvalidArgumentError, ClosedError } = require('fencing-tokens')
const { tempDir, sqliteUrl, postgresOrSkip, freshSchema } = require('./helpers')

const TTL = 120_000 // far longer than any wait: only a wake-up (or a read) shows a change
const BOUND = 60_000

const dir = tempDir()
const pg = postgresOrSkip(test)

/** Two handles on one store: the one that changes the lease, the one that watches. */
const pairs = [
  ['memory', async () => {
    const store = await open('memory:') // lives in its handle: one for both
    return [store, store]
  }],
  ['sqlite', async () => {
    const url = sqliteUrl(dir)
    return [await open(url), await open(url)]
  }],
]
if (pg !== null) {
  pairs.push(['postgres', async () => {
    const url = `${pg}?schema=${freshSchema('watch')}`
    return [await open(url), await open(url)]
  }])
}

/** `promise`, or a failure naming `what` after BOUND. */
async function within(promise, what) {
  let timer
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the watch did not see ${what}`)), BOUND)
  })
  try {
    return await Promise.race([promise, guard])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A change made while the watch waits (its step first let read and fall
 * asleep), and the holding the watch then yields.
 */
async function duringNext(watch, change, what) {
  const step = watch.next()
  await sleep(300)
  const result = await change()
  const { value, done } = await within(step, what)
  assert.equal(done, false, what)
  return [value, result]
}

for (const [name, make] of pairs) {
  test(`${name}: a watch yields the lease, then each change in order`, async () => {
    const [changer, watcher] = await make()
    try {
      const watch = watcher.watch('s')
      assert.ok(watch instanceof LeaseWatch)
      assert.equal(watch.scope, 's')
      assert.equal(watch[Symbol.asyncIterator](), watch)
      assert.deepEqual(await within(watch.next(), 'the start'), { value: { scope: 's', lease: null }, done: false })

      const [seen, a] = await duringNext(watch, () => changer.acquire('s', { holder: 'a', ttlMs: TTL }), 'the acquire')
      assert.equal(seen.scope, 's')
      assert.equal(seen.lease.holder, 'a')
      assert.equal(typeof seen.lease.token, 'bigint')
      assert.equal(seen.lease.token, a.token)
      assert.ok(seen.lease.expiresAt instanceof Date)
      assert.deepEqual(Object.keys(seen.lease).sort(), Object.keys(a).sort(), 'the shape acquire gives')
      assert.equal(JSON.parse(JSON.stringify(seen)).lease.token, a.token.toString())

      const [renewed] = await duringNext(watch, () => changer.renew(a, { ttlMs: TTL }), 'the renewal')
      assert.equal(renewed.lease.token, a.token)
      assert.ok(renewed.lease.expiresAt > seen.lease.expiresAt)

      const [released, wasHeld] = await duringNext(watch, () => changer.release(a), 'the release')
      assert.equal(wasHeld, true)
      assert.equal(released.lease, null)
      assert.equal(JSON.stringify(released), '{"scope":"s","lease":null}')

      const [second, b] = await duringNext(watch, () => changer.acquire('s', { holder: 'b', ttlMs: 300 }), 'the second holder')
      assert.equal(second.lease.holder, 'b')
      assert.equal(second.lease.token, b.token)

      // The expiry, with nobody touching the store; a break ends the watch.
      const after = []
      for await (const h of watch) {
        after.push(h.lease)
        break
      }
      assert.deepEqual(after, [null])
      assert.deepEqual(await watch.next(), { value: undefined, done: true })
    } finally {
      await watcher.close()
      if (changer !== watcher) await changer.close()
    }
  })
}

test('return() ends a step that waits, a signal rejects it, and for await takes the watch as returned', async () => {
  const store = await open('memory:')
  try {
    const watch = store.watch('s')
    assert.equal((await watch.next()).value.lease, null)
    const waiting = watch.next() // nothing changes: it waits
    await sleep(50)
    assert.deepEqual(await watch.return(), { value: undefined, done: true })
    assert.deepEqual(await within(waiting, 'the return'), { value: undefined, done: true })

    const controller = new AbortController()
    const signalled = store.watch('s', { signal: controller.signal })
    assert.equal((await signalled.next()).value.lease, null)
    const step = signalled.next()
    await sleep(50)
    controller.abort(new Error('enough'))
    await assert.rejects(within(step, 'the abort'), /enough/)
    await assert.rejects(signalled.next(), /enough/)

    // `for await` over the watch as returned (no await needed), broken out of
    // while a change is pending: the next watch starts from the lease.
    const lease = await store.acquire('s', { holder: 'a', ttlMs: TTL })
    for await (const h of store.watch('s')) {
      assert.equal(h.lease.token, lease.token)
      break
    }
    const awaited = await store.watch('s') // `await` is harmless: not a thenable
    assert.equal((await awaited.next()).value.lease.token, lease.token)
    await awaited.return()
  } finally {
    await store.close()
  }
})

test('a bad scope, a bad option, an aborted signal and a closed store throw from watch()', async () => {
  const store = await open('memory:')
  const invalid = (kind) => (e) => {
    assert.equal(e.code, 'INVALID_ARGUMENT', e.message)
    assert.ok(e instanceof kind, `${e.constructor.name}: ${e.message}`)
    assert.ok(e instanceof InvalidArgumentError)
    return true
  }
  for (const bad of ['', 'x'.repeat(257), 'é'.repeat(129)]) {
    assert.throws(() => store.watch(bad), invalid(RangeError), JSON.stringify(bad))
  }
  assert.throws(() => store.watch(1), invalid(TypeError))
  assert.throws(() => store.watch(), invalid(TypeError))
  assert.throws(() => store.watch('s', { scope: 's' }), invalid(TypeError))
  assert.throws(() => store.watch('s', 'no'), invalid(TypeError))
  assert.throws(() => store.watch('s', { signal: 'no' }), invalid(TypeError))
  assert.throws(() => store.watch('s', { signal: AbortSignal.abort(new Error('gone')) }), /gone/)
  assert.throws(() => new LeaseWatch(), invalid(TypeError))

  const watch = store.watch('s')
  await store.close()
  await assert.rejects(watch.next(), (e) => e instanceof ClosedError && e.code === 'CLOSED')
  assert.throws(() => store.watch('s'), (e) => e instanceof ClosedError && e.code === 'CLOSED')
})

test('a step begun while another waits never blocks the event loop; each change goes to one step; return() ends both', { timeout: 120_000 }, () => {
  const { spawnSync } = require('node:child_process')
  // In a child process: a blocked event loop would hang this one.
  const script = `
    const { open } = require('fencing-tokens')
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
    const holder = (step) => (step.value.lease === null ? 'none' : step.value.lease.holder)
    open('memory:').then(async (store) => {
      const watch = store.watch('job')
      await watch.next()
      const first = watch.next()
      await sleep(100) // its wait runs off the thread
      const second = watch.next() // takes what is pending, at once: nothing
      await sleep(100)
      console.log('second begun')
      const lease = await store.acquire('job', { holder: 'a', ttlMs: 120000 })
      console.log('one', holder(await Promise.race([first, second])))
      await store.release(lease)
      console.log('both', (await Promise.all([first, second])).map(holder).sort().join(','))
      const other = store.watch('other')
      await other.next()
      const steps = [other.next()]
      await sleep(100)
      steps.push(other.next())
      await sleep(100)
      await other.return()
      console.log('returned', (await Promise.all(steps)).map((s) => s.done).join(','))
      await store.close()
    })`
  const r = spawnSync(process.execPath, ['-e', script], { cwd: __dirname, encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.signal, null, `killed (the event loop froze): ${r.stdout} ${r.stderr}`)
  assert.equal(r.stdout, 'second begun\none a\nboth a,none\nreturned true,true\n', r.stderr)
  assert.equal(r.status, 0, r.stderr)
})
