//! `az://CONTAINER[/PREFIX]`: Azure Blob Storage (and Azurite, its
//! emulator), through `object_store`'s client. Account, key and endpoint
//! come from the standard `AZURE_*` variables, as `object_store` reads them
//! (`MicrosoftAzureBuilder::from_env`); URL options override them:
//! `endpoint`, `allow_http` (docs/objects.md). Credentials never come from
//! the URL, and messages show the URL without its options.

use std::sync::Arc;

use object_store::azure::MicrosoftAzureBuilder;
use object_store::path::Path;

use super::cloud::{CloudUrl, Connector};
use super::{check_path, Opened};
use crate::error::{Error, Result};

pub(super) fn open(rest: &str) -> Result<Opened> {
    // Shown without its options, nor more than a container name can hold.
    let shown = |location: &str| {
        let container = location.split('/').next().unwrap_or_default();
        if container_name(container) {
            format!("az://{location}")
        } else {
            "az://...".to_owned()
        }
    };
    let url = CloudUrl::parse(rest, shown, &["endpoint", "allow_http"])?;
    let (container, prefix) = url.location.split_once('/').unwrap_or((url.location, ""));
    let bad = |why: &str| Error::invalid(format!("objects URL {:?}: {why}", shown(url.location)));
    if !container_name(container) {
        return Err(bad(
            "expected az://CONTAINER[/PREFIX], a container name of 3 to 63 lowercase letters, \
             digits and single hyphens, starting and ending with a letter or digit",
        ));
    }
    let prefix = prefix.trim_end_matches('/');
    if !prefix.is_empty() {
        check_path(prefix)?;
    }
    let mut builder = MicrosoftAzureBuilder::from_env()
        .with_container_name(container)
        .with_http_connector(Connector::new("Azure")?);
    if let Some(endpoint) = url.option("endpoint") {
        builder = builder.with_endpoint(endpoint.to_owned());
    }
    if let Some(allow) = url.option("allow_http") {
        builder = builder.with_allow_http(allow == "true");
    }
    let store = builder.build().map_err(|e| {
        bad(&format!(
            "{e}; set the AZURE_* variables or the URL's options"
        ))
    })?;
    Ok(Opened {
        store: Arc::new(store),
        prefix: if prefix.is_empty() {
            Path::default()
        } else {
            Path::from(prefix)
        },
        local_root: None,
        probe: true,
    })
}

/// Azure's rule for a container's name.
fn container_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (3..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
        && !name.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names_follow_azure() {
        assert!(container_name("fencing-test") && container_name("abc") && container_name("a1-b2"));
        for bad in [
            "",
            "ab",
            "AB",
            "key:secret@c",
            "a.b",
            "a_b",
            "-ab",
            "ab-",
            "a--b",
            &"a".repeat(64),
        ] {
            assert!(!container_name(bad), "{bad}");
        }
    }
}
