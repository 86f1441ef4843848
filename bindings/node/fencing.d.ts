// Types of the package's entry point (fencing.js / fencing.mjs). The value
// shapes (Lease, Receipt, options, ...) are generated from the Rust structs
// into index.d.ts and re-exported here, and so are the signatures (with
// their docs) of the Store members that fencing.js passes through as they
// are: `Store` declares only what the JavaScript wrapper adds or changes.

export type {
  AcquireOptions, AcquireWaitOptions, BatchDelete, BatchOp, BatchPut, Entry, EtcdCheck, EtcdPut, EtcdRevision,
  Events, EventsOptions, FenceOptions, Holding, LastWrite, Lease, LeaseOptions, LeaseRef, ListOptions,
  MetricsSnapshot, Page, Receipt, RecordedRejection, Rejection, RenewOptions, ScopeStatus, StoredObject,
  TokenLike, WriteOptions,
} from './index'

// What this file's own declarations use.
import type {
  AcquireWaitOptions, BatchOp, Entry, Holding, Lease, LeaseOptions, NativeStore, Receipt, RecordedRejection,
  StoredObject, TokenLike, WriteOptions,
} from './index'

/** Bytes to store: a Buffer or Uint8Array (copied), or a string (as UTF-8). */
export type Value = Buffer | Uint8Array | string

/** The greatest token, 2^63-1. */
export declare const MAX_TOKEN: bigint

/** A level of the core's logs, most severe first (`'off'`: none). */
export type LogLevel = 'off' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * What the package publishes on `diagnostics_channel.channel('fencing:log')`
 * for each of the core's log records: `target` is `'fencing'`, `message`
 * the event and its fields as `name=value` (scopes, tokens, holders and
 * keys, never a value or a password).
 */
export interface LogRecord {
  level: Exclude<LogLevel, 'off'>
  target: string
  message: string
}

/**
 * Which records reach `fencing:log`, for the whole process: `'info'` by
 * default (what needs attention, and reconnects; normal operation is
 * silent), `'debug'` adds every acquisition, renewal and release.
 * RangeError (INVALID_ARGUMENT) for anything else.
 */
export declare function setLogLevel(level: LogLevel): void

/** Parses the token text form (canonical decimal): `parseToken('42') === 42n`. */
export declare function parseToken(text: string): bigint

/**
 * The error a PostgreSQL error's SQLSTATE (`'FN001'`) and DETAIL (JSON)
 * describe (StaleTokenError with scope/presented/current, ...), or null for
 * a SQLSTATE that is not fencing's. Returned, not thrown.
 */
export declare function errorFromSqlstate(sqlstate: string, detail?: string | null): FencingError | null

/**
 * The fencing error a PostgreSQL driver's error carries (node-pg: `code` is
 * the SQLSTATE, `detail` the DETAIL), or null when it is not fencing's:
 * for `SELECT fencing.check(scope, token)` in your own transaction.
 */
export declare function fromPostgresError(err: unknown): FencingError | null

/**
 * The error an SQLite error message stands for when the `fencing_check`
 * view raised it (`'STALE_TOKEN: ...'`): StaleTokenError,
 * SequenceOutOfOrderError or InvalidArgumentError, with neutral details
 * (the message carries none); null for any other message. Returned, not thrown.
 */
export declare function errorFromSqliteMessage(message: string): FencingError | null

/**
 * The fencing error an SQLite driver's error carries (better-sqlite3,
 * `node:sqlite`: the message in `message`), or null when it is not a
 * rejection of the `fencing_check` view: for `INSERT INTO fencing_check
 * (scope, token) VALUES (?, ?)` in your own transaction (docs/sqlite.md).
 */
export declare function fromSqliteError(err: unknown): FencingError | null

/** A prom-client `Registry`, or anything that takes metrics the same way. */
export interface MetricsRegistry {
  registerMetric(metric: {
    name: string
    help: string
    type: string
    aggregator: string
    get(): Promise<{
      name: string
      help: string
      type: string
      aggregator: string
      values: Array<{ metricName: string; labels: Record<string, string>; value: number }>
    }>
    reset(): void
  }): void
}
/**
 * Registers the stores' metrics (`metricsText()`, read at each scrape) with a
 * prom-client registry: counters, the pause gauge and the call-duration
 * histogram, every sample labelled `store`. Pass every store of the process
 * at once: a registry takes a metric name only once.
 */
export declare function registerMetrics(stores: Store | Store[], registry: MetricsRegistry): void
/**
 * Opens the store a URL names: `sqlite:PATH`, `memory:`, `postgres://...`, options in the
 * query (`?clock=manual`); the grammar is in docs/semantics.md, "URLs and options".
 */
export declare function open(url: string): Promise<Store>

/**
 * Creates or upgrades the schema of the store a URL names without opening a
 * store (deploy time); idempotent. `memory:` has no schema.
 */
export declare function migrate(url: string): Promise<void>

/**
 * A handle on one fencing store. Every call that may touch disk returns a
 * Promise. The members it shares with the native handle (`nextToken`,
 * `acquire`, `put`, `execute`, `status`, `backendKind`, ...) are declared,
 * with their docs, in index.d.ts (`NativeStore`); this class declares the
 * ones fencing.js adds or changes.
 */
export declare class Store {
  private constructor()
  static open(url: string): Promise<Store>

  /**
   * Waits until the lease is free or `timeoutMs` passes (TIMEOUT after),
   * without spinning. `signal` gives up the wait; a lease it gets after
   * that is released at once.
   */
  acquireWait(scope: string, options: AcquireWaitOptions & { signal?: AbortSignal }): Promise<Lease>
  /**
   * Acquires (waiting up to `timeoutMs` when given) and keeps the lease
   * alive in the background until `release()`. `signal` stops a wait and,
   * once held, aborts `lease.signal` too.
   */
  lease(scope: string, options: HeldLeaseOptions): Promise<HeldLease>
  /**
   * Keeps a lease this process already acquired (as `acquire` resolved it)
   * alive in the background until `release()`, as `lease` does. Its
   * `remainingMs` is counted from this call: call it right after `acquire`,
   * or use `lease`. Anything but such a lease throws INVALID_ARGUMENT.
   */
  keepAlive(lease: Lease): HeldLease
  /**
   * Runs `fn` while holding the lease (renewed about every ttl/3), then ends
   * it (docs/semantics.md, "Ending a held lease"): held to the end, resolves
   * to `fn`'s result (or rejects with `fn`'s error); lost, rejects with the
   * loss (LeaseLostError naming the current holder, ClosedError, ...), with
   * `fn`'s error as its `cause` when `fn` failed.
   */
  withLease<T>(scope: string, options: HeldLeaseOptions, fn: (lease: HeldLease) => T | PromiseLike<T>): Promise<T>
  /**
   * A scope and a token bound once, for hot paths: `fence.putSync(key,
   * value)` and `fence.put(key, value)` write as `putSync` and `put` with
   * `{ token }` do, with the same checks and errors. A bad scope or token
   * throws here.
   */
  fence(scope: string, token: TokenLike): Fence
  /**
   * Each rejection the store records from now on (of `scope`, or of every
   * scope), oldest first: `for await (const r of await store.watchRejections())`.
   * `signal` ends the iteration, rejecting with its reason.
   */
  watchRejections(options?: { scope?: string; signal?: AbortSignal }): Promise<RejectionWatch>
  /**
   * Who holds `scope`'s lease, live: `{ scope, lease }` (the lease, or null)
   * as it is now, then after each change (acquired, renewed, released,
   * expired), in order: `for await (const h of store.watch(scope))`. Returns
   * at once; a bad scope or a closed store throws here. `signal` ends the
   * iteration, rejecting with its reason; `return()` (a `break`) ends it.
   */
  watch(scope: string, options?: { signal?: AbortSignal }): LeaseWatch
  /** `await using store = await open(url)`: closes the store. */
  [Symbol.asyncDispose](): Promise<void>
  /** `[fencing.Store LOCATION]`, with ` closed` once closed. */
  toString(): string
}

/**
 * The rest of `Store`: the native handle's members that fencing.js passes
 * through unchanged, less what it changes (above) and its internals.
 */
export interface Store
  extends Omit<
    NativeStore,
    'acquireWait' | 'lease' | 'keepAlive' | 'fence' | 'watchRejections' | 'watch' | 'inline' | 'putSyncFunction'
  > {}

/**
 * Opens fenced objects (docs/objects.md): `memory:` (this handle's own, in
 * memory), `file:///DIR` (an existing directory), `s3://BUCKET[/PREFIX]`
 * (credentials, region and endpoint from the `AWS_*` variables; options
 * `?endpoint=URL&region=R&allow_http=true`) or `az://CONTAINER[/PREFIX]`
 * (from the `AZURE_*` variables; options `?endpoint=URL&allow_http=true`).
 */
export declare function openObjects(url: string): Promise<Objects>

/**
 * Fenced objects: each object path keeps the greatest token accepted for
 * it and refuses an older one, as the store does for a scope. The calls are
 * the store's `put`, `delete` and `get` without the scope: the same options,
 * receipts and errors (StaleTokenError names the path as its `scope`).
 */
export declare class Objects {
  private constructor()
  static open(url: string): Promise<Objects>

  /**
   * Writes the object at `path` (a plain relative path, `a/b.csv`): STALE_TOKEN
   * when a greater token was accepted for the path, SEQUENCE_OUT_OF_ORDER,
   * VERSION_MISMATCH unless `expectedVersion` (when given) is its version
   * (0: it must not exist). Versions grow with every write, deletes included.
   */
  put(path: string, value: Value, options: WriteOptions): Promise<Receipt>
  /** Deletes the object (NOT_FOUND when there is none): `{ version: 0n, token }`; the path keeps its fence. */
  delete(path: string, options: WriteOptions): Promise<Receipt>
  /** The object now, with the token and version of the write that stored it; null when there is none. */
  get(path: string): Promise<StoredObject | null>
  /** Lets go of the objects; later calls reject with CLOSED. */
  close(): Promise<void>
  readonly closed: boolean
  /** `await using objects = await openObjects(url)`: closes the handle. */
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * A scope and a token bound once (`store.fence(scope, token)`). Writes take
 * a key and a value only; for `seq`, `holder` or `expectedVersion`, use the
 * store's methods. Closing the store closes its fences (CLOSED).
 */
export declare class Fence {
  private constructor()
  readonly scope: string
  readonly token: bigint
  /** `store.put(scope, key, value, { token })`. */
  put(key: string, value: Value): Promise<Receipt>
  /** `store.putSync(scope, key, value, { token })`: the receipt, or a throw. */
  putSync(key: string, value: Value): Receipt
}

/** The rejections a store records, as they are recorded (`store.watchRejections()`). */
export declare class RejectionWatch implements AsyncIterableIterator<RecordedRejection> {
  private constructor()
  next(): Promise<IteratorResult<RecordedRejection, undefined>>
  /** Ends the iteration and the wait in flight, if any. */
  return(): Promise<IteratorResult<RecordedRejection, undefined>>
  [Symbol.asyncIterator](): RejectionWatch
}

/** Who holds a scope's lease, as it changes (`store.watch(scope)`). */
export declare class LeaseWatch implements AsyncIterableIterator<Holding> {
  private constructor()
  /** The scope watched. */
  readonly scope: string
  next(): Promise<IteratorResult<Holding, undefined>>
  /** Ends the iteration and the wait in flight, if any. */
  return(): Promise<IteratorResult<Holding, undefined>>
  [Symbol.asyncIterator](): LeaseWatch
}

/** A lease kept alive in the background. Present `token` with every write. */
export declare class HeldLease {
  private constructor()
  readonly scope: string
  readonly holder: string
  readonly token: bigint
  readonly ttlMs: number
  /** The expiry as of the last renewal. */
  readonly expiresAt: Date
  /** The lease as of the last renewal. */
  readonly lease: Lease
  /** Aborts, with the loss as `reason`, when the keep-alive loses the lease. */
  readonly signal: AbortSignal
  /** The error that ended the keep-alive (usually LeaseLostError), or null. */
  readonly lost: FencingError | null
  /** Throws `lost` if the lease was lost. */
  check(): void
  /**
   * `store.put` in this lease's scope with its token, so the two cannot
   * disagree; rejects with the loss, writing nothing, once the lease is known
   * lost, and with StaleTokenError when a newer holder's token was accepted.
   */
  put(key: string, value: Buffer | Uint8Array | string, options?: LeaseWriteOptions): Promise<Receipt>
  /** `put` on the calling thread, like `store.putSync`. */
  putSync(key: string, value: Buffer | Uint8Array | string, options?: LeaseWriteOptions): Receipt
  /** `store.delete` in this lease's scope with its token. */
  delete(key: string, options?: LeaseWriteOptions): Promise<Receipt>
  /** `store.apply` in this lease's scope with its token: all or nothing. */
  apply(ops: BatchOp[]): Promise<Receipt[]>
  /** `store.claim`: raises this lease's scope's fence to its token. */
  claim(): Promise<void>
  /** `store.get` in this lease's scope, checked with its token (StaleTokenError once a newer one was accepted). */
  get(key: string): Promise<Entry | null>
  /**
   * Stops renewing and releases: true if the lease was held to the end,
   * false if it was lost (see `lost`) or already ended; rejects with CLOSED
   * (or the store's failure) when it cannot be released.
   */
  release(): Promise<boolean>
  /** `await using lease = await store.lease(...)`: releases the lease. */
  [Symbol.asyncDispose](): Promise<void>
  /** Ends the lease like `withLease`: the core's verdict, given whether the work failed. */
  finish(workFailed?: boolean): Promise<LeaseVerdict>
  /** Lets the process exit while the lease is held; returns this lease. */
  unref(): this
  /** `await using`: ends the lease, throwing the loss if it was lost. */
  [Symbol.asyncDispose](): Promise<void>
}

/** Options of a write through a held lease (the token and scope are the lease's). */
export interface LeaseWriteOptions {
  expectedVersion?: TokenLike
}

/** `lease()` and `withLease()` options: the lease's, and an AbortSignal. */
export interface HeldLeaseOptions extends LeaseOptions {
  signal?: AbortSignal
}

/** The verdict on a held lease (docs/semantics.md, "Ending a held lease"). */
export interface LeaseVerdict {
  /** Held to the end and released. */
  released: boolean
  /** The loss (LeaseLostError, ClosedError, ...), or null when released. */
  lost: FencingError | null
  /** Whether the work's error goes on the loss as its `cause` (the work failed and the lease was lost). */
  attachWorkError: boolean
}

export type ErrorCode =
  | 'STALE_TOKEN'
  | 'SEQUENCE_OUT_OF_ORDER'
  | 'VERSION_MISMATCH'
  | 'NOT_FOUND'
  | 'LEASE_HELD'
  | 'LEASE_LOST'
  | 'TOKEN_EXHAUSTED'
  | 'INVALID_ARGUMENT'
  | 'TIMEOUT'
  | 'BACKEND'
  | 'CLOSED'

/** Every error the store reports; `code` tells them apart without reading messages. */
export declare class FencingError extends Error {
  readonly code: ErrorCode
}
/** The token is older than the fence (or equal to a sealed one). Retrying can never succeed. */
/**
 * The token is older than the fence (or equal to a sealed one). Retrying can never succeed.
 * From `fromSqliteError` the details are `null`: the view's message carries none.
 */
export declare class StaleTokenError extends FencingError {
  readonly code: 'STALE_TOKEN'
  readonly scope: string
  readonly presented: bigint
  readonly current: bigint
}
/** From `fromSqliteError` the details are `null`: the view's message carries none. */
export declare class SequenceOutOfOrderError extends FencingError {
  readonly code: 'SEQUENCE_OUT_OF_ORDER'
  readonly presented: bigint
  readonly last: bigint
}
export declare class VersionMismatchError extends FencingError {
  readonly code: 'VERSION_MISMATCH'
  readonly expected: bigint
  /** 0n: the entry does not exist. */
  readonly actual: bigint
}
export declare class NotFoundError extends FencingError {
  readonly code: 'NOT_FOUND'
  readonly scope: string
  readonly key: string
}
export declare class LeaseHeldError extends FencingError {
  readonly code: 'LEASE_HELD'
  readonly scope: string
  readonly holder: string
  readonly token: bigint
  readonly remainingMs: number
}
export declare class LeaseLostError extends FencingError {
  readonly code: 'LEASE_LOST'
  readonly scope: string
  /** The lease that is current now, if any. */
  readonly currentToken: bigint | null
  readonly currentHolder: string | null
}
export declare class TokenExhaustedError extends FencingError {
  readonly code: 'TOKEN_EXHAUSTED'
}
/**
 * Bad input. Thrown as a `TypeError` (wrong type) or `RangeError` (bad
 * value) with `code: 'INVALID_ARGUMENT'`; `instanceof` recognises both.
 */
export declare class InvalidArgumentError extends FencingError {
  readonly code: 'INVALID_ARGUMENT'
}
export declare class TimeoutError extends FencingError {
  readonly code: 'TIMEOUT'
}
/** How a backend failed (docs/semantics.md, "Errors"); more kinds may be added. */
export type BackendErrorKind =
  | 'busy'
  | 'timeout'
  | 'unreachable'
  | 'refused'
  | 'corrupt'
  | 'outcome_unknown'
  | 'other'
export declare class BackendError extends FencingError {
  readonly code: 'BACKEND'
  readonly kind: BackendErrorKind
}
export declare class ClosedError extends FencingError {
  readonly code: 'CLOSED'
}
