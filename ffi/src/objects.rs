//! Fenced objects (docs/objects.md): the core's `fencing::objects::Objects`
//! behind a handle, with the store's conventions: the same fence struct,
//! receipt and errors, and a result object read like an entry.

use std::ffi::c_char;
use std::ptr;

use fencing::objects::{Object, Objects};

use crate::args;
use crate::boundary::{boundary, boundary_or};
use crate::status::fencing_status;
use crate::types::{self, fencing_fence, fencing_receipt};

/// A handle on fenced objects. Safe to share between threads: any number of
/// threads may call functions on one handle at once. Free it exactly once,
/// after every other call on it has returned.
pub struct fencing_objects {
    objects: Objects,
}

/// Opens the objects `url` names and writes a new handle to `*out`:
/// `memory:` (this handle's own, empty), `file:///DIR` (files under the
/// existing directory DIR), `s3://BUCKET[/PREFIX]` (credentials, region
/// and endpoint from the `AWS_*` variables) or `az://CONTAINER[/PREFIX]`
/// (from the `AZURE_*` variables; docs/objects.md). A bad URL is
/// INVALID_ARGUMENT; a directory that does not exist is BACKEND.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_objects_open(
    url: *const c_char,
    out: *mut *mut fencing_objects,
) -> fencing_status {
    boundary(|| {
        let url = args::text(url, "url")?;
        let out = args::out(out, "out")?;
        let objects = Objects::open(url)?;
        out.set(Box::into_raw(Box::new(fencing_objects { objects })));
        Ok(())
    })
}

/// Frees a handle from `fencing_objects_open` (NULL is a no-op).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_objects_free(objects: *mut fencing_objects) {
    boundary_or((), || args::free_box(objects))
}

fn objects<'a>(ptr: *const fencing_objects) -> Result<&'a Objects, crate::boundary::Failure> {
    args::object(ptr, "objects").map(|o| &o.objects)
}

/// Writes `value_len` bytes at `value` (NULL allowed when `value_len` is 0)
/// as the object at `path` (a relative path, `a/b.csv`), checked against the
/// path's fence: STALE_TOKEN (scope: the path), SEQUENCE_OUT_OF_ORDER, and,
/// when `has_expected_version`, VERSION_MISMATCH unless the object is at
/// `expected_version` (0: it must not exist). On success the receipt goes to
/// `*out_receipt`, which may be NULL when it is not wanted.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_objects_put(
    objects: *const fencing_objects,
    path: *const c_char,
    value: *const u8,
    value_len: usize,
    fence: *const fencing_fence,
    has_expected_version: bool,
    expected_version: u64,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let objects = self::objects(objects)?;
        let path = args::text(path, "path")?;
        let value = args::bytes(value, value_len, "value")?;
        let fence = types::fence(fence, "fence")?;
        let expected = has_expected_version.then_some(expected_version);
        let receipt = objects.put(path, &fence, value, expected)?;
        if let Some(out) = args::optional_out(out_receipt) {
            out.set(receipt.into());
        }
        Ok(())
    })
}

/// Deletes the object at `path`, checked like a put; NOT_FOUND when there is
/// none. The path keeps its fence. The receipt's version is 0
/// (`out_receipt` may be NULL).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_objects_delete(
    objects: *const fencing_objects,
    path: *const c_char,
    fence: *const fencing_fence,
    has_expected_version: bool,
    expected_version: u64,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let objects = self::objects(objects)?;
        let path = args::text(path, "path")?;
        let fence = types::fence(fence, "fence")?;
        let expected = has_expected_version.then_some(expected_version);
        let receipt = objects.delete(path, &fence, expected)?;
        if let Some(out) = args::optional_out(out_receipt) {
            out.set(receipt.into());
        }
        Ok(())
    })
}

/// Reads the object at `path`. Writes a new object to `*out_object`, or
/// NULL when there is none (never written, or deleted); free it with
/// `fencing_object_free`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_objects_get(
    objects: *const fencing_objects,
    path: *const c_char,
    out_object: *mut *mut fencing_object,
) -> fencing_status {
    boundary(|| {
        let objects = self::objects(objects)?;
        let path = args::text(path, "path")?;
        let out = args::out(out_object, "out_object")?;
        let object = objects.get(path)?;
        out.set(object.map_or(ptr::null_mut(), |object| {
            Box::into_raw(Box::new(fencing_object { object }))
        }));
        Ok(())
    })
}

/// An object as read, owned by the caller until `fencing_object_free`.
pub struct fencing_object {
    object: Object,
}

fn object_ref<'a>(o: *const fencing_object) -> Option<&'a Object> {
    args::object(o, "object").ok().map(|o| &o.object)
}

/// The object's bytes: `fencing_object_value_len` of them, valid until the
/// object is freed. Not NUL-terminated. NULL for a NULL object; never
/// dereference it when the length is 0.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_object_value(object: *const fencing_object) -> *const u8 {
    boundary_or(ptr::null(), || {
        object_ref(object).map_or(ptr::null(), |o| o.bytes.as_ptr())
    })
}

/// The length of the object's bytes (0 for a NULL object).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_object_value_len(object: *const fencing_object) -> usize {
    boundary_or(0, || object_ref(object).map_or(0, |o| o.bytes.len()))
}

/// The object's version: it grows with every write of the path, deletes
/// included, and never restarts (0 for a NULL object).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_object_version(object: *const fencing_object) -> u64 {
    boundary_or(0, || object_ref(object).map_or(0, |o| o.version))
}

/// The token of the write that stored this version (0 for a NULL object).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_object_token(object: *const fencing_object) -> u64 {
    boundary_or(0, || object_ref(object).map_or(0, |o| o.token.get()))
}

/// Frees an object from `fencing_objects_get`. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_object_free(object: *mut fencing_object) {
    boundary_or((), || args::free_box(object))
}
