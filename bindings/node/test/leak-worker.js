'use strict'
// Run by leak.test.js as `node --expose-gc leak-worker.js URL OPENS OPS`:
// opens and closes OPENS stores, then runs OPS operations on one store, and
// prints one JSON line with the resident memory after the first tenth
// (the warm-up) and at the end of each phase.

const { open } = require('fencing-tokens')

const [url, opens, ops] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])]
const MIB = 1048576

/** `step(i)` n times; gc() between rounds of a tenth, as the loop did. */
async function phase(n, step) {
  const round = Math.max(1, Math.floor(n / 10))
  let before = 0
  for (let i = 0; i < n; i++) {
    await step(i)
    if ((i + 1) % round === 0) {
      global.gc()
      if (i + 1 === round) before = process.memoryUsage().rss
    }
  }
  global.gc()
  return { before: before / MIB, after: process.memoryUsage().rss / MIB }
}

async function main() {
  // Tight: no turn of the event loop between opens (awaiting settled
  // promises never yields to it), so nothing waits for a finalizer.
  const openClose = await phase(opens, async () => {
    const store = await open(url)
    await store.fenceOf('s')
    await store.close()
  })
  const store = await open(url)
  const stale = { token: await store.nextToken('leak') }
  const lease = await store.acquire('leak', { holder: 'h', ttlMs: 3600000 })
  const fence = { token: lease.token }
  const value = Buffer.from('value')
  const operations = await phase(ops, async (i) => {
    const key = `k${i % 100}`
    switch (i % 4) {
      case 0: return store.put('leak', key, value, fence)
      case 1: return store.get('leak', key)
      case 2: return store.fenceOf('leak')
      default:
        try {
          await store.put('leak', 'k', value, stale)
        } catch (e) {
          if (e.code !== 'STALE_TOKEN') throw e
          return
        }
        throw new Error('a stale write was accepted')
    }
  })
  await store.close()
  process.stdout.write(JSON.stringify({ openClose, operations }) + '\n')
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
