//! What a store file may hold (docs/sqlite.md, "What the file may hold"):
//! its schema (`sqlite_schema`) is compared on every open with what this
//! build's SQL files create, derived once per process by applying them to
//! an in-memory database, so that a crafted or edited file cannot run
//! triggers of its own against fencing's tables.
//!
//! - Everything named `fencing_*`, or on a table so named (SQLite names
//!   are case-insensitive, so is the prefix), is fencing's: exactly what
//!   this build creates, nothing extra, nothing missing. Tables and indexes
//!   compare by their SQL's tokens (whitespace and comments aside, which is
//!   all `ALTER TABLE ADD COLUMN` changed in the files of the development
//!   builds): a `CHECK`, `DEFAULT`, `COLLATE`, type or conflict clause of
//!   its own is a different table. The view and trigger of check.sql
//!   compare by their exact text, unless this open replaces them anyway.
//! - The caller's own tables, indexes and views in the same file are theirs
//!   (docs/sqlite.md keeps the tables it fences there): they run nothing.
//!   A trigger of theirs may use `fencing_check`, and no other fencing name.

use std::sync::OnceLock;

use rusqlite::Connection;

use super::{backend, CHECK, MIGRATIONS};
use crate::backend::sql_text::{fill, should_install};
use crate::error::{BackendErrorKind, Error, Result};

/// One row of `sqlite_schema`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Object {
    kind: String,
    name: String,
    table: String,
    sql: Option<String>,
}

impl Object {
    pub(super) fn kind(&self) -> &str {
        &self.kind
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }
}

/// The one query an open spends on the comparison.
pub(super) const QUERY: &str = "SELECT type, name, tbl_name, sql FROM main.sqlite_schema";

pub(super) fn read(conn: &Connection) -> Result<Vec<Object>> {
    let mut stmt = conn.prepare(QUERY).map_err(backend)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Object {
                kind: r.get(0)?,
                name: r.get(1)?,
                table: r.get(2)?,
                sql: r.get(3)?,
            })
        })
        .map_err(backend)?;
    rows.collect::<rusqlite::Result<_>>().map_err(backend)
}

/// What this build creates.
struct Reference {
    /// For each schema version, the objects its tables migration leaves.
    tables: Vec<(i64, Vec<Object>)>,
    /// The `fencing_check` view and trigger, as check.sql installs them.
    check: Vec<Object>,
    /// For each schema version, the tables a later migration drops
    /// (`DROP TABLE IF EXISTS name`): whatever their text, they are gone
    /// before the open's transaction commits.
    dropped: Vec<(i64, Vec<String>)>,
}

fn reference() -> Result<&'static Reference> {
    static REFERENCE: OnceLock<std::result::Result<Reference, String>> = OnceLock::new();
    REFERENCE
        .get_or_init(|| build().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| {
            Error::backend(
                BackendErrorKind::Other,
                format!("sqlite: this build's own schema: {e}"),
            )
        })
}

fn build() -> Result<Reference> {
    let conn = Connection::open_in_memory().map_err(backend)?;
    let mut tables = Vec::new();
    for (version, migration) in MIGRATIONS {
        conn.execute_batch(&fill(migration)).map_err(backend)?;
        tables.push((version, read(&conn)?));
    }
    let before = read(&conn)?;
    conn.execute_batch(&fill(CHECK)).map_err(backend)?;
    let check = read(&conn)?
        .into_iter()
        .filter(|o| !before.contains(o))
        .collect();
    let dropped = MIGRATIONS
        .iter()
        .map(|(version, _)| {
            let later = MIGRATIONS.iter().filter(|(v, _)| v > version);
            (*version, later.flat_map(|(_, sql)| drops(sql)).collect())
        })
        .collect();
    Ok(Reference {
        tables,
        check,
        dropped,
    })
}

/// The tables a migration drops.
fn drops(sql: &str) -> Vec<String> {
    let words = tokens(sql);
    words
        .windows(5)
        .filter(|w| {
            w[..4]
                .iter()
                .zip(["DROP", "TABLE", "IF", "EXISTS"])
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
        })
        .map(|w| w[4].to_owned())
        .collect()
}

/// Whether fencing owns the object: its name or its table's is
/// `fencing_*` (`sqlite_autoindex_fencing_*` is on a fencing table).
fn ours(o: &Object) -> bool {
    let fencing = |n: &str| n.len() >= 8 && n[..8].eq_ignore_ascii_case("fencing_");
    fencing(&o.name) || fencing(&o.table)
}

/// The SQL text of an object for a message: whole, or its first 300 bytes.
fn shown(sql: &Option<String>) -> String {
    let sql = sql.as_deref().unwrap_or("(no SQL)");
    match sql.char_indices().nth(300) {
        Some((at, _)) => format!("{}...", &sql[..at]),
        None => sql.to_owned(),
    }
}

/// Checks a file of schema `version` (a version this build knows, 1 or
/// more), whose `fencing_check` record (hash, version) is `installed`,
/// against what this build creates; `ours_hash` is the hash of this
/// build's check.sql. `Ok` means the file may be migrated and opened.
pub(super) fn verify(
    file: &[Object],
    version: i64,
    installed: Option<(String, String)>,
    ours_hash: &str,
) -> Result<()> {
    let reference = reference()?;
    let tables = reference
        .tables
        .iter()
        .find(|(v, _)| *v == version)
        .map(|(_, t)| t.as_slice())
        .ok_or_else(|| {
            Error::backend(
                BackendErrorKind::Other,
                format!("sqlite: no reference for version {version}"),
            )
        })?;
    let dropped: &[String] = reference
        .dropped
        .iter()
        .find(|(v, _)| *v == version)
        .map_or(&[], |(_, d)| d.as_slice());
    // The view and trigger: checked by their text when the file records
    // ours, replaced by this open when it records an older or another
    // build's of this release, unknowable when a newer release wrote them.
    let replaced = match &installed {
        Some((hash, _)) if hash == ours_hash => false,
        Some((_, by)) if !should_install(ours_hash, installed.clone()) => {
            return Err(Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "sqlite: the file's fencing_check view and trigger were installed by fencing \
                 {by}, newer than this build ({}), with a text this build cannot check: open \
                 the file with fencing {by} or newer",
                    crate::backend::sql_text::OURS
                ),
            ));
        }
        _ => true,
    };
    let expected: Vec<&Object> = tables.iter().chain(&reference.check).collect();
    for o in file {
        if !ours(o) {
            if o.kind == "trigger" {
                if let Some(name) = fencing_name_used(o.sql.as_deref().unwrap_or("")) {
                    return Err(Error::backend(
                        BackendErrorKind::Refused,
                        format!(
                            "sqlite: the file has a trigger \"{}\" that fencing did not create, \
                         which names fencing's \"{name}\" (a trigger of yours may only insert \
                         into fencing_check): {}",
                            o.name,
                            shown(&o.sql)
                        ),
                    ));
                }
            }
            continue;
        }
        let Some(want) = expected.iter().find(|w| w.name == o.name) else {
            if o.kind == "table" && dropped.iter().any(|d| d == &o.name) {
                continue;
            }
            return Err(Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "sqlite: the file has a {} \"{}\" that fencing did not create: {}",
                    o.kind,
                    o.name,
                    shown(&o.sql)
                ),
            ));
        };
        let check = reference.check.contains(want);
        let same = want.kind == o.kind
            && want.table == o.table
            && match (o.kind.as_str(), &want.sql, &o.sql) {
                _ if check && replaced => true,
                ("table" | "index", Some(a), Some(b)) => tokens(a) == tokens(b),
                (_, a, b) => a == b,
            };
        if !same {
            return Err(Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "sqlite: the file's {} \"{}\" differs from what fencing creates: {}",
                    o.kind,
                    o.name,
                    shown(&o.sql)
                ),
            ));
        }
    }
    for want in expected {
        let replaced_here = replaced && reference.check.contains(want);
        if !replaced_here && !file.iter().any(|o| o.name == want.name) {
            return Err(Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "sqlite: the file lacks the {} \"{}\" that fencing creates",
                    want.kind, want.name
                ),
            ));
        }
    }
    Ok(())
}

fn ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// The first name of fencing's, other than `fencing_check`, that a
/// trigger's text names, quoted or not, in any case; `None` if none.
/// (A name in a string literal counts too: refusing it is the safe side.)
fn fencing_name_used(sql: &str) -> Option<&str> {
    let bytes = sql.as_bytes();
    let lower = sql.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("fencing_").map(|i| i + from) {
        from = at + 1;
        if at > 0 && ident_char(bytes[at - 1]) {
            continue;
        }
        let end = (at..bytes.len())
            .find(|&i| !ident_char(bytes[i]))
            .unwrap_or(bytes.len());
        if !lower[at..end].eq("fencing_check") {
            return Some(&sql[at..end]);
        }
    }
    None
}

/// The tokens of SQL text as SQLite reads them, whitespace and comments
/// left out: identifiers, keywords and numbers, quoted strings and names
/// (whole, quotes included) and single punctuation characters.
fn tokens(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            i = sql[i..].find('\n').map_or(b.len(), |n| i + n + 1);
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = sql[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
            continue;
        }
        if matches!(c, b'\'' | b'"' | b'`' | b'[') {
            let close = if c == b'[' { b']' } else { c };
            i += 1;
            loop {
                match b.get(i) {
                    None => break,
                    // A doubled quote is one quote inside (not in [...]).
                    Some(&q) if q == close && c != b'[' && b.get(i + 1) == Some(&close) => i += 2,
                    Some(&q) if q == close => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
        } else if ident_char(c) {
            while i < b.len() && ident_char(b[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push(&sql[start..i]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_leave_out_only_whitespace_and_comments() {
        assert_eq!(
            tokens("CREATE TABLE t (\n  a INTEGER -- x\n, b TEXT DEFAULT 'it''s' /* y */)"),
            [
                "CREATE", "TABLE", "t", "(", "a", "INTEGER", ",", "b", "TEXT", "DEFAULT",
                "'it''s'", ")"
            ]
        );
        assert_ne!(tokens("a INTEGER NOT NULL"), tokens("a INTEGERNOT NULL"));
        assert_eq!(tokens("\"a b\" [c d]"), ["\"a b\"", "[c d]"]);
    }

    #[test]
    fn fencing_names_in_triggers_are_found_however_written() {
        for (sql, found) in [
            ("UPDATE fencing_scopes SET x = 1", Some("fencing_scopes")),
            (
                "UPDATE \"FENCING_SCOPES\" SET x = 1",
                Some("FENCING_SCOPES"),
            ),
            ("DELETE FROM main.[Fencing_Floors]", Some("Fencing_Floors")),
            ("INSERT INTO fencing_check VALUES (1, 2, 3)", None),
            ("INSERT INTO \"fencing_check\" VALUES (1, 2, 3)", None),
            ("UPDATE my_fencing_notes SET x = 1", None),
            (
                "UPDATE fencing_check_insert SET x = 1",
                Some("fencing_check_insert"),
            ),
        ] {
            assert_eq!(fencing_name_used(sql), found, "{sql}");
        }
    }

    #[test]
    fn the_reference_is_what_the_sql_files_create() {
        let r = reference().unwrap();
        let names: Vec<&str> = r.check.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["fencing_check", "fencing_check_insert"]);
        assert!(r
            .dropped
            .iter()
            .any(|(v, d)| *v == 4 && d == &["fencing_meta"]));
        let last = &r.tables.last().unwrap().1;
        assert!(last.iter().any(|o| o.name == "fencing_installed"));
        assert!(last.iter().any(|o| o.name == "fencing_ceiling"));
        let v5 = &r.tables.iter().find(|(v, _)| *v == 5).unwrap().1;
        assert!(!v5.iter().any(|o| o.name == "fencing_ceiling"));
    }
}
