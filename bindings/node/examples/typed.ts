// A typed example, checked with `tsc --noEmit` (npm run typecheck). It is
// also what a TypeScript user writes: the types come with the package.

import {
  open,
  parseToken,
  MAX_TOKEN,
  FencingError,
  StaleTokenError,
  LeaseLostError,
  fromSqliteError,
  errorFromSqliteMessage,
  type Entry,
  type Fence,
  type Lease,
  type Receipt,
  type MetricsSnapshot,
  type HeldLease,
  type Holding,
  type LeaseWatch,
  openObjects,
  type Objects,
  type StoredObject,
} from 'fencing-tokens'

export async function report(url: string): Promise<string | null> {
  const store = await open(url)
  const lease: Lease = await store.acquire('report', { holder: 'worker-a', ttlMs: 30_000 })
  const token: bigint = lease.token
  const expires: Date = lease.expiresAt

  const r: Receipt = await store.put('report', 'body', Buffer.from('...'), { token, seq: 1n, holder: lease.holder })
  const version: bigint = r.version
  await store.put('report', 'body', 'text works too', { token: '1', expectedVersion: version })
  await store.apply('report', [{ put: 'a', value: new Uint8Array([1]) }, { delete: 'b' }], { token })
  await store.claim('report', { token })
  const hot: Fence = store.fence('report', token)
  const fast: Receipt = hot.putSync('body', 'fast')
  const fastAwaited: bigint = (await hot.put('body', Buffer.from('faster'))).version
  console.log(hot.scope, hot.token, fast.version, fastAwaited)

  const entry: Entry | null = await store.get('report', 'body')
  const fence: bigint = await store.fenceOf('report')
  const renewed: Lease = await store.renew(lease, { ttlMs: 30_000 })
  const released: boolean = await store.release(renewed)

  const watch: LeaseWatch = store.watch('report', { signal: AbortSignal.timeout(60_000) })
  for await (const h of watch) {
    const holding: Holding = h
    const holder: string | null = holding.lease === null ? null : holding.lease.holder
    console.log(holding.scope, holder, holding.lease?.token)
    if (holding.lease === null) break
  }

  const kind: string = store.backendKind
  const one: Receipt = await store.execute('report', { put: 'body', value: 'one op' }, { token })
  const kept: HeldLease = store.keepAlive(await store.acquire('kept', { holder: 'w', ttlMs: 1000 }))
  const keptReleased: boolean = await kept.release()
  console.log(kind, one.version, keptReleased)

  const out: number = await store.withLease('report', { holder: 'w', ttlMs: 1000, timeoutMs: 5000 }, async (held: HeldLease) => {
    held.check()
    const signal: AbortSignal = held.signal
    await store.put('report', 'body', 'x', { token: held.token })
    return signal.aborted ? 0 : 1
  })

  try {
    await store.put('report', 'body', 'old', { token: 1n })
  } catch (e) {
    if (e instanceof StaleTokenError) {
      const presented: bigint = e.presented
      const current: bigint = e.current
      console.log(`stale: ${presented} < ${current}`)
    } else if (e instanceof LeaseLostError) {
      const holder: string | null = e.currentHolder
      console.log(holder)
    } else if (e instanceof FencingError && e.code === 'BACKEND') {
      throw e
    }
  }

  const m: MetricsSnapshot = store.metrics()
  const stale: bigint = m.staleRejections
  const max: bigint = MAX_TOKEN
  const parsed: bigint = parseToken('42')
  console.log(expires, fence, released, out, stale, max, parsed, store.metricsText().length)

  // @ts-expect-error: tokens come out as bigint, not number
  const asNumber: number = lease.token
  // @ts-expect-error: a write needs a token
  await store.put('report', 'body', 'x', {})
  // @ts-expect-error: a fence's writes take a key and a value, no options
  store.fence('report', token).putSync('body', 'x', { token })
  // @ts-expect-error: values are bytes or text
  await store.put('report', 'body', 42, { token })
  // @ts-expect-error: options are camelCase
  await store.put('report', 'body', 'x', { token, expected_version: 1n })
  // @ts-expect-error: a token is not a boolean
  await store.claim('report', { token: true })
  // @ts-expect-error: execute takes one op, not a batch
  await store.execute('report', [{ delete: 'b' }], { token })
  // @ts-expect-error: keepAlive takes a lease as acquire returns it
  store.keepAlive({ scope: 'report', token })
  // @ts-expect-error: the backend is the store's: read-only
  store.backendKind = 'sqlite'
  // @ts-expect-error: the native handle's internals are not the Store's
  console.log(store.inline, store.putSyncFunction)
  console.log(asNumber)

  // An SQLite driver's error from the fencing_check view, typed (docs/sqlite.md).
  const fromDriver: FencingError | null = fromSqliteError(new Error('STALE_TOKEN: ...'))
  const fromText: FencingError | null = errorFromSqliteMessage('SEQUENCE_OUT_OF_ORDER: ...')
  console.log(fromDriver instanceof StaleTokenError, fromText?.code)
  // @ts-expect-error: the message is a string
  errorFromSqliteMessage(42)

  // Fenced objects: the store's put, delete and get without the scope.
  const objects: Objects = await openObjects('memory:')
  const written: Receipt = await objects.put('reports/7.csv', Buffer.from('a,b\n'), { token, expectedVersion: 0n })
  const object: StoredObject | null = await objects.get('reports/7.csv')
  const objectToken: bigint | undefined = object?.token
  const objectBytes: Buffer | undefined = object?.value
  await objects.delete('reports/7.csv', { token, holder: 'worker-a', expectedVersion: written.version })
  console.log(objectToken, objectBytes, objects.closed)
  // @ts-expect-error: an object write needs a token
  await objects.put('reports/7.csv', 'x', {})
  // @ts-expect-error: an object path is not a scope and a key: no scope argument
  await objects.put('reports', '7.csv', 'x', { token })
  // @ts-expect-error: versions come out as bigint
  const objectVersion: number | undefined = object?.version
  console.log(objectVersion)
  await objects.close()

  await store.close()
  return entry === null ? null : entry.value.toString('utf8')
}
