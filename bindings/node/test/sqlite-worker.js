'use strict'
// A child process of sqlite-check.test.js, on the user's own driver:
//   node sqlite-worker.js DRIVER paused PATH   worker A of the story
//   node sqlite-worker.js DRIVER race PATH NAME  one racer
// Prints one line per outcome: "acquired T", "committed T", "rejected T CODE".

const readline = require('node:readline')
const fencing = require('fencing-tokens')
const { open, fencedUpdate } = require('./sqlite-drivers.js')

const [driver, role, path, name] = process.argv.slice(2)

function outcome(token, db, body) {
  try {
    fencedUpdate(db, token, body)
    return `committed ${token}`
  } catch (e) {
    const err = fencing.fromSqliteError(e)
    return `rejected ${token} ${err === null ? JSON.stringify(e.message) : err.constructor.name}`
  }
}

async function paused() {
  const store = await fencing.open(`sqlite:${path}`)
  const lease = await store.acquire('report:7', { holder: 'worker-a', ttlMs: 200 })
  console.log(`acquired ${lease.token}`)
  // "Paused" until told to go on; the lease expires meanwhile.
  const lines = readline.createInterface({ input: process.stdin })
  await new Promise((resolve) => lines.once('line', resolve))
  lines.close()
  const db = open(driver, path)
  console.log(outcome(lease.token, db, 'by A (stale)'))
  db.close()
  await store.close()
}

async function race() {
  const store = await fencing.open(`sqlite:${path}`)
  const db = open(driver, path)
  let seed = [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7)
  const end = Date.now() + 3000
  while (Date.now() < end) {
    let lease
    try {
      lease = await store.acquireWait('report:7', { holder: name, ttlMs: 50, timeoutMs: 2000 })
    } catch (e) {
      if (e instanceof fencing.TimeoutError) continue
      throw e
    }
    seed = (seed * 1103515245 + 12345) >>> 0
    if ((seed >>> 16) % 3 === 0) await new Promise((r) => setTimeout(r, 100)) // paused past the lease
    console.log(outcome(lease.token, db, name))
    await store.release({ scope: 'report:7', token: lease.token }).catch(() => {})
  }
  db.close()
  await store.close()
}

;(role === 'paused' ? paused() : race()).catch((e) => {
  console.error(e)
  process.exit(1)
})
