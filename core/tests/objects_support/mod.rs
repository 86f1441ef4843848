//! A store for the fenced-object tests that misbehaves on cue: it holds
//! the first request a matcher picks until released (a client paused
//! between two requests), and can make the first create of a claim and
//! then answer it with an error (a lost answer, as object_store's retry of
//! a PUT answered 5xx meets it), or refuse every create of a claim.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use tokio::sync::oneshot;

#[derive(Debug)]
pub enum Op<'a> {
    Put { at: &'a Path, create: bool },
    Get { at: &'a Path },
    List,
}

/// An error a request is answered with instead of its own answer.
pub type Answer = fn(&Path) -> object_store::Error;
pub type Matcher = Box<dyn Fn(&Op) -> bool + Send + Sync>;
type Gate = (oneshot::Sender<()>, oneshot::Receiver<()>);

/// What the first create of a claim does once the store made it: its
/// answer is lost and object_store's retry (of a PUT answered 5xx)
/// answers with `error`, optionally after being held (`gate`).
pub enum AfterCreate {
    None,
    Answer {
        error: fn(&Path) -> object_store::Error,
        gate: Option<Gate>,
    },
}

/// Delegates to `inner`; holds the first request `when` matches until
/// released; the first claim create may be made and then answered
/// with an error (see [`AfterCreate`]).
pub struct Hooked {
    pub inner: Arc<dyn ObjectStore>,
    pub when: Matcher,
    pub gate: Mutex<Option<Gate>>,
    pub after_create: Mutex<AfterCreate>,
    /// Every create of a claim is refused before it is sent (NotImplemented).
    pub refuse_create: bool,
    /// Every request, in the order it was sent: `list`, `get claim`,
    /// `get data`, `put data`, `create claim`, `create floor`, `delete`.
    pub log: Mutex<Vec<&'static str>>,
    /// The held request is made first and only its answer is held (the
    /// request took effect; the client hears of it late).
    pub hold_answer: bool,
    /// The next read of a data object is answered with this error, never
    /// sent (once).
    pub fail_get_data: Mutex<Option<Answer>>,
    /// The next write of a data object is made, then answered with this
    /// error (once): a lost answer.
    pub lose_put_data: Mutex<Option<Answer>>,
    /// Pseudo-random pauses before each request and before each answer.
    pub jitter: Option<Jitter>,
    /// A listing is not one moment: it is read before and after its hold,
    /// and shows only what both found, so every key made or deleted while
    /// it was held is missed (as a listing merged from index shards each
    /// read at its own moment may miss it: RADOS Gateway's).
    pub torn: bool,
}

/// Pauses of up to `max_us` microseconds, and one in `long_every` of
/// `long_ms` milliseconds (a client descheduled, a slow network).
pub struct Jitter {
    pub state: Mutex<u64>,
    pub max_us: u64,
    pub long_every: u64,
    pub long_ms: u64,
}

impl Jitter {
    pub fn new(seed: u64, max_us: u64, long_every: u64, long_ms: u64) -> Jitter {
        Jitter {
            state: Mutex::new(seed | 1),
            max_us,
            long_every,
            long_ms,
        }
    }

    pub fn next(&self) -> std::time::Duration {
        let mut x = self.state.lock().unwrap();
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        let r = *x;
        if self.long_every > 0 && r % self.long_every == 0 {
            return std::time::Duration::from_millis(1 + (r >> 20) % self.long_ms.max(1));
        }
        std::time::Duration::from_micros((r >> 8) % self.max_us.max(1))
    }
}

impl Hooked {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Hooked {
        Hooked {
            inner,
            when: Box::new(|_| false),
            gate: Mutex::new(None),
            after_create: Mutex::new(AfterCreate::None),
            refuse_create: false,
            log: Mutex::new(Vec::new()),
            hold_answer: false,
            fail_get_data: Mutex::new(None),
            lose_put_data: Mutex::new(None),
            jitter: None,
            torn: false,
        }
    }

    async fn pause(&self) {
        if let Some(j) = &self.jitter {
            let d = j.next();
            if !d.is_zero() {
                tokio::time::sleep(d).await;
            }
        }
    }

    /// After the request was made: its answer waits for the gate when
    /// `hold_answer` held it, and for the jitter.
    async fn answer(&self, held: Option<Gate>) {
        if let Some((reached, go)) = held {
            let _ = reached.send(());
            let _ = go.await;
        }
        self.pause().await;
    }

    /// The requests sent so far, and forgets them.
    pub fn take_log(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    pub fn hold(
        inner: Arc<dyn ObjectStore>,
        when: Matcher,
    ) -> (Hooked, oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached_tx, reached) = oneshot::channel();
        let (go, go_rx) = oneshot::channel();
        let h = Hooked {
            when,
            gate: Mutex::new(Some((reached_tx, go_rx))),
            ..Hooked::new(inner)
        };
        (h, reached, go)
    }

    /// The first claim create is made, then answered `error` once
    /// released: returns (made, release).
    pub fn lose_create_answer(
        inner: Arc<dyn ObjectStore>,
        error: fn(&Path) -> object_store::Error,
        held: bool,
    ) -> (Hooked, oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached_tx, reached) = oneshot::channel();
        let (go, go_rx) = oneshot::channel();
        let h = Hooked::new(inner);
        *h.after_create.lock().unwrap() = AfterCreate::Answer {
            error,
            gate: if held {
                Some((reached_tx, go_rx))
            } else {
                None
            },
        };
        (h, reached, go)
    }

    async fn pass(&self, op: Op<'_>) -> Option<Gate> {
        self.pause().await;
        let entry = match &op {
            Op::List => "list",
            Op::Get { at } if is_claim(at) => "get claim",
            Op::Get { .. } => "get data",
            Op::Put { at, .. } if is_claim(at) => "create claim",
            Op::Put { at, .. } if is_data(at) => "put data",
            Op::Put { .. } => "create floor",
        };
        self.log.lock().unwrap().push(entry);
        if (self.when)(&op) {
            let gate = self.gate.lock().unwrap().take();
            if self.hold_answer {
                return gate;
            }
            if let Some((reached, go)) = gate {
                let _ = reached.send(());
                let _ = go.await;
            }
        }
        None
    }
}

impl std::fmt::Debug for Hooked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hooked({})", self.inner)
    }
}

impl std::fmt::Display for Hooked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hooked({})", self.inner)
    }
}

pub fn is_claim(at: &Path) -> bool {
    at.filename()
        .is_some_and(|n| n.len() == 20 && n.bytes().all(|b| b.is_ascii_digit()))
}

pub fn is_data(at: &Path) -> bool {
    at.filename()
        .is_some_and(|n| n.len() == 58 && n.matches('-').count() == 2)
}

#[async_trait]
impl ObjectStore for Hooked {
    async fn put_opts(
        &self,
        at: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let create = matches!(opts.mode, PutMode::Create);
        let held = self.pass(Op::Put { at, create }).await;
        if !create && is_data(at) {
            let lose = self.lose_put_data.lock().unwrap().take();
            if let Some(error) = lose {
                self.inner.put_opts(at, payload, opts).await?;
                self.answer(held).await;
                return Err(error(at));
            }
        }
        if create && is_claim(at) {
            if self.refuse_create {
                return Err(object_store::Error::NotImplemented {
                    operation: "`put_opts` with mode `PutMode::Create`".into(),
                    implementer: "Hooked".into(),
                });
            }
            let after =
                std::mem::replace(&mut *self.after_create.lock().unwrap(), AfterCreate::None);
            if let AfterCreate::Answer { error, gate } = after {
                self.inner.put_opts(at, payload, opts).await?;
                if let Some((reached, go)) = gate {
                    let _ = reached.send(());
                    let _ = go.await;
                }
                return Err(error(at));
            }
        }
        let done = self.inner.put_opts(at, payload, opts).await;
        self.answer(held).await;
        done
    }
    async fn put_multipart_opts(
        &self,
        at: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(at, opts).await
    }
    async fn get_opts(&self, at: &Path, options: GetOptions) -> Result<GetResult> {
        let held = self.pass(Op::Get { at }).await;
        if is_data(at) {
            let fail = self.fail_get_data.lock().unwrap().take();
            if let Some(error) = fail {
                self.answer(held).await;
                return Err(error(at));
            }
        }
        let done = self.inner.get_opts(at, options).await;
        self.answer(held).await;
        done
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        use futures::StreamExt;
        self.log.lock().unwrap().push("delete");
        let Some(j) = &self.jitter else {
            return self.inner.delete_stream(locations);
        };
        let (d, inner) = (j.next(), self.inner.clone());
        futures::stream::once(async move {
            tokio::time::sleep(d).await;
            inner.delete_stream(locations)
        })
        .flatten()
        .boxed()
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let before = match self.torn {
            true => Some(self.inner.list_with_delimiter(prefix).await?),
            false => None,
        };
        let held = self.pass(Op::List).await;
        let mut done = self.inner.list_with_delimiter(prefix).await;
        if let (Some(before), Ok(after)) = (before, done.as_mut()) {
            after
                .objects
                .retain(|o| before.objects.iter().any(|b| b.location == o.location));
        }
        self.answer(held).await;
        done
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
