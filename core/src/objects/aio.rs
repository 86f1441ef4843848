//! Fenced objects, async: the algorithm of docs/semantics.md, "Fenced
//! objects". Every write is a create-only claim of the next version,
//! checked by the fenced store's own rules against the claim before it, and
//! confirmed by a listing that shows no floor above it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::{stream, StreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload};

use super::layout::{self, Claim, Found};
use super::{backend_error, check_path, nonce, Object, Opened};
use crate::error::{BackendErrorKind, Error, Result};
use crate::rules::{check_op, ScopeCore};
use crate::types::{Fence, OpRef, Receipt};

/// Versions kept below the newest: a writer whose claim is older than that
/// by the time it lists again cannot tell whether its write was superseded
/// or never took (docs/semantics.md, "Fenced objects": `OUTCOME_UNKNOWN`).
pub(super) const KEEP: u64 = 8;
/// Claims lost to other writers before a write gives up (`BUSY`).
const CONFLICTS: usize = 64;
/// Listings that found a head already collected before a read gives up.
const READS: usize = 16;
/// Paths a handle remembers the newest claim of (then it forgets them all).
const KNOWN: usize = 4096;

/// Fenced objects on an object store, async. Cheap to clone.
#[derive(Clone)]
pub struct Objects {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    /// The directory of a `file://` store: collection also removes the
    /// staging files a killed writer left, which listings never show.
    local_root: Option<std::path::PathBuf>,
    /// For a store that may ignore create-only writes (S3-compatible
    /// servers): checked once, before the first write.
    probe: Option<Arc<tokio::sync::OnceCell<()>>>,
    /// Per path (its folder), the newest claim this handle saw confirmed.
    known: Arc<Mutex<HashMap<Path, Known>>>,
}

/// A claim known to be its version's original (docs/semantics.md, "Fenced
/// objects"): a listing whose newest claim is that version needs no read
/// of it, and its data can be read beside the listing.
#[derive(Clone)]
struct Known {
    version: u64,
    claim: Claim,
    /// The last read found the object unchanged: the next reads its data
    /// beside the listing.
    stable: bool,
}

/// Whose claim holds a version a writer's create was refused for.
enum Whose {
    Mine,
    Another,
    /// Cannot be told: why.
    Undecided(String),
}

/// What one listing of a path's folder found.
#[derive(Default)]
struct Listing {
    claims: Vec<u64>,
    /// The version each data object asked for, with its path.
    data: Vec<(u64, Path)>,
    floors: Vec<u64>,
}

impl Listing {
    fn head(&self) -> Option<u64> {
        self.claims.iter().copied().max()
    }

    fn floor(&self) -> u64 {
        self.floors.iter().copied().max().unwrap_or(0)
    }

    /// A path this handle saw written, or that has a floor (published only
    /// after eight versions), always has a claim: the newest is never
    /// deleted. With none, something else deleted them, and the path would
    /// read as never written and take any token.
    fn lost_claims(&self, path: &str, known: &Option<Known>) -> Result<()> {
        if self.claims.is_empty() && (known.is_some() || !self.floors.is_empty()) {
            return Err(Error::backend(
                BackendErrorKind::Corrupt,
                format!(
                    "objects: {path:?} was written, and its claims are gone: something other than \
                     this library deleted in its .fenced folder (a bucket lifecycle rule, a cleanup \
                     job: docs/objects.md); nothing was written"
                ),
            ));
        }
        Ok(())
    }

    /// Whether this listing shows claim `version` as one no writer can have
    /// created again after it was collected: the claim is there, no floor
    /// is above it, and no claim is [`KEEP`] versions or more above it (a
    /// floor above `version` is published only by the writer of such a
    /// claim, and the newest claim is never deleted). In a listing that is
    /// one moment the floor alone would tell; one merged from parts read at
    /// different moments can miss keys made or deleted while it ran
    /// (docs/semantics.md, "Fenced objects").
    fn holds(&self, version: u64) -> bool {
        self.claims.contains(&version)
            && version >= self.floor()
            && self.head().is_some_and(|h| h - version < KEEP)
    }
}

impl Objects {
    /// Opens `memory:` or `file:///DIR` (docs/objects.md).
    pub fn open(url: &str) -> Result<Objects> {
        let Opened {
            store,
            prefix,
            local_root,
            probe,
        } = super::open_url(url)?;
        Ok(Objects {
            store,
            prefix,
            local_root,
            probe: probe.then(Default::default),
            known: Default::default(),
        })
    }

    /// Fenced objects on a store configured by the caller (an `object_store`
    /// of any kind), under `prefix` (`""`: its root). The store must offer
    /// create-only writes (`PutMode::Create`): every store of the
    /// `object_store` crate does, S3 included.
    pub fn with_store(store: Arc<dyn ObjectStore>, prefix: &str) -> Result<Objects> {
        let prefix = match prefix {
            "" => Path::default(),
            p => {
                check_path(p)?;
                Path::from(p)
            }
        };
        Ok(Objects {
            store,
            prefix,
            local_root: None,
            probe: None,
            known: Default::default(),
        })
    }

    /// The `object_store` client this handle sends its requests through,
    /// and the prefix its object paths live under: for plain requests beside
    /// the fenced ones (a benchmark's baseline, a reader's own tools). A
    /// write through it into a `.fenced` folder defeats the fencing.
    pub fn object_store(&self) -> (Arc<dyn ObjectStore>, Path) {
        (self.store.clone(), self.prefix.clone())
    }

    /// Writes `bytes` as the object at `path`, fenced by `fence`: refused
    /// with `STALE_TOKEN` when a greater token was accepted for the path,
    /// `SEQUENCE_OUT_OF_ORDER` as the fenced store does, and
    /// `VERSION_MISMATCH` unless `expected_version` (when given) is the
    /// object's version (0: it must not exist).
    pub async fn put(
        &self,
        path: &str,
        fence: &Fence,
        bytes: &[u8],
        expected_version: Option<u64>,
    ) -> Result<Receipt> {
        self.write(path, fence, Some(bytes), expected_version).await
    }

    /// Deletes the object at `path` under `fence` (`NOT_FOUND` when there is
    /// none); the path keeps its fence.
    pub async fn delete(
        &self,
        path: &str,
        fence: &Fence,
        expected_version: Option<u64>,
    ) -> Result<Receipt> {
        self.write(path, fence, None, expected_version).await
    }

    /// The object at `path` now, with the token and version it was written
    /// with; `None` when there is none (never written, or deleted).
    pub async fn get(&self, path: &str) -> Result<Option<Object>> {
        let folder = self.folder_of(path)?;
        let mut known = self.known(&folder);
        for _ in 0..READS {
            // Unchanged at the last read: its data is read beside the
            // listing, one round trip while the object stays so.
            let early = known.as_ref().filter(|k| k.stable);
            let (listing, early) = match early {
                Some(k) => {
                    let (listing, found) =
                        tokio::join!(self.list(&folder), self.read_data(&folder, &k.claim));
                    (listing?, Some(found))
                }
                None => (self.list(&folder).await?, None),
            };
            listing.lost_claims(path, &known)?;
            let Some(head) = listing.head() else {
                return Ok(None);
            };
            // The newest claim of a listing is its version's original, the
            // one this handle knows (docs/semantics.md, "Fenced objects"):
            // not read again, and no floor can be above it.
            if let Some(k) = known.as_ref().filter(|k| k.version == head) {
                let found = match early {
                    Some(found) => found,
                    None => self.read_data(&folder, &k.claim).await,
                };
                match found {
                    Ok(bytes) => {
                        self.remember(&folder, head, &k.claim, true);
                        return Ok(bytes.map(|bytes| Object {
                            bytes,
                            token: k.claim.token,
                            version: head,
                        }));
                    }
                    // Superseded and collected since the listing.
                    Err(object_store::Error::NotFound { .. }) => {
                        known = None;
                        continue;
                    }
                    Err(e) => return Err(backend_error("read", e)),
                }
            }
            // Collected since the listing: a newer head exists; look again.
            let Some(claim) = self.read_claim(&folder, head).await? else {
                continue;
            };
            // Confirmed as a write is: a floor above the claim means the
            // claim read may be one created again after it was collected
            // (docs/semantics.md, "Fenced objects"), never the newest.
            let (found, after) = tokio::join!(self.read_data(&folder, &claim), self.list(&folder));
            if !after?.holds(head) {
                continue;
            }
            let found = match found {
                Ok(found) => found,
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(backend_error("read", e)),
            };
            self.remember(&folder, head, &claim, false);
            return Ok(found.map(|bytes| Object {
                bytes,
                token: claim.token,
                version: head,
            }));
        }
        Err(Error::backend(
            BackendErrorKind::Busy,
            format!("objects: {path:?} changed under each of {READS} reads; try again"),
        ))
    }

    async fn write(
        &self,
        path: &str,
        fence: &Fence,
        bytes: Option<&[u8]>,
        expected_version: Option<u64>,
    ) -> Result<Receipt> {
        let folder = self.folder_of(path)?;
        crate::limits::fence(fence)?;
        crate::limits::expected_version(expected_version)?;
        if let Some(probe) = &self.probe {
            probe.get_or_try_init(|| self.probe()).await?;
        }
        let mut known = self.known(&folder);
        for _ in 0..CONFLICTS {
            // The bytes go under a name no other writer uses before the
            // claim that names them: a claim is never seen without its data.
            // When this handle knows the head, the write most likely takes
            // the next version: its bytes are written beside the listing.
            let nonce = nonce();
            let next = known.as_ref().and_then(|k| k.version.checked_add(1));
            // Bytes sent early: the version they are named for, their name,
            // and whether the store said they landed.
            let (listing, early) = match (bytes, next) {
                (Some(bytes), Some(next)) => {
                    let at = layout::data(&folder, next, fence.token, nonce);
                    let (listing, put) = tokio::join!(
                        self.list(&folder),
                        self.store.put(&at, PutPayload::from(bytes.to_vec()))
                    );
                    (listing, Some((next, at, put.is_ok())))
                }
                _ => (self.list(&folder).await, None),
            };
            let early_at = early.as_ref().map(|(_, at, _)| at.clone());
            let checked = match listing {
                Ok(listing) => {
                    self.check(
                        &folder,
                        path,
                        fence,
                        bytes,
                        expected_version,
                        &listing,
                        &known,
                    )
                    .await
                }
                Err(e) => Err(e),
            };
            let version = match checked {
                Ok(Some(version)) => version,
                // Refused, or the head collected since the listing: nothing
                // of this write may stay, and what the handle remembers may
                // name an old head (its next call sends nothing early).
                unchecked => {
                    self.forget(&folder);
                    self.discard(early_at).await;
                    unchecked?;
                    known = None;
                    continue;
                }
            };
            let data = match bytes {
                Some(bytes) => {
                    if let Some((_, at, true)) = early.as_ref().filter(|(n, _, _)| *n == version) {
                        Some(at.clone())
                    } else {
                        // Named for another version, no claim will name
                        // them; for this one (an answer lost), written again.
                        if early.is_some_and(|(n, _, _)| n != version) {
                            self.discard(early_at).await;
                        }
                        let at = layout::data(&folder, version, fence.token, nonce);
                        self.store
                            .put(&at, PutPayload::from(bytes.to_vec()))
                            .await
                            .map_err(|e| backend_error("write", e))?;
                        Some(at)
                    }
                }
                None => None,
            };
            let claim = Claim {
                token: fence.token,
                seq: fence.seq,
                nonce,
                data: data.as_ref().and_then(|p| p.filename()).map(str::to_owned),
            };
            let created = self
                .store
                .put_opts(
                    &layout::claim(&folder, version),
                    PutPayload::from(claim.encode()),
                    PutMode::Create.into(),
                )
                .await;
            match created {
                Ok(_) => {}
                // Taken: by another writer (check against its claim), or by
                // this one, when the store's client retried a create whose
                // first answer was lost (object_store retries a PUT answered
                // 5xx) and the retry found the first one's claim.
                Err(object_store::Error::AlreadyExists { .. })
                | Err(object_store::Error::Precondition { .. }) => {
                    match self.whose(&folder, version, nonce).await {
                        Whose::Mine => {}
                        Whose::Another => {
                            self.discard(data).await;
                            known = None;
                            continue;
                        }
                        Whose::Undecided(why) => return Err(undecided(path, &why)),
                    }
                }
                // Refused, perhaps only on a retry of a create that took
                // (credentials rotated during the client's back-off).
                Err(
                    e @ (object_store::Error::PermissionDenied { .. }
                    | object_store::Error::Unauthenticated { .. }),
                ) => match self.whose(&folder, version, nonce).await {
                    Whose::Mine => {}
                    Whose::Another => {
                        self.discard(data).await;
                        return Err(backend_error("create a claim", e));
                    }
                    Whose::Undecided(_) => return Err(unknown(path, "claiming its version", e)),
                },
                // Refused before anything was sent: nothing was created.
                Err(
                    e @ (object_store::Error::NotImplemented { .. }
                    | object_store::Error::NotSupported { .. }),
                ) => {
                    self.discard(data).await;
                    return Err(backend_error("create a claim", e));
                }
                Err(e) => return Err(unknown(path, "claiming its version", e)),
            }
            // Confirmed unless a floor passed the claim: then it may be a
            // claim of a version collected before it was made, which no
            // reader ever takes, or a write superseded and collected since.
            let after = self
                .list(&folder)
                .await
                .map_err(|e| Error::backend(BackendErrorKind::OutcomeUnknown, e.to_string()))?;
            if !after.holds(version) {
                let why = format!(
                    "version {version} was passed by {KEEP} newer versions before it could \
                     be confirmed: superseded, or never taken"
                );
                return Err(undecided(path, &why));
            }
            self.remember(&folder, version, &claim, true);
            self.collect(&folder, &after, version).await;
            return Ok(Receipt {
                version: if bytes.is_some() { version } else { 0 },
                token: fence.token,
            });
        }
        Err(Error::backend(
            BackendErrorKind::Busy,
            format!("objects: {CONFLICTS} other writers of {path:?} claimed first; try again"),
        ))
    }

    /// The fenced store's rules (docs/semantics.md, "The fenced store":
    /// checks 2 and 3, then 4) on the state the head claim of `listing`
    /// records: the version this write would take, or `None` when that
    /// claim was collected since the listing (a newer head exists).
    #[allow(clippy::too_many_arguments)]
    async fn check(
        &self,
        folder: &Path,
        path: &str,
        fence: &Fence,
        bytes: Option<&[u8]>,
        expected_version: Option<u64>,
        listing: &Listing,
        known: &Option<Known>,
    ) -> Result<Option<u64>> {
        listing.lost_claims(path, known)?;
        let head = listing.head().unwrap_or(0);
        let current = match listing.head() {
            None => None,
            // The newest claim of a listing is its version's original: the
            // one this handle knows, when it knows that version.
            Some(head) => match known.as_ref().filter(|k| k.version == head) {
                Some(k) => Some(k.claim.clone()),
                None => match self.read_claim(folder, head).await? {
                    Some(claim) => Some(claim),
                    None => return Ok(None),
                },
            },
        };
        let state = ScopeCore {
            fence: current.as_ref().map_or(0, |c| c.token.get()),
            last_seq: current.as_ref().and_then(|c| c.seq),
            ..ScopeCore::default()
        };
        state.check(path, fence)?;
        let exists = current.as_ref().is_some_and(|c| c.data.is_some());
        let op = OpRef {
            key: path,
            value: bytes,
            expected_version,
        };
        let version = head.checked_add(1).ok_or_else(|| {
            Error::backend(
                BackendErrorKind::Corrupt,
                format!("objects: {path:?} has no version left"),
            )
        })?;
        check_op(path, &op, if exists { head } else { 0 }, fence.token)?;
        Ok(Some(version))
    }

    /// The bytes claim `claim` names (`None`: it is a delete).
    async fn read_data(
        &self,
        folder: &Path,
        claim: &Claim,
    ) -> std::result::Result<Option<Vec<u8>>, object_store::Error> {
        let Some(data) = &claim.data else {
            return Ok(None);
        };
        let found = self.store.get(&folder.clone().join(data.as_str())).await?;
        Ok(Some(found.bytes().await?.to_vec()))
    }

    /// The newest claim this handle has seen confirmed for a path's folder.
    fn known(&self, folder: &Path) -> Option<Known> {
        self.known.lock().ok()?.get(folder).cloned()
    }

    /// Remembers claim `version` of `folder`, an original: this handle's
    /// own accepted write, or one a read confirmed.
    fn remember(&self, folder: &Path, version: u64, claim: &Claim, stable: bool) {
        let Ok(mut known) = self.known.lock() else {
            return;
        };
        // Writes of one handle may confirm out of order: keep the newest.
        if known.get(folder).is_some_and(|k| k.version > version) {
            return;
        }
        if known.len() >= KNOWN && !known.contains_key(folder) {
            known.clear();
        }
        let entry = Known {
            version,
            claim: claim.clone(),
            stable,
        };
        known.insert(folder.clone(), entry);
    }

    /// Forgets what this handle remembers of a path's folder.
    fn forget(&self, folder: &Path) {
        if let Ok(mut known) = self.known.lock() {
            known.remove(folder);
        }
    }

    /// Deletes a data object no claim names (best effort: what is left is
    /// collected with the versions below the next floor).
    async fn discard(&self, data: Option<Path>) {
        if let Some(at) = data {
            let _ = self.store.delete(&at).await;
        }
    }

    /// Whether the store refuses a second create-only write of one object,
    /// which fencing rests on (docs/semantics.md, "Fenced objects"): some
    /// S3-compatible servers ignore `If-None-Match: *` and overwrite.
    async fn probe(&self) -> Result<()> {
        // In a folder no object path has (no path segment ends in .fenced).
        let at = layout::folder(&self.prefix, "probe.fenced").join(format!("{:016x}", nonce()));
        let create = || {
            self.store
                .put_opts(&at, PutPayload::default(), PutMode::Create.into())
        };
        let failed = |e: object_store::Error| backend_error("write a probe object", e);
        create().await.map_err(failed)?;
        let second = create().await;
        let _ = self.store.delete(&at).await;
        match second {
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(()),
            Ok(_) => Err(Error::backend(
                BackendErrorKind::Refused,
                "objects: this store accepted a second create-only write of one object (it ignores \
                 If-None-Match: *), so it cannot fence objects; use a store that honours conditional \
                 writes (AWS S3, or a compatible server that does)",
            )),
            Err(e) => Err(failed(e)),
        }
    }

    /// Who holds claim `version` after this writer's create of it (nonce
    /// `nonce`) was refused: another writer's claim proves the version lost
    /// only while no floor passed it; past a floor, this writer's own claim
    /// may have taken, been collected, and been created again by another.
    async fn whose(&self, folder: &Path, version: u64, nonce: u64) -> Whose {
        match self.read_claim(folder, version).await {
            Ok(Some(taken)) if taken.nonce == nonce => Whose::Mine,
            Ok(Some(_)) => match self.list(folder).await {
                Ok(after) if after.holds(version) => Whose::Another,
                Ok(_) => Whose::Undecided(format!(
                    "version {version} was taken and collected before it could tell whose \
                     claim took it"
                )),
                Err(e) => Whose::Undecided(e.to_string()),
            },
            Ok(None) => Whose::Undecided(format!(
                "version {version} is taken by no claim now: its own, collected since, or none"
            )),
            Err(e) => Whose::Undecided(e.to_string()),
        }
    }

    /// The folder of a valid object path whose longest name (a data
    /// object's) fits in an object key: 1,024 bytes on S3.
    fn folder_of(&self, path: &str) -> Result<Path> {
        check_path(path)?;
        let folder = layout::folder(&self.prefix, path);
        if folder.as_ref().len() + 1 + layout::DATA_NAME_LEN > 1024 {
            return Err(Error::invalid(format!(
                "object path {path:?} is too long here: with the prefix and the library's \
                 names it passes the 1,024 bytes of an object key"
            )));
        }
        Ok(folder)
    }

    async fn list(&self, folder: &Path) -> Result<Listing> {
        let found = self
            .store
            .list_with_delimiter(Some(folder))
            .await
            .map_err(|e| backend_error("list", e))?;
        let mut listing = Listing::default();
        for meta in found.objects {
            let Some(name) = meta.location.filename() else {
                continue;
            };
            match layout::parse(name) {
                Found::Claim(v) => listing.claims.push(v),
                Found::Data(v) => listing.data.push((v, meta.location)),
                Found::Floor(f) => listing.floors.push(f),
                Found::Other => {}
            }
        }
        Ok(listing)
    }

    async fn read_claim(&self, folder: &Path, version: u64) -> Result<Option<Claim>> {
        let at = layout::claim(folder, version);
        match self.store.get(&at).await {
            Ok(found) => {
                let bytes = found.bytes().await.map_err(|e| backend_error("read", e))?;
                Claim::decode(&bytes, &at).map(Some)
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(backend_error("read", e)),
        }
    }

    /// Keeps the newest [`KEEP`] versions once twice as many exist: a floor
    /// first, then everything below it (best effort: what is left is
    /// collected by a later write).
    async fn collect(&self, folder: &Path, listing: &Listing, version: u64) {
        let Some(floor) = version.checked_add(1).and_then(|v| v.checked_sub(KEEP)) else {
            return;
        };
        let below = listing.claims.iter().filter(|&&c| c < floor).count() as u64;
        let previous = listing.floor();
        if below < KEEP || floor <= previous {
            return;
        }
        let published = self
            .store
            .put_opts(
                &layout::floor(folder, floor),
                PutPayload::default(),
                PutMode::Create.into(),
            )
            .await;
        match published {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => {}
            Err(_) => return,
        }
        let doomed = (listing.claims.iter().filter(|&&c| c < floor))
            .map(|&c| layout::claim(folder, c))
            .chain(
                listing
                    .data
                    .iter()
                    .filter(|(v, _)| *v < floor)
                    .map(|(_, p)| p.clone()),
            )
            // The floor before this one stays: a listing that misses the
            // new floor (not one moment) still finds that one.
            .chain(
                (listing.floors.iter().filter(|&&f| f < previous))
                    .map(|&f| layout::floor(folder, f)),
            );
        // One request where the store deletes in bulk (S3's DeleteObjects).
        let doomed: Vec<object_store::Result<Path>> = doomed.map(Ok).collect();
        let mut deleted = self.store.delete_stream(stream::iter(doomed).boxed());
        while deleted.next().await.is_some() {}
        if let Some(root) = &self.local_root {
            sweep_staging(&root.join(folder.as_ref()), floor);
        }
    }
}

/// Removes the staging files (`NAME#N`) that writers killed inside a local
/// write left for versions below `floor`, which no write can still need:
/// `LocalFileSystem` hides them from listings and refuses to delete them.
fn sweep_staging(dir: &std::path::Path, floor: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((base, _)) = name.to_str().and_then(|n| n.split_once('#')) else {
            continue;
        };
        if let Found::Claim(v) | Found::Data(v) = layout::parse(base) {
            if v < floor {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// A write whose outcome cannot be told.
fn undecided(path: &str, why: &str) -> Error {
    Error::backend(
        BackendErrorKind::OutcomeUnknown,
        format!(
            "objects: the write of {path:?} may or may not have taken ({why}); read before \
             writing again"
        ),
    )
}

/// A claim whose answer was lost: it may have been created.
fn unknown(path: &str, what: &str, e: object_store::Error) -> Error {
    let message = format!("objects: {what} of {path:?}: {e}; the write may or may not have taken");
    Error::backend_from(BackendErrorKind::OutcomeUnknown, message, e)
}
