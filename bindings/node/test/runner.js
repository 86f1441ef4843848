'use strict'
// Replays the shared scenario files (tests/scenarios/*.json) through the
// package's public API. Follows the Rust runner (tests/runner/src/lib.rs):
// the same argument decoding, the same rendering of results and errors
// (token-domain numbers as decimal text), the same subset comparison.

const fs = require('node:fs')
const path = require('node:path')
const { open, openObjects } = require('fencing-tokens')

const SCENARIO_DIR = path.resolve(__dirname, '../../../tests/scenarios')

/** Every scenario file, sorted by name. */
function loadAll(dir = SCENARIO_DIR) {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => load(path.join(dir, f)))
}

function load(file) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'))
  if (typeof doc.name !== 'string') throw new Error(`${file}: scenario needs a "name"`)
  if (!Array.isArray(doc.steps)) throw new Error(`${file}: scenario needs "steps"`)
  const query = []
  for (const [k, v] of Object.entries(doc.options ?? {})) {
    if (typeof v !== 'string' && typeof v !== 'boolean') {
      throw new Error(`${file}: option ${k}: unsupported value ${JSON.stringify(v)}`)
    }
    query.push(`${k}=${v}`)
  }
  return { name: doc.name, file, query: query.join('&'), steps: doc.steps }
}

function urlFor(scenario, base) {
  if (scenario.query === '') return base
  return `${base}${base.includes('?') ? '&' : '?'}${scenario.query}`
}

/** Opens `base` (with the scenario's options) and replays every step; throws at the first mismatch. */
async function run(scenario, base) {
  const store = await open(urlFor(scenario, base))
  const session = new Session()
  const holds = session.holds
  try {
    for (const [i, step] of scenario.steps.entries()) {
      try {
        await runStep(store, step, session)
      } catch (e) {
        e.message = `step ${i + 1} (${JSON.stringify(step)}): ${e.message}`
        throw e
      }
    }
  } finally {
    for (const h of holds.values()) h.work.resolve()
    await Promise.allSettled([...holds.values()].map((h) => h.ended))
    await session.objects?.close()
    await store.close()
  }
}

/**
 * What a scenario keeps between its steps: the leases `hold` holds, by
 * scope, until `finish`; its fenced objects (`memory:`), opened by its
 * first `object_*` step.
 */
class Session {
  holds = new Map()
  objects = null

  async openedObjects() {
    this.objects ??= await openObjects('memory:')
    return this.objects
  }
}

/** The failed work's own error, in a `finish` step with `work: "failed"`. */
class WorkFailed extends Error {}

/**
 * `hold`: starts `withLease` with a work that runs until the scope's
 * `finish` step settles it; resolves once the work runs (the lease is held)
 * with the lease, or rejects like `withLease` when it cannot start.
 */
async function hold(store, step, holds) {
  const scope = requiredText(step, 'scope')
  if (holds.has(scope)) throw new RunnerError(`${JSON.stringify(scope)} is already held by an earlier hold step`)
  let started
  const running = new Promise((resolve) => { started = resolve })
  const work = {}
  const done = new Promise((resolve, reject) => Object.assign(work, { resolve, reject }))
  const ended = store.withLease(scope, { holder: requiredText(step, 'holder'), ttlMs: step.ttl_ms }, (lease) => {
    started(lease)
    return done
  })
  const lease = await Promise.race([running, ended])
  holds.set(scope, { work, ended })
  return renderLease(lease.lease)
}

/**
 * `finish`: settles the hold's work (ok or failed) and awaits `withLease`:
 * resolved or rejected with the work's own error is `{released: true}`;
 * any other rejection is the loss, `cause: "work"` when the work's error
 * is attached to it.
 */
async function finish(step, holds) {
  const scope = requiredText(step, 'scope')
  if (step.work !== 'ok' && step.work !== 'failed') {
    throw new RunnerError(`"work" must be "ok" or "failed", not ${JSON.stringify(step.work)}`)
  }
  const h = holds.get(scope)
  if (h === undefined) throw new RunnerError(`no hold step holds ${JSON.stringify(scope)}`)
  holds.delete(scope)
  const failure = new WorkFailed('the work failed')
  if (step.work === 'ok') h.work.resolve('done')
  else h.work.reject(failure)
  try {
    await h.ended
  } catch (e) {
    if (e === failure) return { released: true }
    if (typeof e?.code === 'string') e.scenarioCause = e.cause === failure ? 'work' : null
    throw e
  }
  return { released: true }
}

async function runStep(store, step, session = new Session()) {
  let outcome
  try {
    if (step.op === 'hold') outcome = { ok: await hold(store, step, session.holds) }
    else if (step.op === 'finish') outcome = { ok: await finish(step, session.holds) }
    else if (typeof step.op === 'string' && step.op.startsWith('object_')) outcome = { ok: await objectStep(session, step) }
    else outcome = { ok: await execute(store, step) }
  } catch (e) {
    if (e instanceof RunnerError) throw e
    if (typeof e?.code !== 'string') throw e // not an outcome of the operation
    outcome = { err: e }
  }
  if (step.error !== undefined) {
    if ('ok' in outcome) {
      throw new Error(`expected error ${JSON.stringify(step.error)}, got success ${show(outcome.ok)}`)
    }
    const got = renderError(outcome.err)
    if (step.op === 'finish') got.cause = outcome.err.scenarioCause ?? null
    subset(step.error, got, `error ${show(got)}`)
  } else if ('err' in outcome) {
    throw new Error(`unexpected error ${outcome.err.code}: ${outcome.err.message}`)
  } else if (step.expect !== undefined) {
    subset(step.expect, outcome.ok, `result ${show(outcome.ok)}`)
  }
}

/** A problem with the scenario file itself (not an outcome of the operation). */
class RunnerError extends Error {}

/** What the runner refuses before the call, as the binding's parser would (a JSON number token). */
function invalid(message) {
  const e = new RangeError(message)
  e.code = 'INVALID_ARGUMENT'
  return e
}

/** A string argument: literal text, or `{repeat, count}`. */
function text(v) {
  if (typeof v === 'string') return v
  if (v !== null && typeof v === 'object' && typeof v.repeat === 'string' && Number.isInteger(v.count) && v.count >= 0) {
    return v.repeat.repeat(v.count)
  }
  return undefined
}

function requiredText(step, name) {
  const s = text(step[name])
  if (s === undefined) throw new RunnerError(`missing string ${JSON.stringify(name)}`)
  return s
}

function optionalText(step, name) {
  const v = step[name]
  if (v === undefined || v === null) return undefined
  const s = text(v)
  if (s === undefined) throw invalid(`${name} must be a string`)
  return s
}

/** A token-domain number: decimal text only (a JSON number is refused, as in the Rust runner). */
function decimal(step, name) {
  const v = step[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw invalid(`${name} must be decimal text, got ${JSON.stringify(v)}`)
  return v
}

function token(step, name) {
  const v = step[name]
  if (typeof v !== 'string') throw invalid(`${name} must be a token, got ${JSON.stringify(v)}`)
  return v
}

function fence(step) {
  const f = { token: token(step, 'token') }
  const seq = decimal(step, 'seq')
  if (seq !== undefined) f.seq = seq
  const holder = optionalText(step, 'holder')
  if (holder !== undefined) f.holder = holder
  return f
}

function value(step) {
  const s = text(step.value)
  if (s !== undefined) return Buffer.from(s, 'utf8')
  if (typeof step.value_hex === 'string') {
    if (step.value_hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(step.value_hex)) throw invalid('bad value_hex')
    return Buffer.from(step.value_hex, 'hex')
  }
  throw invalid('missing value')
}

function withVersion(step, options) {
  const v = decimal(step, 'expected_version')
  if (v !== undefined) options.expectedVersion = v
  return options
}

function ops(step) {
  if (!Array.isArray(step.ops)) throw invalid('ops must be a list')
  return step.ops.map((item) => {
    let op
    if (text(item.put) !== undefined) op = { put: text(item.put), value: value(item) }
    else if (text(item.delete) !== undefined) op = { delete: text(item.delete) }
    else throw invalid(`bad batch item ${JSON.stringify(item)}`)
    return withVersion(item, op)
  })
}

async function execute(store, step) {
  const op = step.op
  if (typeof op !== 'string') throw new RunnerError('step needs an "op"')
  const scope = () => requiredText(step, 'scope')
  switch (op) {
    case 'open': {
      const other = await open(requiredText(step, 'url'))
      await other.close()
      return {}
    }
    case 'close':
      await store.close()
      return {}
    case 'next_token':
      return { token: (await store.nextToken(scope())).toString() }
    case 'advance_counter': {
      const s = scope()
      return { counter: (await store.advanceCounter(s, token(step, 'floor'))).toString() }
    }
    case 'acquire': {
      const [s, holder] = [scope(), requiredText(step, 'holder')]
      return renderLease(await store.acquire(s, { holder, ttlMs: step.ttl_ms }))
    }
    case 'acquire_wait': {
      const [s, holder] = [scope(), requiredText(step, 'holder')]
      return renderLease(await store.acquireWait(s, { holder, ttlMs: step.ttl_ms, timeoutMs: step.timeout_ms }))
    }
    case 'renew': {
      const s = scope()
      return renderLease(await store.renew({ scope: s, token: token(step, 'token') }, { ttlMs: step.ttl_ms }))
    }
    case 'release': {
      const s = scope()
      return { released: await store.release({ scope: s, token: token(step, 'token') }) }
    }
    case 'put': {
      const [s, key] = [scope(), requiredText(step, 'key')]
      const options = withVersion(step, fence(step))
      return renderReceipt(await store.put(s, key, value(step), options))
    }
    case 'delete': {
      const [s, key] = [scope(), requiredText(step, 'key')]
      return renderReceipt(await store.delete(s, key, withVersion(step, fence(step))))
    }
    case 'apply': {
      const s = scope()
      const receipts = await store.apply(s, ops(step), fence(step))
      return { receipts: receipts.map(renderReceipt) }
    }
    case 'claim': {
      const s = scope()
      await store.claim(s, fence(step))
      return {}
    }
    case 'get': {
      const [s, key] = [scope(), requiredText(step, 'key')]
      const options = step.token === undefined || step.token === null ? undefined : fence(step)
      return renderEntry(await store.get(s, key, options))
    }
    case 'list': {
      const s = scope()
      const options = { limit: step.limit ?? 100 }
      const after = optionalText(step, 'after')
      if (after !== undefined) options.after = after
      const page = await store.list(s, options)
      return { keys: page.keys, next: page.next }
    }
    case 'fence_of':
      return { fence: (await store.fenceOf(scope())).toString() }
    case 'status': {
      const st = await store.status(scope())
      return {
        counter: st.counter.toString(),
        fence: st.fence.toString(),
        lease: st.lease === null ? null : renderLease(st.lease),
        entries: st.entries.toString(),
      }
    }
    case 'retire':
      return { retired: await store.retire(scope()) }
    case 'advance_clock':
      await store.advanceClock(step.ms)
      return {}
    case 'metrics':
      return renderMetrics(store.metrics())
    default:
      throw new RunnerError(`unknown op ${JSON.stringify(op)}`)
  }
}

/** The fenced objects' steps, on the scenario's own `memory:` objects. */
async function objectStep(session, step) {
  const op = step.op
  if (op === 'object_open') {
    const other = await openObjects(requiredText(step, 'url'))
    await other.close()
    return {}
  }
  const path = requiredText(step, 'path')
  const objects = await session.openedObjects()
  switch (op) {
    case 'object_put':
      return renderReceipt(await objects.put(path, value(step), withVersion(step, fence(step))))
    case 'object_delete':
      return renderReceipt(await objects.delete(path, withVersion(step, fence(step))))
    case 'object_get':
      return renderEntry(await objects.get(path))
    default:
      throw new RunnerError(`unknown op ${JSON.stringify(op)}`)
  }
}

function renderLease(l) {
  return {
    scope: l.scope,
    holder: l.holder,
    token: l.token.toString(),
    ttl_ms: l.ttlMs,
    remaining_ms: l.remainingMs,
  }
}

function renderReceipt(r) {
  return { version: r.version.toString(), token: r.token.toString() }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function renderEntry(e) {
  if (e === null) return { found: false }
  const out = {
    found: true,
    value_hex: e.value.toString('hex'),
    value_len: e.value.length,
    version: e.version.toString(),
    token: e.token.toString(),
  }
  try {
    out.value = utf8.decode(e.value)
  } catch {
    // not UTF-8: only value_hex
  }
  return out
}

const snake = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

function renderMetrics(m) {
  const out = {}
  for (const [k, v] of Object.entries(m)) {
    if (k !== 'rejections') out[snake(k)] = v.toString()
  }
  out.rejections = m.rejections.map((r) => ({
    code: r.code,
    scope: r.scope,
    key: r.key,
    presented: r.presented.toString(),
    current: r.current.toString(),
    holder: r.holder,
  }))
  return out
}

const str = (v) => (v === null || v === undefined ? null : v.toString())

/** An error as the scenario files spell it. */
function renderError(e) {
  const out = { code: e.code }
  switch (e.code) {
    case 'STALE_TOKEN':
      return { ...out, scope: e.scope, presented: str(e.presented), current: str(e.current) }
    case 'SEQUENCE_OUT_OF_ORDER':
      return { ...out, presented: str(e.presented), last: str(e.last) }
    case 'VERSION_MISMATCH':
      return { ...out, expected: str(e.expected), actual: str(e.actual) }
    case 'NOT_FOUND':
      return { ...out, scope: e.scope, key: e.key }
    case 'LEASE_HELD':
      return { ...out, holder: e.holder, token: str(e.token), remaining_ms: e.remainingMs }
    case 'LEASE_LOST':
      return { ...out, current_token: str(e.currentToken), current_holder: e.currentHolder ?? null }
    default:
      return out
  }
}

/** `want` matches `got` when every field of `want` is in `got` with a matching value. */
function subset(want, got, where, at = '') {
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)
  if (isObject(want) && isObject(got)) {
    for (const [k, wv] of Object.entries(want)) {
      if (!(k in got) || got[k] === undefined) {
        if (wv === null) continue
        throw new Error(`${where}: ${at}${k}: missing, expected ${show(wv)}`)
      }
      subset(wv, got[k], where, `${at}${k}: `)
    }
    return
  }
  if (Array.isArray(want) && Array.isArray(got) && want.length === got.length) {
    want.forEach((wv, i) => subset(wv, got[i], where, `${at}[${i}]: `))
    return
  }
  if (!Array.isArray(want) && !isObject(want) && want === got) return
  throw new Error(`${where}: ${at}expected ${show(want)}, got ${show(got)}`)
}

function show(v) {
  return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x))
}

module.exports = { loadAll, run, SCENARIO_DIR }
