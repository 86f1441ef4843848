//! `NativeStore`: one method per core operation. Each converts its
//! arguments on the JavaScript thread (a bad argument throws before anything
//! runs), then hands the core call to [`run::settle`].

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use napi::bindgen_prelude::{Function, PromiseRaw, Unknown};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::Env;
use napi_derive::napi;

use crate::cancel::NativeCancel;
use crate::convert::{self, Js, FENCE_KEYS};
use crate::errors::{Conv, ErrorValue, Failure};
use crate::fast;
use crate::fence::NativeFence;
use crate::keepalive::{NativeKeepAlive, SharedOnLost};
use crate::run;
use crate::types::{Entry, EtcdCheck, Events, Lease, MetricsSnapshot, Page, Receipt, ScopeStatus};
use crate::watch::{NativeLeaseWatch, NativeRejectionWatch};

/// `events` without a limit (docs/operations.md).
const DEFAULT_EVENTS_LIMIT: usize = fencing::defaults::EVENTS_LIMIT;

/// A handle on one fencing store (the core's `Store`). Made by `open()`.
///
/// `close()` lets go of the core store at once rather than when V8 collects
/// this handle: napi runs a wrapped object's finalizer only from the event
/// loop, after a collection, so a loop that opens and closes stores without
/// yielding to the event loop (`await` on settled promises never does) kept
/// every store's memory (the memory backend's shards, some 18 KiB) until it
/// ended. A closed handle answers every call through one shared closed
/// store: the same argument checks first, then CLOSED.
#[napi]
pub struct NativeStore {
    state: Shared,
    inline: bool,
    /// `fencing::Store::location`, kept after close.
    location: String,
    /// `fencing::Store::backend_kind`, kept after close.
    backend_kind: fencing::BackendKind,
}

/// The handle's state, shared with the fences it made (`fence.rs`), so that
/// closing the handle closes them too.
pub(crate) type Shared = Arc<Mutex<State>>;

pub(crate) enum State {
    Open(fencing::Store),
    /// The metrics as they were when the handle closed.
    Closed(Box<fencing::MetricsSnapshot>),
}

/// The store every closed handle delegates to.
pub(crate) fn closed_store() -> fencing::Store {
    static CLOSED: OnceLock<fencing::Store> = OnceLock::new();
    CLOSED
        .get_or_init(|| {
            let store = fencing::Store::open("memory:").expect("memory: always opens");
            store.close();
            store
        })
        .clone()
}

impl NativeStore {
    pub(crate) fn new(store: fencing::Store, inline: bool) -> NativeStore {
        NativeStore {
            location: store.location().to_owned(),
            backend_kind: store.backend_kind(),
            state: Arc::new(Mutex::new(State::Open(store))),
            inline,
        }
    }

    pub(crate) fn shared(&self) -> (Shared, bool) {
        (self.state.clone(), self.inline)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The core store (a clone, sharing it), or the closed one.
    fn store(&self) -> fencing::Store {
        store_of(&self.state)
    }

    /// Converts on this thread, then runs `work` with a clone of the store.
    fn call<'env, A, T, V, W, C>(
        &self,
        env: &'env Env,
        args: impl FnOnce() -> Conv<A>,
        work: W,
        convert: C,
    ) -> napi::Result<PromiseRaw<'env, V>>
    where
        A: Send + 'static,
        T: Send + 'static,
        V: napi::bindgen_prelude::ToNapiValue + 'static,
        W: FnOnce(&fencing::Store, A) -> fencing::Result<T> + Send + 'static,
        C: FnOnce(T) -> V + 'static,
    {
        let args = args().map_err(|f| f.into_napi(env))?;
        let store = self.store();
        run::settle(
            env,
            self.inline,
            move || work(&store, args),
            move |_env, value| Ok(convert(value)),
        )
    }
}

pub(crate) fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The core store (a clone, sharing it), or the closed one.
pub(crate) fn store_of(state: &Shared) -> fencing::Store {
    match &*lock(state) {
        State::Open(store) => store.clone(),
        State::Closed(_) => closed_store(),
    }
}

fn js(env: &Env, v: &Unknown) -> Js {
    Js::new(env, v)
}

#[napi]
impl NativeStore {
    // ----- the counter -----

    /// Increments the scope's counter and returns the new token.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string",
        ts_return_type = "Promise<bigint>"
    )]
    pub fn next_token<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
    ) -> napi::Result<PromiseRaw<'env, u64>> {
        self.call(
            env,
            || convert::string(js(env, &scope), "scope"),
            |s, scope| s.next_token(&scope),
            |t| t.get(),
        )
    }

    /// Raises the scope's counter to at least `floor`; resolves to the counter.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, floor: TokenLike",
        ts_return_type = "Promise<bigint>"
    )]
    pub fn advance_counter<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        floor: Unknown,
    ) -> napi::Result<PromiseRaw<'env, u64>> {
        self.call(
            env,
            || {
                Ok((
                    convert::string(js(env, &scope), "scope")?,
                    convert::token(js(env, &floor), "floor")?,
                ))
            },
            |s, (scope, floor)| s.advance_counter(&scope, floor),
            |c| c,
        )
    }

    // ----- leases -----

    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, options: AcquireOptions",
        ts_return_type = "Promise<Lease>"
    )]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Lease>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let o = required(js(env, &options), &["holder", "ttlMs"])?;
                Ok((scope, o.string("holder")?, o.millis("ttlMs")?))
            },
            |s, (scope, holder, ttl)| s.acquire(&scope, &holder, ttl),
            Lease::from,
        )
    }

    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, options: AcquireWaitOptions, cancel?: NativeCancel",
        ts_return_type = "Promise<Lease>"
    )]
    pub fn acquire_wait<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        options: Unknown,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, Lease>> {
        // Blocks while it waits: never inline, whatever the backend.
        let args = (|| {
            let scope = convert::string(js(env, &scope), "scope")?;
            let o = required(js(env, &options), &["holder", "ttlMs", "timeoutMs"])?;
            Ok((
                scope,
                o.string("holder")?,
                o.millis("ttlMs")?,
                o.millis("timeoutMs")?,
            ))
        })()
        .map_err(|f: Failure| f.into_napi(env))?;
        let store = self.store();
        let gave_up = cancel.map(NativeCancel::gave_up);
        run::settle(
            env,
            false,
            move || {
                let (scope, holder, ttl, timeout) = args;
                match gave_up {
                    Some(g) => store.acquire_wait_unless(&scope, &holder, ttl, timeout, &g),
                    None => store.acquire_wait(&scope, &holder, ttl, timeout),
                }
            },
            |_env, lease| Ok(Lease::from(lease)),
        )
    }

    /// Extends the lease while it is current (default TTL: the lease's own);
    /// else LEASE_LOST.
    #[napi(
        catch_unwind,
        ts_args_type = "lease: LeaseRef & { ttlMs?: number }, options?: RenewOptions",
        ts_return_type = "Promise<Lease>"
    )]
    pub fn renew<'env>(
        &self,
        env: &'env Env,
        lease: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Lease>> {
        self.call(
            env,
            || {
                let lease = js(env, &lease);
                let (scope, token) = convert::lease_ref(lease, "lease")?;
                let o = convert::options(js(env, &options), "options", &["ttlMs"], false)?;
                let given = o.map(|o| o.optional_millis("ttlMs")).transpose()?.flatten();
                // The rule is the core's; a missing option is a TypeError here.
                let own = if given.is_none() {
                    convert::lease_ttl(lease)?
                } else {
                    None
                };
                let ttl = fencing::defaults::renew_ttl(given, own).map_err(|_| {
                    Failure::Type("renew needs options.ttlMs (or lease.ttlMs)".into())
                })?;
                Ok((scope, token, ttl))
            },
            |s, (scope, token, ttl)| s.renew(&scope, token, ttl),
            Lease::from,
        )
    }

    /// Ends the lease early if it is still current; resolves to whether it did.
    #[napi(
        catch_unwind,
        ts_args_type = "lease: LeaseRef",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn release<'env>(
        &self,
        env: &'env Env,
        lease: Unknown,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        self.call(
            env,
            || convert::lease_ref(js(env, &lease), "lease"),
            |s, (scope, token)| s.release(&scope, token),
            |released| released,
        )
    }

    /// Acquires (waiting up to `timeoutMs` when given) and keeps the lease
    /// alive with the core's keep-alive (renewal about every ttl/3 on a
    /// background thread). `onLost` is called once if the lease is lost.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, options: LeaseOptions, onLost?: (error: Error) => void, cancel?: NativeCancel",
        ts_return_type = "Promise<NativeKeepAlive>"
    )]
    pub fn lease<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        options: Unknown,
        on_lost: Unknown,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, NativeKeepAlive>> {
        let args = (|| {
            let scope = convert::string(js(env, &scope), "scope")?;
            let o = required(js(env, &options), &["holder", "ttlMs", "timeoutMs"])?;
            let args = (
                scope,
                o.string("holder")?,
                o.millis("ttlMs")?,
                o.optional_millis("timeoutMs")?,
            );
            let callback = on_lost_callback(&on_lost)?;
            Ok((args, callback))
        })()
        .map_err(|f: Failure| f.into_napi(env))?;
        let ((scope, holder, ttl, timeout), callback) = args;
        let store = self.store();
        let inline = self.inline;
        let (on_lost, kept) = shared_on_lost(callback);
        let gave_up = cancel.map(NativeCancel::gave_up);
        run::settle(
            env,
            inline && timeout.is_none(),
            move || match (timeout, gave_up) {
                (Some(t), Some(g)) => store.lease_wait_unless(&scope, &holder, ttl, t, on_lost, &g),
                _ => store.lease_wait(&scope, &holder, ttl, timeout, on_lost),
            },
            move |_env, guard| Ok(NativeKeepAlive::new(guard, inline, kept)),
        )
    }

    /// Keeps a lease already acquired (as `acquire` resolved it) alive as
    /// `lease` does: renewed about every ttl/3, released at the end.
    /// `onLost` is called once if the lease is lost. Its `remainingMs` is
    /// counted from this call: call it right after `acquire`.
    #[napi(
        catch_unwind,
        ts_args_type = "lease: Lease, onLost?: (error: Error) => void",
        ts_return_type = "NativeKeepAlive"
    )]
    pub fn keep_alive(
        &self,
        env: &Env,
        lease: Unknown,
        on_lost: Unknown,
    ) -> napi::Result<NativeKeepAlive> {
        let (lease, callback) = (|| {
            let lease = convert::lease(js(env, &lease), "lease")?;
            Ok((lease, on_lost_callback(&on_lost)?))
        })()
        .map_err(|f: Failure| f.into_napi(env))?;
        let store = self.store();
        let (on_lost, kept) = shared_on_lost(callback);
        run::now(|| {
            Ok(match on_lost {
                Some(on_lost) => store.keep_alive_with(lease, on_lost),
                None => store.keep_alive(lease),
            })
        })
        .map(|guard| NativeKeepAlive::new(guard, self.inline, kept))
        .map_err(|e| Failure::Core(e).into_napi(env))
    }

    // ----- the fenced store -----

    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, key: string, value: Buffer | Uint8Array | string, options: WriteOptions",
        ts_return_type = "Promise<Receipt>"
    )]
    pub fn put<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        key: Unknown,
        value: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Receipt>> {
        self.call(
            env,
            || put_args(env, &scope, &key, &value, &options),
            |s, (scope, fence, op)| s.execute(&scope, &fence, op),
            Receipt::from,
        )
    }

    /// `put` without a Promise: returns the receipt or throws the same
    /// errors. Runs on the calling thread, so on `sqlite:` it blocks the
    /// event loop for the write (an fsync), like `fs.writeFileSync`; made
    /// for `memory:` and for scripts.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, key: string, value: Buffer | Uint8Array | string, options: WriteOptions",
        ts_return_type = "Receipt"
    )]
    pub fn put_sync(
        &self,
        env: &Env,
        scope: Unknown,
        key: Unknown,
        value: Unknown,
        options: Unknown,
    ) -> napi::Result<Receipt> {
        let (scope, fence, op) =
            put_args(env, &scope, &key, &value, &options).map_err(|f| f.into_napi(env))?;
        run::now(|| self.store().execute(&scope, &fence, op))
            .map(Receipt::from)
            .map_err(|e| Failure::Core(e).into_napi(env))
    }

    /// A scope and a token converted once, for hot paths: its `put` and
    /// `putSync` take only a key and a value (`fence.rs`). A bad scope or
    /// token throws here, as the same argument of `put` would.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, token: TokenLike",
        ts_return_type = "NativeFence"
    )]
    pub fn fence(&self, env: &Env, scope: Unknown, token: Unknown) -> napi::Result<NativeFence> {
        let scope = convert::string(js(env, &scope), "scope").map_err(|f| f.into_napi(env))?;
        let token = convert::token(js(env, &token), "token").map_err(|f| f.into_napi(env))?;
        let (state, inline) = self.shared();
        Ok(NativeFence::new(state, inline, scope, token))
    }

    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, key: string, options: WriteOptions",
        ts_return_type = "Promise<Receipt>"
    )]
    pub fn delete<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        key: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Receipt>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let key = convert::string(js(env, &key), "key")?;
                let (fence, version) = write_options(js(env, &options))?;
                Ok((
                    scope,
                    fence,
                    with_version(fencing::Op::delete(key), version),
                ))
            },
            |s, (scope, fence, op)| s.execute(&scope, &fence, op),
            Receipt::from,
        )
    }

    /// One put or delete, in the form `apply` takes (`{ put, value }` or
    /// `{ delete }`, with `expectedVersion?`), checked and counted as
    /// `put` or `delete` is.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, op: BatchOp, options: FenceOptions",
        ts_return_type = "Promise<Receipt>"
    )]
    pub fn execute<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        op: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Receipt>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let op = convert::op(js(env, &op), None)?;
                let o = required(js(env, &options), &FENCE_KEYS)?;
                Ok((scope, op, convert::fence(&o)?))
            },
            |s, (scope, op, fence)| s.execute(&scope, &fence, op),
            Receipt::from,
        )
    }

    /// Several puts and deletes under one check: all or nothing.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, ops: BatchOp[], options: FenceOptions",
        ts_return_type = "Promise<Receipt[]>"
    )]
    pub fn apply<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        ops: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Vec<Receipt>>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let ops = convert::batch(js(env, &ops), "ops")?;
                let o = required(js(env, &options), &FENCE_KEYS)?;
                Ok((scope, ops, convert::fence(&o)?))
            },
            |s, (scope, ops, fence)| s.apply(&scope, &fence, ops),
            |receipts| receipts.into_iter().map(Receipt::from).collect(),
        )
    }

    /// Raises the fence to `options.token` without writing.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, options: FenceOptions",
        ts_return_type = "Promise<void>"
    )]
    pub fn claim<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let o = required(js(env, &options), &FENCE_KEYS)?;
                Ok((scope, convert::fence(&o)?))
            },
            |s, (scope, fence)| s.claim(&scope, &fence),
            |()| (),
        )
    }

    /// On an etcd store: checks `options.token` against the scope's fence now
    /// and says what your own etcd transaction must compare (`unchanged`) and
    /// put (`puts`) so that it commits only while the token is current,
    /// raising the fence with it (docs/etcd.md). Other stores reject with
    /// INVALID_ARGUMENT.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, options: FenceOptions",
        ts_return_type = "Promise<EtcdCheck>"
    )]
    pub fn etcd_check<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, EtcdCheck>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let o = required(js(env, &options), &FENCE_KEYS)?;
                Ok((scope, convert::fence(&o)?))
            },
            |s, (scope, fence)| s.etcd_check(&scope, &fence),
            EtcdCheck::from,
        )
    }

    /// Reads an entry; with a token, the read is checked like a write
    /// (STALE_TOKEN).
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, key: string, options?: FenceOptions",
        ts_return_type = "Promise<Entry | null>"
    )]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        key: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Option<Entry>>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let key = convert::string(js(env, &key), "key")?;
                let fence =
                    match convert::options(js(env, &options), "options", &FENCE_KEYS, false)? {
                        Some(o) => Some(convert::fence(&o)?),
                        None => None,
                    };
                Ok((scope, key, fence))
            },
            |s, (scope, key, fence)| s.get(&scope, &key, fence.as_ref()),
            |entry| entry.map(Entry::from),
        )
    }

    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, options?: ListOptions",
        ts_return_type = "Promise<Page>"
    )]
    pub fn list<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Page>> {
        self.call(
            env,
            || {
                let scope = convert::string(js(env, &scope), "scope")?;
                let o = convert::options(js(env, &options), "options", &["after", "limit"], false)?;
                let (after, limit) = match o {
                    Some(o) => (
                        o.optional_string("after")?,
                        match o.get("limit")? {
                            Some((v, what)) => {
                                usize::try_from(convert::count(v, &what)?).unwrap_or(usize::MAX)
                            }
                            None => fencing::defaults::LIST_LIMIT,
                        },
                    ),
                    None => (None, fencing::defaults::LIST_LIMIT),
                };
                Ok((scope, after, limit))
            },
            |s, (scope, after, limit)| s.list(&scope, after.as_deref(), limit),
            Page::from,
        )
    }

    /// The greatest token the scope has accepted (0n = none).
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string",
        ts_return_type = "Promise<bigint>"
    )]
    pub fn fence_of<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
    ) -> napi::Result<PromiseRaw<'env, u64>> {
        self.call(
            env,
            || convert::string(js(env, &scope), "scope"),
            |s, scope| s.fence_of(&scope),
            |f| f,
        )
    }

    #[napi(
        catch_unwind,
        ts_args_type = "scope: string",
        ts_return_type = "Promise<ScopeStatus>"
    )]
    pub fn status<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
    ) -> napi::Result<PromiseRaw<'env, ScopeStatus>> {
        self.call(
            env,
            || convert::string(js(env, &scope), "scope"),
            |s, scope| s.status(&scope),
            ScopeStatus::from,
        )
    }

    /// Drops a scope with no live lease and no entries; resolves to whether it
    /// had state.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn retire<'env>(
        &self,
        env: &'env Env,
        scope: Unknown,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        self.call(
            env,
            || convert::string(js(env, &scope), "scope"),
            |s, scope| s.retire(&scope),
            |r| r,
        )
    }

    /// The failover step: run once on a new primary promoted from an
    /// asynchronous standby (or a restored backup) before anything else uses
    /// it. Every counter, fence and floor moves to 2^40 above the store's
    /// ceiling (above every value the store held) and every lease ends;
    /// resolves to that base: every token at or below it is stale.
    #[napi(catch_unwind, ts_return_type = "Promise<bigint>")]
    pub fn failover<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, u64>> {
        self.call(env, || Ok(()), |s, ()| s.failover(), |n| n)
    }

    /// Moves a manual clock (`?clock=manual`) forward.
    #[napi(
        catch_unwind,
        ts_args_type = "ms: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn advance_clock<'env>(
        &self,
        env: &'env Env,
        ms: Unknown,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        self.call(
            env,
            || convert::millis(js(env, &ms), "ms"),
            |s, by| s.advance_clock(by),
            |()| (),
        )
    }

    // ----- observability -----

    /// One cheap round trip that changes nothing, for health checks:
    /// resolves while the store answers and its schema is this build's;
    /// rejects with CLOSED once closed, and with BACKEND when unreachable or
    /// (kind `refused`) when its schema is older (run `fencing migrate`) or
    /// newer.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn ping<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        self.call(env, || Ok(()), |s, ()| s.ping(), |()| ())
    }

    #[napi(catch_unwind)]
    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics_core().into()
    }

    /// The metrics in the Prometheus text format, every sample labelled
    /// `store`.
    #[napi(catch_unwind)]
    pub fn metrics_text(&self) -> String {
        fencing::prometheus_text(&self.location, &self.metrics_core())
    }

    /// The store's own record, shared by every process using the store
    /// (docs/operations.md): recent stale-token rejections and who last
    /// wrote each scope, newest first (`limit` 1..=256, default 20). Never
    /// any values.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: EventsOptions",
        ts_return_type = "Promise<Events>"
    )]
    pub fn events<'env>(
        &self,
        env: &'env Env,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Events>> {
        self.call(
            env,
            || {
                let o = convert::options(js(env, &options), "options", &["scope", "limit"], false)?;
                match o {
                    Some(o) => Ok((
                        o.optional_string("scope")?,
                        match o.get("limit")? {
                            Some((v, what)) => {
                                usize::try_from(convert::count(v, &what)?).unwrap_or(usize::MAX)
                            }
                            None => DEFAULT_EVENTS_LIMIT,
                        },
                    )),
                    None => Ok((None, DEFAULT_EVENTS_LIMIT)),
                }
            },
            |s, (scope, limit)| s.events(scope.as_deref(), limit),
            Events::from,
        )
    }

    /// Each rejection the store records from now on (of `scope`, or of every
    /// scope), oldest first: fencing.js's `watchRejections` iterates it.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: { scope?: string }",
        ts_return_type = "Promise<NativeRejectionWatch>"
    )]
    pub fn watch_rejections<'env>(
        &self,
        env: &'env Env,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, NativeRejectionWatch>> {
        self.call(
            env,
            || {
                let o = convert::options(js(env, &options), "options", &["scope"], false)?;
                o.map(|o| o.optional_string("scope"))
                    .transpose()
                    .map(Option::flatten)
            },
            |s, scope| s.watch_rejections(scope.as_deref()),
            NativeRejectionWatch::new,
        )
    }

    /// Who holds `scope`'s lease, live: the lease as it is now, then after
    /// each change; fencing.js's `watch` iterates it. Synchronous (nothing
    /// is read yet): a bad scope, a bad option or a closed store throws here.
    /// `signal` is fencing.js's.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, options?: { signal?: AbortSignal }"
    )]
    pub fn watch(
        &self,
        env: &Env,
        scope: Unknown,
        options: Unknown,
    ) -> napi::Result<NativeLeaseWatch> {
        let scope = convert::string(js(env, &scope), "scope").map_err(|f| f.into_napi(env))?;
        convert::options(js(env, &options), "options", &["signal"], false)
            .map_err(|f| f.into_napi(env))?;
        run::now(|| self.store().watch(&scope))
            .map(NativeLeaseWatch::new)
            .map_err(|e| Failure::Core(e).into_napi(env))
    }

    /// Closes the store for every handle sharing it; later calls reject with
    /// CLOSED.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        // Closed for this handle from now on; the core store is closed (for
        // its other users: held leases) and let go of off the thread.
        let open = {
            let mut state = self.state();
            match &*state {
                State::Open(store) => {
                    let store = store.clone();
                    *state = State::Closed(Box::new(store.metrics()));
                    Some(store)
                }
                State::Closed(_) => None,
            }
        };
        run::settle(
            env,
            self.inline,
            move || {
                if let Some(store) = open {
                    store.close();
                }
                Ok(())
            },
            |_env, ()| Ok(()),
        )
    }

    /// Where the store is: `memory:`; `sqlite:` and the file's absolute
    /// path (a relative path as this process resolved it at open); or the
    /// PostgreSQL URL without its query and its password. For logs.
    #[napi(getter, catch_unwind)]
    pub fn location(&self) -> String {
        self.location.clone()
    }

    /// Which backend the store runs on: `'memory'`, `'sqlite'`,
    /// `'postgres'` or `'etcd'`.
    #[napi(getter, catch_unwind)]
    pub fn backend_kind(&self) -> &'static str {
        self.backend_kind.as_str()
    }

    /// Whether the store runs its calls on the JavaScript thread
    /// (`memory:`), so that an awaited `put` may run as `putSync` does.
    #[napi(getter, catch_unwind)]
    pub fn inline(&self) -> bool {
        self.inline
    }

    /// `putSync` with the token as an argument, bound to this store
    /// (`fast.rs`): the same checks in the same order, the same core call,
    /// and only the new version back. A function rather than a method: a
    /// napi-rs method registers a borrow of `this` on every call.
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "(scope: string, key: string, value: Buffer | Uint8Array | string, token: TokenLike) => bigint"
    )]
    pub fn put_sync_function<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        fast::store_put_sync_function(env, self.state.clone())
    }

    #[napi(getter, catch_unwind)]
    pub fn closed(&self) -> bool {
        match &*self.state() {
            State::Open(store) => store.is_closed(),
            State::Closed(_) => true,
        }
    }
}

impl NativeStore {
    fn metrics_core(&self) -> fencing::MetricsSnapshot {
        match &*self.state() {
            State::Open(store) => store.metrics(),
            State::Closed(metrics) => (**metrics).clone(),
        }
    }
}

fn required(v: Js, known: &[&str]) -> Conv<convert::Options> {
    convert::options(v, "options", known, true)?
        .ok_or_else(|| Failure::Type("options are required".into()))
}

/// The arguments of `put` and `putSync`, converted on the JavaScript thread.
fn put_args(
    env: &Env,
    scope: &Unknown,
    key: &Unknown,
    value: &Unknown,
    options: &Unknown,
) -> Conv<(String, fencing::Fence, fencing::Op)> {
    let scope = convert::string(js(env, scope), "scope")?;
    let key = convert::string(js(env, key), "key")?;
    let value = convert::bytes(js(env, value), "value")?;
    let (fence, version) = write_options(js(env, options))?;
    let op = fencing::Op::put(key, value);
    Ok((scope, fence, with_version(op, version)))
}

/// `{ token, seq?, holder?, expectedVersion? }` (`put`, `delete`, and the
/// fenced objects' `put` and `delete`).
pub(crate) fn write_options(v: Js) -> Conv<(fencing::Fence, Option<u64>)> {
    let o = required(v, &["token", "seq", "holder", "expectedVersion"])?;
    Ok((convert::fence(&o)?, o.optional_number("expectedVersion")?))
}

fn with_version(op: fencing::Op, version: Option<u64>) -> fencing::Op {
    match version {
        Some(v) => op.if_version(v),
        None => op,
    }
}

pub(crate) type OnLost = napi::threadsafe_function::ThreadsafeFunction<
    fencing::Error,
    Unknown<'static>,
    ErrorValue,
    napi::Status,
    false,
>;

/// The core's loss callback calling `onLost` (on the guard's thread), and
/// the same function shared with the `NativeKeepAlive`, which can unref it.
fn shared_on_lost(callback: Option<OnLost>) -> (Option<fencing::OnLost>, Option<SharedOnLost>) {
    let shared = callback.map(|tsfn| Arc::new(Mutex::new(tsfn)));
    let on_lost = shared.clone().map(|tsfn| -> fencing::OnLost {
        Box::new(move |e| {
            let tsfn = tsfn.lock().unwrap_or_else(PoisonError::into_inner);
            tsfn.call(e.clone(), ThreadsafeFunctionCallMode::NonBlocking);
        })
    });
    (on_lost, shared)
}

/// `onLost`: `undefined`, or a function called (on the JavaScript thread)
/// with the error that ended the keep-alive.
fn on_lost_callback(v: &Unknown) -> Conv<Option<OnLost>> {
    let t = v.get_type()?;
    match t {
        napi::ValueType::Undefined => Ok(None),
        napi::ValueType::Function => {
            let f: Function<ErrorValue, Unknown> = unsafe { v.cast() }?;
            let tsfn = f
                .build_threadsafe_function::<fencing::Error>()
                .callee_handled::<false>()
                .build_callback(|ctx| Ok(ErrorValue(ctx.value)))?;
            Ok(Some(tsfn))
        }
        other => Err(Failure::Type(format!(
            "onLost must be a function, got {other}"
        ))),
    }
}
