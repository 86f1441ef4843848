'use strict'
// Fenced objects (docs/objects.md) through the package: the paused holder
// refused on file:/// and, with $FENCING_TEST_S3_BUCKET (scripts/s3-server
// run), on S3, with $FENCING_TEST_AZ_CONTAINER (scripts/azure-server run), on
// Azure; reads, deletes, bad input that changes nothing, close. The
// rules are the core's (its own tests, and the shared object_* scenarios);
// these check that the face carries them.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const fencing = require('fencing-tokens')
const { openObjects, Objects, StaleTokenError, NotFoundError, FencingError } = fencing
const { tempDir, rejectsInvalid } = require('./helpers.js')

const T = TypeError
const R = RangeError

let fresh = 0
/** A `file:///` URL of a fresh, empty directory. */
function fileUrl() {
  fresh += 1
  const dir = path.join(tempDir('fencing-node-objects-'), `objects-${fresh}`)
  fs.mkdirSync(dir)
  return { url: pathToFileURL(dir).href, dir }
}

/**
 * The paused holder: token 2 writes, then token 1 (a holder paused past its
 * lease) is refused with the stale-token error, and the object stays token
 * 2's: its bytes, its token, its version.
 */
async function staleHolderIsRefused(url) {
  const objects = await openObjects(url)
  try {
    const csv = Buffer.from('id,total\n7,42\n')
    const written = await objects.put('reports/7.csv', csv, { token: 2n, holder: 'worker-b' })
    assert.deepEqual({ ...written }, { version: 1n, token: 2n })
    assert.equal(JSON.stringify(written), '{"version":"1","token":"2"}')

    await assert.rejects(objects.put('reports/7.csv', 'stale', { token: 1n, holder: 'worker-a' }), (e) => {
      assert.ok(e instanceof StaleTokenError, `${e.name}: ${e.message}`)
      assert.ok(e instanceof FencingError)
      assert.equal(e.code, 'STALE_TOKEN')
      assert.equal(e.scope, 'reports/7.csv')
      assert.equal(e.presented, 1n)
      assert.equal(e.current, 2n)
      assert.match(e.stack, /objects\.test\.js/, 'the stack names the caller')
      return true
    })
    // A delete by the stale holder is refused too.
    await assert.rejects(objects.delete('reports/7.csv', { token: '1' }), StaleTokenError)

    const now = await objects.get('reports/7.csv')
    assert.deepEqual(now, { value: csv, version: 1n, token: 2n })
    assert.ok(Buffer.isBuffer(now.value))

    // Equal tokens are accepted, and the version grows.
    const again = await objects.put('reports/7.csv', 'v2', { token: 2, expectedVersion: 1n })
    assert.deepEqual({ ...again }, { version: 2n, token: 2n })
    assert.deepEqual(await objects.get('reports/7.csv'), { value: Buffer.from('v2'), version: 2n, token: 2n })
  } finally {
    await objects.close()
  }
}

describe('file:///', () => {
  test('a paused holder is refused, and the newer write stays', async () => {
    await staleHolderIsRefused(fileUrl().url)
  })

  test('a second handle on the directory sees the same objects and fences', async () => {
    const { url } = fileUrl()
    const a = await openObjects(url)
    const b = await openObjects(url)
    try {
      await a.put('p', 'from a', { token: 5n })
      assert.deepEqual(await b.get('p'), { value: Buffer.from('from a'), version: 1n, token: 5n })
      await assert.rejects(b.put('p', 'old', { token: 4n }), { code: 'STALE_TOKEN', presented: 4n, current: 5n })
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('get of a path never written is null', async () => {
    const objects = await openObjects(fileUrl().url)
    try {
      assert.equal(await objects.get('never/written.csv'), null)
      await assert.rejects(objects.delete('never/written.csv', { token: 1n }), (e) => {
        assert.ok(e instanceof NotFoundError)
        assert.equal(e.scope, 'never/written.csv')
        assert.equal(e.key, 'never/written.csv')
        return true
      })
      assert.equal(await objects.get('never/written.csv'), null)
    } finally {
      await objects.close()
    }
  })

  test('delete, then get is null; the path keeps its fence', async () => {
    const objects = await openObjects(fileUrl().url)
    try {
      await objects.put('a/b', Buffer.from([0, 255]), { token: 3n })
      await assert.rejects(objects.delete('a/b', { token: 3n, expectedVersion: 2n }), {
        code: 'VERSION_MISMATCH',
        expected: 2n,
        actual: 1n,
      })
      const deleted = await objects.delete('a/b', { token: 3n, expectedVersion: 1n })
      assert.deepEqual({ ...deleted }, { version: 0n, token: 3n })
      assert.equal(await objects.get('a/b'), null)
      await assert.rejects(objects.delete('a/b', { token: 3n }), NotFoundError)
      // An older holder cannot write it again; the holder of the fence can.
      await assert.rejects(objects.put('a/b', 'old', { token: 2n }), { code: 'STALE_TOKEN', current: 3n })
      assert.deepEqual({ ...(await objects.put('a/b', 'new', { token: 3n, expectedVersion: 0n })) }, { version: 3n, token: 3n })
      assert.deepEqual(await objects.get('a/b'), { value: Buffer.from('new'), version: 3n, token: 3n })
    } finally {
      await objects.close()
    }
  })

  test('seq is checked as the store checks it', async () => {
    const objects = await openObjects(fileUrl().url)
    try {
      await objects.put('p', 'a', { token: 1n, seq: 5n })
      await assert.rejects(objects.put('p', 'b', { token: 1n, seq: 5n }), {
        code: 'SEQUENCE_OUT_OF_ORDER',
        name: 'SequenceOutOfOrderError',
        presented: 5n,
        last: 5n,
      })
      assert.deepEqual({ ...(await objects.put('p', 'c', { token: 1n, seq: '6' })) }, { version: 2n, token: 1n })
    } finally {
      await objects.close()
    }
  })
})

/** Every file under `dir` with its bytes. */
function tree(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .sort()
    .map((f) => [f, fs.statSync(path.join(dir, f)).isFile() ? fs.readFileSync(path.join(dir, f)) : null])
}

describe('bad input is INVALID_ARGUMENT and changes nothing', () => {
  test('bad URLs', async () => {
    for (const [url, kind] of [
      [undefined, T],
      [null, T],
      [42, T],
      [{}, T],
      [Buffer.from('memory:'), T],
      ['', R],
      ['bogus:', R],
      ['memory', R],
      ['file://relative/dir', R],
      ['file:', R],
      ['s3:', R],
      ['s3://', R],
      ['sqlite:objects.db', R],
      ['memory:\u0000', R],
      ['\ud800', R],
    ]) {
      await rejectsInvalid(openObjects(url), kind, `openObjects(${String(url)})`)
    }
    // A directory that does not exist is refused at open, as the store
    // refuses what it cannot reach.
    const { dir } = fileUrl()
    await assert.rejects(openObjects(pathToFileURL(path.join(dir, 'missing')).href), { code: 'BACKEND', kind: 'unreachable' })
    assert.deepEqual(tree(dir), [])
  })

  test('bad paths, tokens, values and options', async () => {
    const { url, dir } = fileUrl()
    const objects = await openObjects(url)
    try {
      await objects.put('ok.csv', 'kept', { token: 2n })
      const before = tree(dir)
      const badPaths = [
        [undefined, T], [null, T], [7, T], [['p'], T], [Buffer.from('p'), T],
        ['', R], ['/abs', R], ['a//b', R], ['a/', R], ['./a', R], ['a/../b', R], ['..', R],
        ['x.fenced', R], ['a.fenced/b', R], ['a#b', R], ['a\\b', R], ['a\u0000b', R], ['\ud800', R],
        ['a/'.repeat(600), R], ['s'.repeat(249), R],
      ]
      for (const [p, kind] of badPaths) {
        await rejectsInvalid(objects.put(p, 'bad', { token: 3n }), kind, `put path ${String(p)}`)
        await rejectsInvalid(objects.delete(p, { token: 3n }), kind, `delete path ${String(p)}`)
        await rejectsInvalid(objects.get(p), kind, `get path ${String(p)}`)
      }
      const badTokens = [
        [undefined, T], [null, T], [true, T], [{}, T], [Buffer.from('3'), T],
        [0, R], [0n, R], ['0', R], [-1, R], [-1n, R], ['-1', R], [1.5, R], [2 ** 53, R],
        [2n ** 63n, R], ['9223372036854775808', R], [2n ** 64n, R], ['03', R], ['', R],
      ]
      for (const [t, kind] of badTokens) {
        await rejectsInvalid(objects.put('ok.csv', 'bad', { token: t }), kind, `put token ${String(t)}`)
        await rejectsInvalid(objects.delete('ok.csv', { token: t }), kind, `delete token ${String(t)}`)
      }
      for (const [v, kind] of [[-1n, R], [2n ** 64n, R], ['x', R], [null, T], [1.5, R]]) {
        await rejectsInvalid(objects.put('ok.csv', 'bad', { token: 3n, seq: v }), kind, `seq ${String(v)}`)
        await rejectsInvalid(objects.put('ok.csv', 'bad', { token: 3n, expectedVersion: v }), kind, `expectedVersion ${String(v)}`)
        await rejectsInvalid(objects.delete('ok.csv', { token: 3n, expectedVersion: v }), kind, `delete expectedVersion ${String(v)}`)
      }
      for (const [v, kind] of [[undefined, T], [null, T], [42, T], [{}, T], [new Uint16Array(2), T], ['\ud800', R]]) {
        await rejectsInvalid(objects.put('ok.csv', v, { token: 3n }), kind, `value ${String(v)}`)
      }
      for (const [o, kind] of [[undefined, T], [null, T], [3n, T], ['3', T], [{}, T], [{ token: 3n, expected_version: 1n }, T], [{ token: 3n, holder: 7 }, T]]) {
        await rejectsInvalid(objects.put('ok.csv', 'bad', o), kind, `put options ${String(o)}`)
        await rejectsInvalid(objects.delete('ok.csv', o), kind, `delete options ${String(o)}`)
      }
      assert.deepEqual(tree(dir), before)
      assert.deepEqual(await objects.get('ok.csv'), { value: Buffer.from('kept'), version: 1n, token: 2n })
      // The fence did not move: token 2 still writes, at the next version.
      assert.deepEqual({ ...(await objects.put('ok.csv', 'next', { token: 2n })) }, { version: 2n, token: 2n })
    } finally {
      await objects.close()
    }
  })
})

describe('the handle', () => {
  test('close: later calls reject with CLOSED (after the face\'s conversions); closing twice is fine', async () => {
    const objects = await openObjects('memory:')
    await objects.put('p', 'v', { token: 1n })
    assert.equal(objects.closed, false)
    await objects.close()
    assert.equal(objects.closed, true)
    await objects.close()
    await assert.rejects(objects.get('p'), { code: 'CLOSED', name: 'ClosedError' })
    await assert.rejects(objects.put('p', 'v', { token: 2n }), { code: 'CLOSED' })
    await assert.rejects(objects.delete('p', { token: 2n }), { code: 'CLOSED' })
    // The face's own conversions still come first.
    await rejectsInvalid(objects.get(1), T, 'a path of the wrong type on a closed handle')
    await rejectsInvalid(objects.put('p', 'v', { token: 0n }), R, 'token 0 on a closed handle')
  })

  test('`await using` closes it (Symbol.asyncDispose)', { skip: typeof Symbol.asyncDispose !== 'symbol' && 'no Symbol.asyncDispose' }, async () => {
    const objects = await openObjects('memory:')
    await objects[Symbol.asyncDispose]()
    assert.equal(objects.closed, true)
  })

  test('each memory: handle is its own', async () => {
    const a = await Objects.open('memory:')
    const b = await openObjects('memory:')
    await a.put('p', 'a', { token: 1n })
    assert.equal(await b.get('p'), null)
    await a.close()
    await b.close()
  })

  test('Objects is made only by openObjects, and ESM exports the same', async () => {
    assert.throws(() => new Objects(), { code: 'INVALID_ARGUMENT', name: 'TypeError' })
    const esm = await import('fencing-tokens')
    assert.equal(esm.openObjects, openObjects)
    assert.equal(esm.Objects, Objects)
  })
})

/**
 * The test bucket (container) of a real S3 or Azure server
 * (`scripts/s3-server run`, `scripts/azure-server run`), or null after
 * registering a test that stands for it: skipped, or failed under the
 * cloud's FENCING_REQUIRE_*=1 (CI).
 */
function cloudOrSkip(scheme, variable, required, script) {
  const name = process.env[variable] ?? ''
  if (name !== '') return name
  const must = process.env[required] === '1'
  test(`${scheme}:// server`, { skip: !must && `no ${scheme}:// server: run the tests under \`${script} run -- ...\`` }, () => {
    throw new Error(`${required}=1 but ${variable} is not set: run under ${script} run`)
  })
  return null
}

for (const [scheme, variable, required, script] of [
  ['s3', 'FENCING_TEST_S3_BUCKET', 'FENCING_REQUIRE_S3', 'scripts/s3-server'],
  ['az', 'FENCING_TEST_AZ_CONTAINER', 'FENCING_REQUIRE_AZ', 'scripts/azure-server']
]) {
  describe(`${scheme}://`, () => {
    const name = cloudOrSkip(scheme, variable, required, script)
    if (name === null) return
    test('a paused holder is refused, and the newer write stays', async () => {
      await staleHolderIsRefused(`${scheme}://${name}/node-${process.pid}-${Date.now()}`)
    })
  })
}
