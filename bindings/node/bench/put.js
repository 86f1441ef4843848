'use strict'
// Fenced put on memory: from Node, beside a pure-JavaScript implementation
// of the same check-and-set (a Map per scope, bigint tokens, the value
// copied), measured in the same run. Prints the median of several rounds,
// the ratio and the per-call overhead.
//
//   node bench/put.js            # the real run (a few seconds)
//   node bench/put.js --smoke    # every path once, tiny: no timing claims
//   node bench/put.js --quick    # 5 rounds of 50,000 calls
//
// With FENCING_BENCH_OUT=FILE, the lines are also appended to FILE as JSON
// (the format of benches/src/report.rs), for scripts/bench's report.
//
// Each operation is awaited, as a caller would; the pure-JS baseline is an
// async function too, so both pay for one await per call.

const { performance } = require('node:perf_hooks')
const { open } = require('fencing-tokens')
const native = require('../index.js')

const smoke = process.argv.includes('--smoke')
const quick = process.argv.includes('--quick')
const CALLS = smoke ? 200 : quick ? 50_000 : 200_000
const ROUNDS = smoke ? 1 : quick ? 5 : 9
const KEYS = Array.from({ length: 16 }, (_, i) => `key-${i}`)
const VALUE = Buffer.alloc(64, 0x61)
const MAX_TOKEN = 2n ** 63n - 1n

// ----- the baseline: the same check-and-set in plain JavaScript -----

class StaleToken extends Error {}

function jsStore() {
  const put = jsStoreSync()
  return async function asyncPut(scope, key, value, token) {
    return put(scope, key, value, token)
  }
}

function jsStoreSync() {
  const scopes = new Map()
  return function put(scope, key, value, token) {
    if (typeof token !== 'bigint' || token < 1n || token > MAX_TOKEN) throw new RangeError('bad token')
    let s = scopes.get(scope)
    if (s === undefined) {
      s = { fence: 0n, entries: new Map() }
      scopes.set(scope, s)
    }
    if (token < s.fence) throw new StaleToken(`presented ${token}, fence ${s.fence}`)
    s.fence = token
    const old = s.entries.get(key)
    const version = old === undefined ? 1n : old.version + 1n
    s.entries.set(key, { value: Buffer.from(value), version, token })
    return { version, token }
  }
}

// ----- the contenders -----

async function fencedPut() {
  const store = await open('memory:')
  const lease = await store.acquire('bench', { holder: 'bench', ttlMs: 600_000 })
  const options = { token: lease.token }
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) await store.put('bench', KEYS[i & 15], VALUE, options)
    },
    check: async () => (await store.get('bench', KEYS[0])).version,
  }
}

async function nativePut() {
  // The addon without the package's error-mapping wrapper: what the wrapper costs.
  const store = await native.open('memory:')
  const lease = await store.acquire('bench', { holder: 'bench', ttlMs: 600_000 })
  const options = { token: lease.token }
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) await store.put('bench', KEYS[i & 15], VALUE, options)
    },
    check: async () => (await store.get('bench', KEYS[0])).version,
  }
}

async function fencedPutSync() {
  // putSync: the same write, returned without a Promise.
  const store = await open('memory:')
  const lease = await store.acquire('bench', { holder: 'bench', ttlMs: 600_000 })
  const options = { token: lease.token }
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) store.putSync('bench', KEYS[i & 15], VALUE, options)
    },
    check: async () => (await store.get('bench', KEYS[0])).version,
  }
}

async function fencePut() {
  // The hot path's shape: store.fence(scope, token) once, then put(key, value).
  const store = await open('memory:')
  const lease = await store.acquire('bench', { holder: 'bench', ttlMs: 600_000 })
  const fence = store.fence('bench', lease.token)
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) await fence.put(KEYS[i & 15], VALUE)
    },
    check: async () => (await store.get('bench', KEYS[0])).version,
  }
}

async function fencePutSync() {
  const store = await open('memory:')
  const lease = await store.acquire('bench', { holder: 'bench', ttlMs: 600_000 })
  const fence = store.fence('bench', lease.token)
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) fence.putSync(KEYS[i & 15], VALUE)
    },
    check: async () => (await store.get('bench', KEYS[0])).version,
  }
}

async function baselinePutSync() {
  const put = jsStoreSync()
  let versionOfFirst = 0n
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) {
        const r = put('bench', KEYS[i & 15], VALUE, 1n)
        if ((i & 15) === 0) versionOfFirst = r.version
      }
    },
    check: async () => versionOfFirst,
  }
}

async function baselinePut() {
  const put = jsStore()
  let versionOfFirst = 0n
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) {
        const r = await put('bench', KEYS[i & 15], VALUE, 1n)
        if ((i & 15) === 0) versionOfFirst = r.version
      }
    },
    check: async () => versionOfFirst,
  }
}

async function staleRejection() {
  // The rejection path: a stale token, caught as a StaleTokenError.
  const store = await open('memory:')
  await store.put('bench', 'k', VALUE, { token: 2n })
  const options = { token: 1n }
  return {
    run: async (n) => {
      for (let i = 0; i < n; i++) {
        try {
          await store.put('bench', 'k', VALUE, options)
          throw new Error('a stale put was accepted')
        } catch (e) {
          if (e.code !== 'STALE_TOKEN') throw e
        }
      }
    },
    check: async () => (await store.get('bench', 'k')).version,
  }
}

// Appends one result line (ns per call; the goal: fenced time / baseline
// time <= `goal`, 1 unless given: at least as fast as the pure-JS baseline).
function record(line, fenced, baseline, note, goal = 1) {
  const path = process.env.FENCING_BENCH_OUT
  if (!path) return
  const ratio = fenced / baseline
  const entry = {
    group: 'node',
    line,
    concurrency: 1,
    concurrency_unit: 'threads',
    unit: 'ns/op',
    fenced,
    baseline,
    ratio,
    baseline_name: 'pure JS: Map per scope + bigint check-and-set',
    goal: { on: 'ratio', op: '<=', value: goal },
    met: ratio <= goal,
    rounds: ROUNDS,
    smoke,
    note: `node ${process.version}; ${note}`,
  }
  require('node:fs').appendFileSync(path, JSON.stringify(entry) + '\n')
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

async function main() {
  const contenders = [
    ['fenced put (fencing, memory:)', await fencedPut()],
    ['  the same through the addon only', await nativePut()],
    ['pure-JS Map + bigint check-and-set', await baselinePut()],
    ['stale put rejected (fencing, memory:)', await staleRejection(), { calls: Math.max(1, CALLS / 10) }],
    ['fenced putSync (fencing, memory:)', await fencedPutSync()],
    ['pure-JS Map + bigint, not awaited', await baselinePutSync()],
    ['fence.put (fencing, memory:)', await fencePut()],
    ['fence.putSync (fencing, memory:)', await fencePutSync()],
  ]
  // Warm up every path (JIT), then alternate the contenders round by round.
  for (const [, c, o] of contenders) await c.run(Math.min(o?.calls ?? CALLS, 20_000))
  const samples = contenders.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, c, o]] of contenders.entries()) {
      const calls = o?.calls ?? CALLS
      const t0 = performance.now()
      await c.run(calls)
      samples[i].push(((performance.now() - t0) * 1e6) / calls)
    }
  }
  for (const [, c] of contenders) {
    if ((await c.check()) < 1n) throw new Error('a contender did not write')
  }

  const ns = samples.map(median)
  const [fenced, , baseline, , fencedSync, baselineSync, fencePutNs, fencePutSyncNs] = ns
  console.log(`node ${process.version}, ${ROUNDS} round(s) of ${CALLS} awaited calls, median ns per call`)
  for (const [i, [name]] of contenders.entries()) {
    console.log(`${name.padEnd(40)} ${ns[i].toFixed(0).padStart(8)} ns/op   (rounds: ${samples[i].map((x) => x.toFixed(0)).join(' ')})`)
  }
  console.log(`ratio fenced / pure-JS: ${(fenced / baseline).toFixed(2)}x (goal <= 4x)`)
  console.log(`per-call overhead of the fenced put: ${(fenced - baseline).toFixed(0)} ns`)
  console.log(`ratio putSync / pure-JS not awaited: ${(fencedSync / baselineSync).toFixed(2)}x (goal <= 3x)`)
  console.log(`ratio fence.put / pure-JS awaited: ${(fencePutNs / baseline).toFixed(2)}x (goal <= 3x)`)
  console.log(`ratio fence.putSync / pure-JS not awaited: ${(fencePutSyncNs / baselineSync).toFixed(2)}x (goal <= 2x)`)
  record('put (awaited)', fenced, baseline, 'each call awaited on both sides', 4)
  record('putSync', fencedSync, baselineSync, 'no Promise on either side', 3)
  record('fence.put (awaited)', fencePutNs, baseline, 'store.fence(scope, token) once, then put(key, value); each call awaited on both sides', 3)
  record('fence.putSync', fencePutSyncNs, baselineSync, 'store.fence(scope, token) once, then putSync(key, value); no Promise on either side', 2)
  if (smoke) console.log('smoke run: every path ran once; these timings mean nothing')
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
