//! `fencing object`: fenced objects and files (`fencing::objects`,
//! docs/objects.md), one object per command, named by its whole location.

use fencing::objects::Objects;
use fencing::Error;

use crate::cli::{ObjectArgs, ObjectCommand};
use crate::exit::Failure;
use crate::output;
use crate::verbs::{self, emit, line, text, without_password, Out};

/// The URL forms `fencing object` accepts, as its messages name them.
pub const ACCEPTED: &str =
    "file:///ABS/PATH/TO/OBJECT, s3://BUCKET/KEY[?OPTIONS] or az://CONTAINER/BLOB[?OPTIONS]";

/// An object's whole location, split: the store URL the core opens, and the
/// object's path in that store.
#[derive(Debug, PartialEq, Eq)]
pub struct Location {
    pub store: String,
    pub path: String,
}

/// `file:///ABS/PATH/TO/OBJECT` is the object `ABS/PATH/TO/OBJECT` (the
/// absolute path without its leading slash, as written: no percent-decoding)
/// of the store `file:///`, so that the object is kept beside
/// `/ABS/PATH/TO/OBJECT`, where a plain reader looks. Anything else is
/// `INVALID_ARGUMENT`. The path's own rules (no empty, `.` or `..` segment,
/// no segment ending in `.fenced`) are the core's, checked when it is used.
/// `s3://BUCKET/KEY[?OPTIONS]` is the object `KEY` of the store
/// `s3://BUCKET[?OPTIONS]` (credentials from the `AWS_*` variables), and
/// `az://CONTAINER/BLOB[?OPTIONS]` the object `BLOB` of the store
/// `az://CONTAINER[?OPTIONS]` (from the `AZURE_*` variables).
pub fn split_url(url: &str) -> Result<Location, Failure> {
    let refuse = |why: &str| {
        Failure::invalid(format!(
            "object URL {:?}: {why}; expected the object's whole location, {ACCEPTED}",
            without_password(url)
        ))
    };
    if let Some(rest) = url.strip_prefix("file://") {
        let Some(path) = rest.strip_prefix('/') else {
            return Err(refuse(
                "a file URL names an absolute path after three slashes, with no host",
            ));
        };
        if path.is_empty() {
            return Err(refuse("it names no object"));
        }
        return Ok(Location {
            store: "file:///".to_owned(),
            path: path.to_owned(),
        });
    }
    for (scheme, names) in [
        ("s3://", "an S3 URL names a bucket and a key"),
        ("az://", "an Azure URL names a container and a blob"),
    ] {
        let Some(rest) = url.strip_prefix(scheme) else {
            continue;
        };
        let (location, query) = match rest.split_once('?') {
            Some((location, query)) => (location, format!("?{query}")),
            None => (rest, String::new()),
        };
        let Some((bucket, key)) = location
            .split_once('/')
            .filter(|(b, k)| !b.is_empty() && !k.is_empty())
        else {
            return Err(refuse(names));
        };
        return Ok(Location {
            store: format!("{scheme}{bucket}{query}"),
            path: key.to_owned(),
        });
    }
    if url == "memory:" || url.starts_with("memory:") {
        return Err(refuse(
            "memory: is a new empty store in every command, useless across them",
        ));
    }
    Err(refuse("not a URL of an object"))
}

pub fn main(json: bool, args: ObjectArgs) -> Result<u8, Failure> {
    let out = match args.command {
        ObjectCommand::Put(a) => {
            let (_, at) = location(&a.url.url)?;
            let fence = verbs::fence(&a.fence)?;
            let if_version = if_version(a.if_version.as_deref())?;
            // No limit but memory: an object is not a store entry.
            let bytes = verbs::input(a.value.as_deref(), a.file.as_deref(), None)?;
            let receipt = open(&at)?.put(&at.path, &fence, &bytes, if_version)?;
            Out::new(
                output::receipt(&receipt),
                line(output::receipt_text(&receipt, false)),
            )
        }
        ObjectCommand::Delete(a) => {
            let (_, at) = location(&a.url.url)?;
            let fence = verbs::fence(&a.fence)?;
            let if_version = if_version(a.if_version.as_deref())?;
            let receipt = open(&at)?.delete(&at.path, &fence, if_version)?;
            Out::new(
                output::receipt(&receipt),
                line(output::receipt_text(&receipt, true)),
            )
        }
        ObjectCommand::Get(a) => {
            let (url, at) = location(&a.url)?;
            match open(&at)?.get(&at.path)? {
                Some(o) => Out::new(output::object(&without_password(url), &o), o.bytes),
                // As `get` of a missing key, and as the core's delete of a
                // missing object names it.
                None => {
                    return Err(Failure::Store(Error::NotFound {
                        scope: at.path.clone(),
                        key: at.path,
                    }))
                }
            }
        }
    };
    emit(json, &out)?;
    Ok(0)
}

fn location(raw: &std::ffi::OsStr) -> Result<(&str, Location), Failure> {
    let url = text("the object URL", raw)?;
    Ok((url, split_url(url)?))
}

fn if_version(raw: Option<&std::ffi::OsStr>) -> Result<Option<u64>, Failure> {
    raw.map(|v| verbs::number("--if-version", v)).transpose()
}

fn open(at: &Location) -> Result<Objects, Failure> {
    Ok(Objects::open(&at.store)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, String) {
        let at = split_url(url).unwrap_or_else(|e| panic!("{url}: {e:?}"));
        (at.store, at.path)
    }

    fn refused(url: &str) -> String {
        let e = split_url(url).expect_err(url);
        assert_eq!(e.exit_status(), 17, "{url}: INVALID_ARGUMENT");
        let line = e.line();
        assert!(line.starts_with("INVALID_ARGUMENT: "), "{line}");
        assert!(line.contains(ACCEPTED), "names the accepted form: {line}");
        line
    }

    #[test]
    fn a_file_url_is_the_root_store_and_the_absolute_path() {
        let s = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            split("file:///srv/out/report.csv"),
            s("file:///", "srv/out/report.csv")
        );
        assert_eq!(split("file:///x"), s("file:///", "x"));
        // As written: no percent-decoding, spaces kept.
        assert_eq!(split("file:///a%20b/c d"), s("file:///", "a%20b/c d"));
        // Bad paths are the core's to refuse (it names the rule).
        assert_eq!(split("file:///a//b"), s("file:///", "a//b"));
        assert_eq!(split("file:///a/b.fenced/c"), s("file:///", "a/b.fenced/c"));
    }

    #[test]
    fn anything_else_is_invalid_and_names_the_accepted_form() {
        for url in [
            "memory:",
            "file://relative/dir/x",
            "file://localhost/srv/x",
            "file:/srv/x",
            "file:///",
            "file://",
            "/srv/out/report.csv",
            "srv/out/report.csv",
            "",
            "sqlite:fencing.db",
            "s3://bucket",
            "s3://bucket/",
            "s3:///key",
            "az://container",
            "az://container/",
            "az:///blob",
        ] {
            refused(url);
        }
        assert!(refused("memory:").contains("memory:"));
    }

    #[test]
    fn an_s3_url_is_the_bucket_and_the_key_with_the_options_on_the_store() {
        let at = split_url("s3://b/reports/7.csv?endpoint=http://127.0.0.1:9000").unwrap();
        assert_eq!(at.store, "s3://b?endpoint=http://127.0.0.1:9000");
        assert_eq!(at.path, "reports/7.csv");
        assert_eq!(split_url("s3://b/k").unwrap().store, "s3://b");
        let at = split_url("az://c/reports/7.csv?allow_http=true").unwrap();
        assert_eq!(
            (at.store.as_str(), at.path.as_str()),
            ("az://c?allow_http=true", "reports/7.csv")
        );
    }

    #[test]
    fn a_refused_url_never_shows_a_password() {
        let line = refused("postgres://u:s3cret@h/db");
        assert!(!line.contains("s3cret"), "{line}");
        assert!(line.contains("postgres://u:***@h/db"), "{line}");
    }
}
