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
        }
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

    async fn pass(&self, op: Op<'_>) {
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
            if let Some((reached, go)) = gate {
                let _ = reached.send(());
                let _ = go.await;
            }
        }
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
        self.pass(Op::Put { at, create }).await;
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
        self.inner.put_opts(at, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        at: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(at, opts).await
    }
    async fn get_opts(&self, at: &Path, options: GetOptions) -> Result<GetResult> {
        self.pass(Op::Get { at }).await;
        self.inner.get_opts(at, options).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.log.lock().unwrap().push("delete");
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.pass(Op::List).await;
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
