'use strict'
// Fencing your own SQLite tables with plain SQL (docs/sqlite.md), through
// the standard Node drivers (better-sqlite3; node:sqlite where this Node has
// it), not through fencing: the file is created by opening a fencing store
// once, the user's own table sits beside fencing's, and every check is
// `INSERT INTO fencing_check` in the user's own BEGIN IMMEDIATE transaction.
// `fromSqliteError` turns the driver's error into the typed one. The story
// and the race run in real processes (sqlite-worker.js).

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')
const fencing = require('fencing-tokens')
const { tempDir } = require('./helpers.js')
const { drivers, fencedUpdate } = require('./sqlite-drivers.js')

const {
  errorFromSqliteMessage,
  fromSqliteError,
  FencingError,
  StaleTokenError,
  SequenceOutOfOrderError,
  InvalidArgumentError,
} = fencing

const WORKER = path.join(__dirname, 'sqlite-worker.js')
const SCOPE = 'report:7'

describe('errorFromSqliteMessage / fromSqliteError', () => {
  test('each raised message maps to its class, nothing else does', () => {
    for (const [message, cls] of [
      ['STALE_TOKEN: a newer holder has taken over, stop', StaleTokenError],
      ['SEQUENCE_OUT_OF_ORDER: seq is not after', SequenceOutOfOrderError],
      ['INVALID_ARGUMENT: token must be an integer', InvalidArgumentError],
    ]) {
      for (const e of [errorFromSqliteMessage(message), fromSqliteError(new Error(message))]) {
        assert.ok(e instanceof cls, `${message}: ${e && e.constructor.name}`)
        assert.ok(e instanceof FencingError)
        // The view's message names no scope, token or fence: null, not invented.
        const details = { StaleTokenError: ['scope', 'presented', 'current'], SequenceOutOfOrderError: ['presented', 'last'] }
        for (const field of details[cls.name] ?? []) assert.equal(e[field], null, `${message}: ${field}`)
      }
    }
    for (const other of ['UNIQUE constraint failed: t.id', 'database is locked', 'LEASE_HELD: x', '']) {
      assert.equal(errorFromSqliteMessage(other), null, other)
      assert.equal(fromSqliteError(new Error(other)), null, other)
    }
    for (const notAnError of [null, undefined, 'STALE_TOKEN: x', 42, { message: 7 }]) {
      assert.equal(fromSqliteError(notAnError), null)
    }
    assert.throws(() => errorFromSqliteMessage(42), (e) => e instanceof InvalidArgumentError && /message/.test(e.message))
  })
})

/** A store file with the user's own table beside fencing's. */
async function setup(open) {
  const file = path.join(tempDir(), 'app.db')
  await (await fencing.open(`sqlite:${file}`)).close()
  const db = open(file)
  db.exec(`CREATE TABLE report_state (id INTEGER PRIMARY KEY, body TEXT NOT NULL,
                                      token INTEGER NOT NULL, history TEXT NOT NULL DEFAULT '');
           INSERT INTO report_state (id, body, token) VALUES (7, 'original', 0);`)
  db.close()
  return file
}

/** One check in autocommit: null when it passed, else the typed code. */
function check(db, scope, token, seq = null) {
  try {
    db.run('INSERT INTO fencing_check (scope, token, seq) VALUES (?, ?, ?)', scope, token, seq)
    return null
  } catch (e) {
    const err = fromSqliteError(e)
    assert.ok(err !== null, `not a fencing_check rejection: ${e.message}`)
    return err.code
  }
}

function child(driver, ...args) {
  const p = spawn(process.execPath, [WORKER, driver, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = readline.createInterface({ input: p.stdout })
  const exited = new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal })))
  return { p, lines: lines[Symbol.asyncIterator](), exited }
}

for (const [name, open, reason] of drivers()) {
  if (open === null) console.log(`# skipped ${name}: ${reason}`)
  describe(`fencing_check through ${name}`, { skip: reason ?? false }, () => {
    test('a paused worker is fenced off its own table (real processes)', { timeout: 60_000 }, async () => {
      const file = await setup(open)
      const a = child(name, 'paused', file)
      try {
        const first = (await a.lines.next()).value.split(' ')
        assert.equal(first[0], 'acquired')
        const aToken = BigInt(first[1])
        // B waits until A's lease has expired, then takes over and writes.
        const store = await fencing.open(`sqlite:${file}`)
        const b = await store.acquireWait(SCOPE, { holder: 'worker-b', ttlMs: 10_000, timeoutMs: 10_000 })
        assert.ok(b.token > aToken)
        const db = open(file)
        fencedUpdate(db, b.token, 'by B')
        // A wakes up and writes with its old token: its whole transaction rolls back.
        a.p.stdin.end('go\n')
        assert.equal((await a.lines.next()).value, `rejected ${aToken} StaleTokenError`)
        assert.deepEqual(await a.exited, { code: 0, signal: null })
        const row = db.get('SELECT body, token FROM report_state WHERE id = 7')
        assert.deepEqual([row.body, BigInt(row.token)], ['by B', b.token])
        // One state: the library sees the fence the check raised.
        assert.equal(await store.fenceOf(SCOPE), b.token)
        db.close()
        await store.close()
      } finally {
        a.p.kill('SIGKILL')
      }
    })

    test('the rules of check on plain SQL', async () => {
      const file = await setup(open)
      const store = await fencing.open(`sqlite:${file}`)
      const db = open(file)
      // A fresh scope accepts any token and raises its fence; equal passes.
      assert.equal(check(db, 's', 40n), null)
      assert.equal(await store.fenceOf('s'), 40n)
      assert.equal(check(db, 's', 40n), null)
      assert.equal(check(db, 's', 39n), 'STALE_TOKEN')
      // Seq: after the last accepted seq of the same token only.
      assert.equal(check(db, 's', 41n, 5n), null)
      assert.equal(check(db, 's', 41n, 5n), 'SEQUENCE_OUT_OF_ORDER')
      assert.equal(check(db, 's', 41n, 4n), 'SEQUENCE_OUT_OF_ORDER')
      assert.equal(check(db, 's', 41n, 6n), null)
      assert.equal(check(db, 's', 42n, 0n), null)
      // The library's fences hold for the check, and the other way round.
      await store.put('s', 'k', 'v', { token: 50n })
      assert.equal(check(db, 's', 49n), 'STALE_TOKEN')
      assert.equal(check(db, 's', 60n), null)
      await assert.rejects(store.put('s', 'k', 'v', { token: 50n }), StaleTokenError)
      // A retired scope's floor: tokens of its old life never pass, the
      // floor itself included; the next one does.
      await store.delete('s', 'k', { token: 60n })
      assert.equal(await store.retire('s'), true)
      assert.equal(check(db, 's', 60n), 'STALE_TOKEN')
      assert.equal(check(db, 's', 1n), 'STALE_TOKEN')
      assert.equal(check(db, 's', 61n), null)
      // A stale check after the user's UPDATE rolls the UPDATE back too.
      fencedUpdate(db, 9n, 'at 9') // scope report:7 is fresh: 9 passes
      assert.throws(() => fencedUpdate(db, 8n, 'at 8'), (e) => fromSqliteError(e) instanceof StaleTokenError)
      assert.equal(db.get('SELECT body FROM report_state WHERE id = 7').body, 'at 9')
      db.close()
      await store.close()
    })

    test('the docs example: a transaction function run .immediate()', { skip: name !== 'better-sqlite3' }, async () => {
      const file = await setup(open)
      const store = await fencing.open(`sqlite:${file}`)
      const Database = require('better-sqlite3')
      const db = new Database(file)
      const fenced = db.transaction((token, body) => {
        db.prepare('INSERT INTO fencing_check (scope, token) VALUES (?, ?)').run(SCOPE, token)
        db.prepare('UPDATE report_state SET body = ? WHERE id = 7').run(body)
      })
      const older = await store.nextToken(SCOPE)
      const newer = await store.nextToken(SCOPE)
      fenced.immediate(newer, 'newer')
      assert.throws(() => fenced.immediate(older, 'older'), (e) => fromSqliteError(e) instanceof StaleTokenError)
      assert.equal(db.prepare('SELECT body FROM report_state WHERE id = 7').get().body, 'newer')
      db.close()
      await store.close()
    })

    test('bad input is INVALID_ARGUMENT and creates nothing', async () => {
      const db = open(await setup(open))
      const cases = [
        ['token 0', 's', 0n, null],
        ['token -1', 's', -1n, null],
        ['token 2^63 as a number', 's', 2 ** 63, null],
        ['token 2^63 as text', 's', (2n ** 63n).toString(), null],
        ['token as text', 's', '42', null],
        ['token NULL', 's', null, null],
        ['token as blob', 's', Buffer.from([1]), null],
        ['token as a fraction', 's', 1.5, null],
        ['seq -1', 's', 1n, -1n],
        ['seq as text', 's', 1n, '1'],
        ['scope NULL', null, 1n, null],
        ['scope empty', '', 1n, null],
        ['scope 257 bytes', 'x'.repeat(257), 1n, null],
        ['scope with NUL', 'a\0b', 1n, null],
        ['scope as integer', 7n, 1n, null],
      ]
      for (const [what, scope, token, seq] of cases) {
        assert.equal(check(db, scope, token, seq), 'INVALID_ARGUMENT', what)
      }
      assert.equal(BigInt(db.get('SELECT count(*) AS n FROM fencing_scopes').n), 0n)
      db.close()
    })

    test('racing processes never commit a stale update', { timeout: 120_000 }, async () => {
      const file = await setup(open)
      const racers = [1, 2, 3, 4].map((i) => child(name, 'race', file, `race${i}`))
      const committed = []
      let rejected = 0
      try {
        for (const r of racers) {
          for await (const line of { [Symbol.asyncIterator]: () => r.lines }) {
            const [kind, token, code] = line.split(' ')
            if (kind === 'committed') committed.push(BigInt(token))
            else {
              assert.deepEqual([kind, code], ['rejected', 'StaleTokenError'], line)
              rejected += 1
            }
          }
          assert.deepEqual(await r.exited, { code: 0, signal: null })
        }
      } finally {
        for (const r of racers) r.p.kill('SIGKILL')
      }
      // The row's history is every committed update in commit order: the
      // tokens never go down, and no rejected transaction left a trace.
      const db = open(file)
      const written = db.get('SELECT history FROM report_state WHERE id = 7').history
        .split(',').filter((t) => t !== '').map(BigInt)
      db.close()
      console.log(`# ${name} race: ${written.length} committed, ${rejected} stale transactions rolled back`)
      const sorted = (xs) => [...xs].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
      assert.deepEqual(written, sorted(written))
      assert.deepEqual(sorted(written), sorted(committed))
      assert.ok(rejected > 0, 'the race needs stale holders to mean anything')
    })
  })
}

// One SQLite per process (docs/sqlite.md): the driver is a second copy of
// SQLite beside the one inside fencing. Closing its connection drops this
// process's locks on the file, fencing's among them, and with no other
// process attached it then deletes the -wal under the store: the store's
// next write must fail, not commit to the deleted log.
for (const [name, open, reason] of drivers()) {
  describe(`one SQLite per process (${name})`, { skip: reason ?? false }, () => {
    test('closing the driver under an open store is noticed, and nothing is lost', async () => {
      const file = path.join(tempDir(), 'app.db')
      const first = await (async () => {
        const store = await fencing.open(`sqlite:${file}`)
        try {
          const token = await store.nextToken(SCOPE)
          await store.put(SCOPE, 'k', 'kept', { token })
          const db = open(file)
          assert.equal(db.get('SELECT count(*) AS n FROM fencing_scopes').n, 1)
          db.close()
          await assert.rejects(store.nextToken(SCOPE), (e) =>
            e instanceof fencing.BackendError && e.kind === 'refused' && /One SQLite per process/.test(e.message))
          return token
        } finally {
          await store.close()
        }
      })()
      const store = await fencing.open(`sqlite:${file}`)
      try {
        assert.equal((await store.get(SCOPE, 'k')).value.toString(), 'kept')
        assert.equal(await store.nextToken(SCOPE), first + 1n)
      } finally {
        await store.close()
      }
    })
  })
}
