'use strict'
// The paused-worker story with real processes on sqlite:.
//
//   worker A (a child process) acquires the lease      token 1
//   A is stopped (SIGSTOP) past its TTL ............... (lease expires)
//   worker B (this process) acquires the lease          token 2
//   B writes the report                                 accepted, fence = 2
//   A is continued (SIGCONT) and writes                 REJECTED: STALE_TOKEN
//
//   node paused-worker.js [path/to/fence.db]
//
// Exits 0 when the story holds (A's write rejected, B's report kept) and
// prints what happened; exits 1 otherwise. Bounded in time; the child is
// always cleaned up.

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const readline = require('node:readline')
const { open, StaleTokenError } = require('fencing-tokens')

const SCOPE = 'report:7'
const TTL_MS = 500
const LIMIT_MS = 30_000

async function worker(url) {
  // Worker A: take the lease, say so, then wait for the go to write.
  const store = await open(url)
  const lease = await store.acquire(SCOPE, { holder: `worker-a@${process.pid}`, ttlMs: TTL_MS })
  process.stdout.write(`${JSON.stringify({ acquired: lease.token.toString() })}\n`)
  const lines = readline.createInterface({ input: process.stdin })
  for await (const line of lines) {
    if (line !== 'write') continue
    let outcome
    try {
      const r = await store.put(SCOPE, 'body', Buffer.from("A's report"), { token: lease.token, holder: lease.holder })
      outcome = { accepted: r.version.toString() }
    } catch (e) {
      outcome = {
        rejected: e.code,
        staleTokenError: e instanceof StaleTokenError,
        presented: e.presented?.toString(),
        current: e.current?.toString(),
      }
    }
    process.stdout.write(`${JSON.stringify(outcome)}\n`)
    break
  }
  lines.close()
  await store.close()
}

/** Runs the story; resolves to a report, rejects if anything goes wrong. */
async function story(dbPath) {
  const url = `sqlite:${dbPath}`
  const child = spawn(process.execPath, [__filename, '--worker', url], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const nextLine = async () => {
    const { value, done } = await lines.next()
    if (done) throw new Error('worker A ended without answering')
    return JSON.parse(value)
  }
  const deadline = setTimeout(() => child.kill('SIGKILL'), LIMIT_MS)
  const store = await open(url)
  try {
    const a = await nextLine()
    child.kill('SIGSTOP') // A pauses: a GC pause, a VM suspend...

    // B waits for A's lease to expire (A cannot renew: it is stopped).
    const b = await store.acquireWait(SCOPE, { holder: 'worker-b', ttlMs: 10_000, timeoutMs: 10_000 })
    const written = await store.put(SCOPE, 'body', Buffer.from("B's report"), { token: b.token, holder: b.holder })

    child.kill('SIGCONT') // A wakes up, still believing it holds the lease, and writes.
    child.stdin.write('write\n')
    const outcome = await nextLine()
    child.stdin.end()
    const exit = await exited

    const entry = await store.get(SCOPE, 'body')
    return {
      a: { token: BigInt(a.acquired), ...outcome },
      b: { token: b.token, version: written.version },
      stored: { value: entry.value.toString(), token: entry.token, version: entry.version },
      fence: await store.fenceOf(SCOPE),
      exit,
    }
  } finally {
    clearTimeout(deadline)
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT')
      child.kill('SIGKILL')
    }
    await store.close()
  }
}

/** True when the report shows the story as told. */
function holds(r) {
  return (
    r.a.rejected === 'STALE_TOKEN' &&
    r.a.staleTokenError === true &&
    BigInt(r.a.presented) === r.a.token &&
    BigInt(r.a.current) === r.b.token &&
    r.b.token > r.a.token &&
    r.stored.value === "B's report" &&
    r.stored.token === r.b.token &&
    r.fence === r.b.token &&
    r.exit.code === 0
  )
}

async function main() {
  if (process.argv[2] === '--worker') return worker(process.argv[3])
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paused-worker-'))
  try {
    const report = await story(process.argv[2] ?? path.join(dir, 'fence.db'))
    console.log(`worker A acquired token ${report.a.token}, was paused past its TTL`)
    console.log(`worker B acquired token ${report.b.token} and wrote version ${report.b.version}`)
    console.log(`worker A woke and wrote with ${report.a.presented}: ${report.a.rejected ?? 'ACCEPTED'} (fence at ${report.a.current})`)
    console.log(`stored: ${JSON.stringify(report.stored.value)} with token ${report.stored.token}`)
    if (!holds(report)) {
      console.error('the story does not hold:', report)
      process.exitCode = 1
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

module.exports = { story, holds }

if (require.main === module) {
  main().catch((e) => {
    console.error(e)
    process.exitCode = 1
  })
}
