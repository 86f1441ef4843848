//! Store URLs: `memory:`, `sqlite:PATH`, `postgres://...`, each with an
//! optional query of store options (`?clock=manual&strict=true`).

use crate::error::{Error, Result};
use crate::token::clip;

pub const MAX_URL_BYTES: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockKind {
    /// The backend's own clock (monotonic in memory, the host's or the
    /// server's wall clock for SQL backends).
    #[default]
    Default,
    Manual,
}

/// Options every backend understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub clock: ClockKind,
    /// Acquire raises the fence to the new token. On by default.
    pub eager_fencing: bool,
    /// A token equal to the fence is stale once that token has written.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            clock: ClockKind::Default,
            eager_fencing: true,
            strict: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Memory,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub location: Location,
    pub options: Options,
}

pub fn parse(url: &str) -> Result<Target> {
    if url.len() > MAX_URL_BYTES {
        return Err(Error::invalid(format!(
            "URL is {} bytes, the limit is {MAX_URL_BYTES}",
            url.len()
        )));
    }
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let location = match base {
        "memory:" => Location::Memory,
        _ => {
            return Err(Error::invalid(format!(
                "unsupported store URL {:?}: expected memory:",
                clip(base)
            )))
        }
    };
    Ok(Target {
        location,
        options: parse_options(query.unwrap_or(""))?,
    })
}

fn parse_options(query: &str) -> Result<Options> {
    let mut options = Options::default();
    let mut seen: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| Error::invalid(format!("URL option {:?} has no value", clip(pair))))?;
        if seen.contains(&name) {
            return Err(Error::invalid(format!("URL option {:?} given twice", clip(name))));
        }
        seen.push(name);
        match name {
            "clock" => {
                options.clock = match value {
                    "default" => ClockKind::Default,
                    "manual" => ClockKind::Manual,
                    _ => return Err(bad_value(name, value, "default or manual")),
                }
            }
            "eager_fencing" => options.eager_fencing = boolean(name, value)?,
            "strict" => options.strict = boolean(name, value)?,
            _ => return Err(Error::invalid(format!("unknown URL option {:?}", clip(name)))),
        }
    }
    Ok(options)
}

fn boolean(name: &str, value: &str) -> Result<bool> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad_value(name, value, "true or false")),
    }
}

fn bad_value(name: &str, value: &str, allowed: &str) -> Error {
    Error::invalid(format!(
        "URL option {name}={:?}: expected {allowed}",
        clip(value)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn memory_with_options() {
        let t = parse("memory:?clock=manual&strict=true&eager_fencing=false").unwrap();
        assert_eq!(t.location, Location::Memory);
        assert_eq!(
            t.options,
            Options {
                clock: ClockKind::Manual,
                eager_fencing: false,
                strict: true
            }
        );
        assert_eq!(parse("memory:").unwrap().options, Options::default());
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "", "memory", "mem:", "memory:x", "redis://x", "memory:?clock", "memory:?clock=fast",
            "memory:?strict=yes", "memory:?strict=true&strict=false", "memory:?color=red",
        ] {
            assert_eq!(parse(bad).unwrap_err().code(), ErrorCode::InvalidArgument, "{bad:?}");
        }
        let long = format!("memory:?{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(parse(&long).unwrap_err().code(), ErrorCode::InvalidArgument);
    }
}
