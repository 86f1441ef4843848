'use strict'
// PostgreSQL: fencing's SQLSTATEs as the package's errors, `fencing.check`
// in the user's own transaction through node-pg, and hostile names.
//
// The mapping tests need no server. The others run on $FENCING_TEST_PG_URL
// in a fresh schema each (skipped without it, failed when
// FENCING_REQUIRE_PG=1).

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const pg = require('pg')
const fencing = require('fencing-tokens')
const { postgresOrSkip, freshSchema } = require('./helpers.js')

const {
  errorFromSqlstate,
  fromPostgresError,
  FencingError,
  StaleTokenError,
  SequenceOutOfOrderError,
  VersionMismatchError,
  NotFoundError,
  LeaseHeldError,
  LeaseLostError,
  TokenExhaustedError,
  InvalidArgumentError,
  MAX_TOKEN,
} = fencing

// ----- errorFromSqlstate / fromPostgresError: no server needed -----

describe('errorFromSqlstate', () => {
  const states = [
    ['FN001', StaleTokenError, 'STALE_TOKEN'],
    ['FN002', SequenceOutOfOrderError, 'SEQUENCE_OUT_OF_ORDER'],
    ['FN003', VersionMismatchError, 'VERSION_MISMATCH'],
    ['FN004', NotFoundError, 'NOT_FOUND'],
    ['FN005', LeaseHeldError, 'LEASE_HELD'],
    ['FN006', LeaseLostError, 'LEASE_LOST'],
    ['FN007', TokenExhaustedError, 'TOKEN_EXHAUSTED'],
    ['FN008', InvalidArgumentError, 'INVALID_ARGUMENT'],
  ]

  test('every fencing SQLSTATE maps to its class', () => {
    for (const [state, cls, code] of states) {
      for (const detail of [undefined, null, 'not json', '{}']) {
        const e = errorFromSqlstate(state, detail)
        assert.ok(e instanceof cls, `${state}: ${e && e.constructor.name}`)
        assert.ok(e instanceof FencingError, state)
        assert.equal(e.code, code)
      }
    }
    // INVALID_ARGUMENT keeps the JavaScript convention: a RangeError.
    assert.ok(errorFromSqlstate('FN008', null) instanceof RangeError)
  })

  test('details come back typed, 64-bit numbers as bigint', () => {
    const stale = errorFromSqlstate(
      'FN001',
      '{"code": "STALE_TOKEN", "scope": "r\'\\"\\\\; DROP TABLE x; -- \\ud83d\\udd12", ' +
        '"current": "9223372036854775807", "presented": "9007199254740993"}',
    )
    assert.ok(stale instanceof StaleTokenError)
    assert.equal(stale.scope, 'r\'"\\; DROP TABLE x; -- \u{1f512}')
    assert.equal(stale.presented, 2n ** 53n + 1n)
    assert.equal(stale.current, MAX_TOKEN)
    assert.match(stale.message, /stale/)
    // The stack shows the caller, not the native module.
    assert.match(stale.stack, /postgres\.test\.js/)

    const seq = errorFromSqlstate('FN002', '{"last": "5", "presented": "3"}')
    assert.deepEqual([seq.presented, seq.last], [3n, 5n])
    const held = errorFromSqlstate('FN005', '{"scope": "s", "holder": "b", "token": "7", "remaining_ms": 250}')
    assert.deepEqual([held.scope, held.holder, held.token, held.remainingMs], ['s', 'b', 7n, 250])
    const lost = errorFromSqlstate('FN006', '{"scope": "s", "current_token": null, "current_holder": null}')
    assert.deepEqual([lost.scope, lost.currentToken, lost.currentHolder], ['s', null, null])
  })

  test('other SQLSTATEs are not fencing errors', () => {
    for (const state of ['23505', '40001', 'P0001', 'FN000', 'FN009', 'fn001', '', 'FN0011']) {
      assert.equal(errorFromSqlstate(state, '{"code": "STALE_TOKEN"}'), null, state)
    }
  })

  test('bad input is INVALID_ARGUMENT and throws', () => {
    for (const bad of [undefined, null, 1, 1n, {}, ['FN001'], Buffer.from('FN001')]) {
      assert.throws(() => errorFromSqlstate(bad), (e) => {
        assert.ok(e instanceof TypeError && e instanceof InvalidArgumentError, String(bad))
        assert.match(e.message, /sqlstate must be a string/)
        return true
      })
    }
    assert.throws(() => errorFromSqlstate('FN\ud800'), (e) => e instanceof RangeError && e.code === 'INVALID_ARGUMENT')
    for (const bad of [1, {}, true, Buffer.from('{}')]) {
      assert.throws(() => errorFromSqlstate('FN001', bad), (e) => {
        assert.ok(e instanceof TypeError && e instanceof InvalidArgumentError)
        assert.match(e.message, /detail must be a string/)
        return true
      })
    }
    assert.throws(() => errorFromSqlstate('FN001', '{"scope": "\ud800"}'), (e) => e instanceof RangeError && e.code === 'INVALID_ARGUMENT')
  })

  test('the ESM entry exports the same functions', async () => {
    const esm = await import('fencing-tokens')
    assert.equal(esm.errorFromSqlstate, errorFromSqlstate)
    assert.equal(esm.fromPostgresError, fromPostgresError)
  })

  test('fromPostgresError reads a driver error, duck-typed', () => {
    const driverError = Object.assign(new Error('stale token'), {
      code: 'FN001',
      detail: '{"scope": "s", "presented": "4", "current": "9"}',
      severity: 'ERROR',
    })
    const e = fromPostgresError(driverError)
    assert.ok(e instanceof StaleTokenError)
    assert.deepEqual([e.scope, e.presented, e.current], ['s', 4n, 9n])
    assert.ok(fromPostgresError({ code: 'FN002' }) instanceof SequenceOutOfOrderError)
    for (const other of [
      Object.assign(new Error('dup'), { code: '23505', detail: 'Key (id)=(1) already exists.' }),
      Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
      new Error('plain'),
      { code: 42 },
      null,
      undefined,
      'FN001',
    ]) {
      assert.equal(fromPostgresError(other), null)
    }
  })
})

// ----- the user's own transaction, through node-pg -----

const SCOPE = 'report:7'

describe('fencing.check in the caller\'s own transaction (node-pg)', () => {
  const base = postgresOrSkip(test)
  if (base === null) return

  /**
   * The paused-worker story on the server: A's lease lapses while A is
   * paused, B acquires; the user's own table `report` in the same schema.
   */
  async function story(t) {
    const schema = freshSchema('tx')
    const store = await fencing.open(`${base}?schema=${schema}&clock=manual`)
    const client = new pg.Client({ connectionString: base })
    await client.connect()
    t.after(async () => {
      await client.end()
      await store.close()
    })
    assert.equal(store.backendKind, 'postgres')
    const a = await store.acquire(SCOPE, { holder: 'worker-a', ttlMs: 1000 })
    await store.advanceClock(2000) // A is paused past its lease
    const b = await store.acquire(SCOPE, { holder: 'worker-b', ttlMs: 30000 })
    assert.ok(b.token > a.token)
    await client.query(`CREATE TABLE "${schema}".report (id int PRIMARY KEY, body text NOT NULL)`)
    await client.query(`INSERT INTO "${schema}".report VALUES (1, 'v0')`)
    const body = async () => (await client.query(`SELECT body FROM "${schema}".report WHERE id = 1`)).rows[0].body
    const update = (text) => client.query(`UPDATE "${schema}".report SET body = $1 WHERE id = 1`, [text])
    const check = (...args) =>
      client.query(
        args.length === 3
          ? `SELECT "${schema}".check($1, $2::bigint, $3::bigint)`
          : `SELECT "${schema}".check($1, $2::bigint)`,
        args,
      )
    return { store, client, schema, a: a.token, b: b.token, body, update, check }
  }

  test('a stale token rolls back the user\'s UPDATE and maps to STALE_TOKEN', async (t) => {
    const { store, client, a, b, body, update, check } = await story(t)
    await client.query('BEGIN')
    await update('by A')
    const failure = await check(SCOPE, a).then(() => null, (e) => e)
    assert.ok(failure instanceof pg.DatabaseError, String(failure))
    assert.equal(failure.code, 'FN001')
    // COMMIT of the failed transaction is a ROLLBACK.
    assert.equal((await client.query('COMMIT')).command, 'ROLLBACK')
    const e = fromPostgresError(failure)
    assert.ok(e instanceof StaleTokenError)
    assert.deepEqual([e.scope, e.presented, e.current], [SCOPE, a, b])
    assert.equal(await body(), 'v0')
    // Check first: the UPDATE never runs.
    await client.query('BEGIN')
    const again = await check(SCOPE, a).then(() => null, (err) => err)
    assert.ok(fromPostgresError(again) instanceof StaleTokenError)
    await assert.rejects(update('by A'), /current transaction is aborted/)
    await client.query('ROLLBACK')
    assert.equal(await body(), 'v0')
    assert.equal(await store.fenceOf(SCOPE), b)
  })

  test('a current token commits and raises the fence', async (t) => {
    const { store, client, a, b, body, update, check } = await story(t)
    await client.query('BEGIN')
    await check(SCOPE, b)
    await update('by B')
    assert.equal((await client.query('COMMIT')).command, 'COMMIT')
    assert.equal(await body(), 'by B')
    assert.equal(await store.fenceOf(SCOPE), b)
    // A later token checked there fences the store's writers off too.
    const c = await store.nextToken(SCOPE)
    await check(SCOPE, c)
    assert.equal(await store.fenceOf(SCOPE), c)
    await assert.rejects(store.put(SCOPE, 'body', 'late', { token: b }), (e) => {
      assert.ok(e instanceof StaleTokenError)
      assert.deepEqual([e.presented, e.current], [b, c])
      return true
    })
    assert.ok(a < b)
  })

  test('the 3-argument check refuses a seq out of order (FN002)', async (t) => {
    const { client, b, body, update, check } = await story(t)
    await client.query('BEGIN')
    await check(SCOPE, b, 5n)
    await update('seq 5')
    await client.query('COMMIT')
    for (const seq of [5n, 4n, 0n]) {
      await client.query('BEGIN')
      await update(`seq ${seq}`)
      const failure = await check(SCOPE, b, seq).then(() => null, (e) => e)
      await client.query('ROLLBACK')
      assert.equal(failure && failure.code, 'FN002')
      const e = fromPostgresError(failure)
      assert.ok(e instanceof SequenceOutOfOrderError)
      assert.deepEqual([e.presented, e.last], [seq, 5n])
      assert.equal(await body(), 'seq 5')
    }
    await check(SCOPE, b, 6n)
    // Bad arguments: INVALID_ARGUMENT (FN008).
    for (const args of [[SCOPE, 0n], ['', b], ['x'.repeat(257), b]]) {
      const failure = await check(...args).then(() => null, (e) => e)
      assert.equal(failure && failure.code, 'FN008')
      assert.ok(fromPostgresError(failure) instanceof InvalidArgumentError)
    }
  })
})

// ----- hostile names -----

describe('hostile names on postgres://', () => {
  const base = postgresOrSkip(test)
  if (base === null) return

  test('round-trip exactly through put/get/list/status and harm nothing', async (t) => {
    const schema = freshSchema('hostile')
    const store = await fencing.open(`${base}?schema=${schema}`)
    const client = new pg.Client({ connectionString: base })
    await client.connect()
    t.after(async () => {
      await client.end()
      await store.close()
    })
    const names = [
      "it's",
      '"double"',
      'back\\slash\\',
      `'; DROP TABLE "${schema}".report; --`,
      "'); DROP TABLE x; --",
      '%s $1 ? :x ${x}',
      'emoji \u{1f512}\u{1f980} é ключ 鍵',
      'tab\there\nnewline',
      '\u00a0 leading nbsp',
      "E'\\x27'",
    ]
    const byteOrder = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
    await client.query(`CREATE TABLE "${schema}".report (id int PRIMARY KEY)`)
    await client.query(`INSERT INTO "${schema}".report VALUES (1), (2)`)
    for (const scope of names) {
      const lease = await store.acquire(scope, { holder: scope, ttlMs: 30000 })
      assert.deepEqual([lease.scope, lease.holder], [scope, scope])
      for (const key of names) {
        const value = Buffer.from(key + key)
        assert.equal((await store.put(scope, key, value, { token: lease.token })).version, 1n)
        const entry = await store.get(scope, key)
        assert.equal(entry.key, key)
        assert.ok(entry.value.equals(value), key)
        assert.equal(entry.token, lease.token)
      }
      const page = await store.list(scope, { limit: 1000 })
      assert.deepEqual(page.keys, byteOrder)
      assert.equal(page.next, null)
      const status = await store.status(scope)
      assert.equal(status.entries, BigInt(names.length))
      assert.equal(status.lease.holder, scope)
      assert.equal(status.fence, lease.token)
      // The name reaches the SQL function as a parameter too.
      const newer = await store.nextToken(scope)
      await client.query(`SELECT "${schema}".check($1, $2::bigint)`, [scope, newer])
      const failure = await client
        .query(`SELECT "${schema}".check($1, $2::bigint)`, [scope, lease.token])
        .then(() => null, (e) => e)
      const e = fromPostgresError(failure)
      assert.ok(e instanceof StaleTokenError, String(failure))
      assert.deepEqual([e.scope, e.presented, e.current], [scope, lease.token, newer])
      await assert.rejects(store.put(scope, names[0], 'late', { token: lease.token }), StaleTokenError)
    }
    for (const scope of names) {
      assert.deepEqual((await store.list(scope, { limit: 1000 })).keys, byteOrder)
    }
    const rows = await client.query(`SELECT id FROM "${schema}".report ORDER BY id`)
    assert.deepEqual(rows.rows.map((r) => r.id), [1, 2])
    const count = await client.query(`SELECT count(*)::int AS n FROM "${schema}".entries`)
    assert.equal(count.rows[0].n, names.length * names.length)
  })
})
