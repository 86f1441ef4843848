//! Where a fenced object path keeps its state (docs/objects.md, "Layout";
//! docs/semantics.md, "Fenced objects"): for the path `P`, every object of
//! the library's lives under `P.fenced/`:
//!
//! - `P.fenced/VVVVVVVVVVVVVVVVVVVV` (20 digits): the **claim** of version V,
//!   created only if absent; a small JSON record of the write (token, seq,
//!   the writer's nonce, the data object's name, or none for a delete).
//! - `P.fenced/VVVVVVVVVVVVVVVVVVVV-TTTTTTTTTTTTTTTTTTTT-NNNNNNNNNNNNNNNN`:
//!   the **data** of a put that asked for version V with token T (N: a
//!   random nonce, so two writers never share one): the user's bytes as
//!   they are, written before the claim that names it.
//! - `P.fenced/floor-FFFFFFFFFFFFFFFFFFFF`: a **floor**: every claim below F
//!   may be gone; published before any of them is deleted.
//!
//! Twenty digits hold every u64, so the names of one kind sort as numbers.

use object_store::path::Path;
use serde_json::{json, Value};

use crate::error::{BackendErrorKind, Error, Result};
use crate::token::Token;

/// The suffix of the folder that holds a path's state.
pub(super) const FOLDER_SUFFIX: &str = ".fenced";
const FLOOR: &str = "floor-";

/// The folder of the fenced path `path` under `prefix`.
pub(super) fn folder(prefix: &Path, path: &str) -> Path {
    Path::from(format!("{}{path}{FOLDER_SUFFIX}", dir_of(prefix)))
}

fn dir_of(prefix: &Path) -> String {
    match prefix.as_ref() {
        "" => String::new(),
        p => format!("{p}/"),
    }
}

pub(super) fn claim(folder: &Path, version: u64) -> Path {
    folder.clone().join(format!("{version:020}"))
}

/// The length of a data object's name: the longest of the library's.
pub(super) const DATA_NAME_LEN: usize = 20 + 1 + 20 + 1 + 16;

pub(super) fn data(folder: &Path, version: u64, token: Token, nonce: u64) -> Path {
    folder
        .clone()
        .join(format!("{version:020}-{:020}-{nonce:016x}", token.get()))
}

pub(super) fn floor(folder: &Path, at: u64) -> Path {
    folder.clone().join(format!("{FLOOR}{at:020}"))
}

/// One object found in a path's folder, by its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Found {
    Claim(u64),
    /// The version it asked for.
    Data(u64),
    Floor(u64),
    /// Not a name of the library's: left alone.
    Other,
}

pub(super) fn parse(name: &str) -> Found {
    let number = |s: &str| {
        (s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    if let Some(at) = name.strip_prefix(FLOOR).and_then(number) {
        return Found::Floor(at);
    }
    if let Some(v) = number(name) {
        return Found::Claim(v);
    }
    let mut parts = name.split('-');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(v), Some(t), Some(n), None)
            if n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit()) && number(t).is_some() =>
        {
            number(v).map_or(Found::Other, Found::Data)
        }
        _ => Found::Other,
    }
}

/// What a claim records: the write that took its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Claim {
    pub token: Token,
    pub seq: Option<u64>,
    /// The writer's own number (its data object's too): a writer told that
    /// the version was taken knows its own claim.
    pub nonce: u64,
    /// The data object's name in the folder; `None`: a delete.
    pub data: Option<String>,
}

impl Claim {
    pub fn encode(&self) -> Vec<u8> {
        let record = json!({
            "token": self.token.get(),
            "seq": self.seq,
            "nonce": self.nonce,
            "data": self.data,
        });
        record.to_string().into_bytes()
    }

    pub fn decode(bytes: &[u8], at: &Path) -> Result<Claim> {
        let corrupt = || {
            Error::backend(
                BackendErrorKind::Corrupt,
                format!("objects: the claim {at} is not a record of this library's"),
            )
        };
        let value: Value = serde_json::from_slice(bytes).map_err(|_| corrupt())?;
        let token = value["token"]
            .as_u64()
            .and_then(Token::new)
            .ok_or_else(corrupt)?;
        let seq = match &value["seq"] {
            Value::Null => None,
            v => Some(v.as_u64().ok_or_else(corrupt)?),
        };
        let nonce = value["nonce"].as_u64().ok_or_else(corrupt)?;
        let data = match &value["data"] {
            Value::Null => None,
            Value::String(s) if matches!(parse(s), Found::Data(_)) => Some(s.clone()),
            _ => return Err(corrupt()),
        };
        Ok(Claim {
            token,
            seq,
            nonce,
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_as_numbers_and_parse_back() {
        let f = folder(&Path::from("jobs"), "report.csv");
        assert_eq!(f.as_ref(), "jobs/report.csv.fenced");
        assert_eq!(folder(&Path::default(), "a/b").as_ref(), "a/b.fenced");
        let t = Token::new(7).unwrap();
        let c = claim(&f, 42);
        let d = data(&f, 42, t, 0xabc);
        let fl = floor(&f, 9);
        assert_eq!(parse(c.filename().unwrap()), Found::Claim(42));
        assert_eq!(parse(d.filename().unwrap()), Found::Data(42));
        assert_eq!(d.filename().unwrap().len(), DATA_NAME_LEN);
        assert_eq!(parse(fl.filename().unwrap()), Found::Floor(9));
        assert!(claim(&f, 9).as_ref() < claim(&f, 10).as_ref());
        assert!(claim(&f, u64::MAX)
            .as_ref()
            .ends_with("18446744073709551615"));
        for other in ["", "x", "42", "00000000000000000042-x", "floor-1", "README"] {
            assert_eq!(parse(other), Found::Other, "{other}");
        }
    }

    #[test]
    fn a_claim_reads_back_and_a_foreign_one_is_corrupt() {
        let at = Path::from("p.fenced/00000000000000000001");
        let c = Claim {
            token: Token::new(u64::MAX >> 1).unwrap(),
            seq: Some(3),
            nonce: 0xff,
            data: Some("00000000000000000001-00000000000000000005-00000000000000ff".into()),
        };
        assert_eq!(Claim::decode(&c.encode(), &at).unwrap(), c);
        let gone = Claim {
            data: None,
            seq: None,
            ..c
        };
        assert_eq!(Claim::decode(&gone.encode(), &at).unwrap(), gone);
        for bad in [
            &b"{}"[..],
            b"[]",
            b"x",
            br#"{"token":0}"#,
            br#"{"token":1,"data":"../x"}"#,
        ] {
            assert!(Claim::decode(bad, &at).is_err());
        }
    }
}
