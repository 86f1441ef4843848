//! libpq's password sources for a `postgres://` URL that names no password
//! (docs/postgres.md, "Credentials"): `PGPASSWORD`, else the first matching
//! line of the password file (`PGPASSFILE`, else `~/.pgpass`), which is
//! ignored with a warning when anyone but its owner can reach it. The
//! environment is passed in, so that tests need not change the process's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a password-file line is matched against: one host of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    pub host: String,
    pub port: String,
    pub dbname: String,
    pub user: String,
}

/// The password libpq would use for `keys` (one per host of the URL, in
/// order: the first host with a matching line gives it), and a warning to
/// print when the password file was skipped. Never the URL's own password:
/// call this only when the URL has none.
pub(crate) fn lookup(
    keys: &[Key],
    env: impl Fn(&str) -> Option<OsString>,
) -> (Option<Vec<u8>>, Option<String>) {
    // As libpq: an empty PGPASSWORD is no password.
    if let Some(password) = env("PGPASSWORD").filter(|p| !p.is_empty()) {
        return (Some(password.into_encoded_bytes()), None);
    }
    let file = match env("PGPASSFILE").filter(|p| !p.is_empty()) {
        Some(file) => PathBuf::from(file),
        None => match env("HOME").filter(|h| !h.is_empty()) {
            Some(home) => Path::new(&home).join(".pgpass"),
            None => return (None, None),
        },
    };
    match read(&file) {
        Ok(None) => (None, None),
        Ok(Some(contents)) => (keys.iter().find_map(|k| matching(&contents, k)), None),
        Err(warning) => (None, Some(warning)),
    }
}

/// The password file's contents; `None` when it does not exist or cannot
/// be read (libpq ignores it silently then), a warning when it is not a
/// plain file or its group or others have any access to it.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Err(format!(
            "password file {path:?} is not a plain file: ignored"
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "password file {path:?} has group or world access: ignored (permissions \
                 should be u=rw (0600) or less, as libpq requires)"
            ));
        }
    }
    Ok(std::fs::read(path).ok())
}

/// The password of the first line of `contents` that matches `key`, in
/// libpq's format: `host:port:database:user:password`, a field `*` matches
/// anything, `\` escapes the next character (`\:`, `\\`), lines starting
/// with `#` are comments. An empty password is none.
pub(crate) fn matching(contents: &[u8], key: &Key) -> Option<Vec<u8>> {
    for line in contents.split(|&b| b == b'\n') {
        let mut line = line;
        while let Some(rest) = line.strip_suffix(b"\r") {
            line = rest;
        }
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let mut rest = line;
        let fields = [&key.host, &key.port, &key.dbname, &key.user];
        if fields.iter().all(|f| match field(rest, f.as_bytes()) {
            Some(after) => {
                rest = after;
                true
            }
            None => false,
        }) {
            let password = unescape(rest);
            return (!password.is_empty()).then_some(password);
        }
    }
    None
}

/// libpq's `pwdfMatchesString`: what follows the field at the start of
/// `line` if it matches `token`.
fn field<'a>(line: &'a [u8], token: &[u8]) -> Option<&'a [u8]> {
    if line.starts_with(b"*:") {
        return Some(&line[2..]);
    }
    let (mut i, mut t) = (0, 0);
    while i < line.len() {
        let escaped = line[i] == b'\\';
        if escaped {
            i += 1;
        }
        let c = line.get(i).copied();
        if c == Some(b':') && !escaped && t == token.len() {
            return Some(&line[i + 1..]);
        }
        if t == token.len() || c != Some(token[t]) {
            return None;
        }
        i += 1;
        t += 1;
    }
    None
}

/// The password field: up to the first unescaped `:`, escapes removed.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() && field[i] != b':' {
        if field[i] == b'\\' && i + 1 < field.len() {
            i += 1;
        }
        out.push(field[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(host: &str, port: &str, dbname: &str, user: &str) -> Key {
        Key {
            host: host.into(),
            port: port.into(),
            dbname: dbname.into(),
            user: user.into(),
        }
    }

    fn found(contents: &str, k: &Key) -> Option<String> {
        matching(contents.as_bytes(), k).map(|p| String::from_utf8(p).unwrap())
    }

    #[test]
    fn the_first_matching_line_wins() {
        let file = "\
# a comment: db.example.com:5432:app:alice:not-this
db.example.com:5432:app:alice:first
db.example.com:5432:app:alice:second
*:*:*:alice:any-host
";
        let k = key("db.example.com", "5432", "app", "alice");
        assert_eq!(found(file, &k).as_deref(), Some("first"));
        assert_eq!(
            found(file, &key("other", "5433", "x", "alice")).as_deref(),
            Some("any-host")
        );
        assert_eq!(
            found(file, &key("db.example.com", "5432", "app", "bob")),
            None
        );
        // A comment is only a line that starts with #.
        assert_eq!(
            found("#h:1:d:u:p\n", &key("#h", "1", "d", "u")),
            None,
            "a comment never matches"
        );
        assert_eq!(found("", &k), None);
    }

    #[test]
    fn wildcards_are_whole_fields() {
        let k = key("h", "5432", "app", "alice");
        assert_eq!(found("*:*:*:*:pw", &k).as_deref(), Some("pw"));
        assert_eq!(found("h:*:app:*:pw", &k).as_deref(), Some("pw"));
        // `*` inside a field is a plain character.
        assert_eq!(found("h*:5432:app:alice:pw", &k), None);
        assert_eq!(
            found("*h:5432:app:alice:pw", &key("*h", "5432", "app", "alice")).as_deref(),
            Some("pw")
        );
        // Every field must match, not a prefix of it.
        assert_eq!(found("h:543:app:alice:pw", &k), None);
        assert_eq!(found("h:54321:app:alice:pw", &k), None);
        assert_eq!(found("h:5432:app:alice", &k), None, "no password field");
    }

    #[test]
    fn escapes_in_fields_and_password() {
        let k = key("h", "5432", "a:b", "c\\d");
        assert_eq!(
            found("h:5432:a\\:b:c\\\\d:p\\:w\\\\x:ignored", &k).as_deref(),
            Some("p:w\\x")
        );
        // As in libpq, an unescaped colon also matches a colon of the value
        // (and the escaped backslash a backslash).
        assert_eq!(found("h:5432:a:b:c\\\\d:pw", &k).as_deref(), Some("pw"));
        // A lone backslash escapes the next character: `c\d` is `cd`.
        assert_eq!(found("h:5432:a\\:b:c\\d:pw", &k), None);
        // CRLF line ends, and a trailing backslash stays.
        assert_eq!(
            found("h:5432:app:u:pw\\\r\n", &key("h", "5432", "app", "u")).as_deref(),
            Some("pw\\")
        );
        // An empty password is none.
        assert_eq!(
            found(
                "h:5432:app:u:\n*:*:*:*:later",
                &key("h", "5432", "app", "u")
            ),
            None
        );
    }

    #[test]
    fn not_utf8_passwords_are_bytes() {
        let k = key("h", "1", "d", "u");
        assert_eq!(
            matching(b"h:1:d:u:\xff\xfe\n", &k),
            Some(b"\xff\xfe".to_vec())
        );
    }

    fn env(pairs: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    /// `mode` is a unix file mode: elsewhere the file keeps its ACL.
    fn write(path: &Path, contents: &str, mode: u32) {
        std::fs::write(path, contents).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = mode;
    }

    #[test]
    fn pgpassword_then_pgpassfile_then_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let file = home.join("other.pgpass");
        write(&home.join(".pgpass"), "*:*:*:*:from-home\n", 0o600);
        write(&file, "h:5432:d:u:from-pgpassfile\n", 0o600);
        let keys = [key("h", "5432", "d", "u")];
        let pw = |e: &dyn Fn(&str) -> Option<OsString>| {
            let (p, w) = lookup(&keys, e);
            assert_eq!(w, None);
            p.map(|p| String::from_utf8(p).unwrap())
        };
        let secret = Path::new("from-env");
        let empty = Path::new("");
        assert_eq!(
            pw(&env(&[
                ("PGPASSWORD", secret),
                ("PGPASSFILE", &file),
                ("HOME", home)
            ]))
            .as_deref(),
            Some("from-env")
        );
        assert_eq!(
            pw(&env(&[
                ("PGPASSWORD", empty),
                ("PGPASSFILE", &file),
                ("HOME", home)
            ]))
            .as_deref(),
            Some("from-pgpassfile")
        );
        assert_eq!(pw(&env(&[("HOME", home)])).as_deref(), Some("from-home"));
        // PGPASSFILE replaces ~/.pgpass, even when it matches nothing.
        let nothing = [key("x", "1", "d", "u")];
        let (p, w) = lookup(&nothing, env(&[("PGPASSFILE", &file), ("HOME", home)]));
        assert_eq!((p, w), (None, None));
        // A missing file is silently nothing, as in libpq.
        let missing = home.join("missing");
        assert_eq!(
            lookup(&keys, env(&[("PGPASSFILE", &missing)])),
            (None, None)
        );
        assert_eq!(lookup(&keys, env(&[])), (None, None));
        // The first host with a line gives the password.
        let two = [key("x", "1", "d", "u"), key("h", "5432", "d", "u")];
        let (p, _) = lookup(&two, env(&[("PGPASSFILE", &file)]));
        assert_eq!(p.as_deref(), Some(&b"from-pgpassfile"[..]));
    }

    #[test]
    #[cfg(unix)] // File modes: libpq checks none on Windows either.
    fn a_file_others_can_reach_is_ignored_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        let keys = [key("h", "5432", "d", "u")];
        for mode in [0o644, 0o640, 0o604, 0o601, 0o610, 0o660, 0o666] {
            write(&file, "*:*:*:*:secret-pw\n", mode);
            let (p, w) = lookup(&keys, env(&[("PGPASSFILE", &file)]));
            assert_eq!(p, None, "mode {mode:o}");
            let w = w.unwrap();
            assert!(w.contains("group or world access"), "{w}");
            assert!(!w.contains("secret-pw"), "{w}");
        }
        for mode in [0o600, 0o400] {
            write(&file, "*:*:*:*:secret-pw\n", mode);
            let (p, w) = lookup(&keys, env(&[("PGPASSFILE", &file)]));
            assert_eq!(
                (p.as_deref(), w),
                (Some(&b"secret-pw"[..]), None),
                "mode {mode:o}"
            );
        }
        // A directory is not a password file.
        let (p, w) = lookup(&keys, env(&[("PGPASSFILE", dir.path())]));
        assert_eq!(p, None);
        assert!(w.unwrap().contains("not a plain file"));
    }
}
