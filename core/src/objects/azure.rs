//! `az://CONTAINER[/PREFIX]`: Azure Blob Storage (and Azurite, its
//! emulator), through `object_store`'s client. Account, key and endpoint
//! come from the standard `AZURE_*` variables, as `object_store` reads them
//! (`MicrosoftAzureBuilder::from_env`); URL options override them:
//! `endpoint`, `allow_http` (docs/objects.md). Credentials never come from
//! the URL, and messages show the URL without its options.

use std::sync::Arc;

use object_store::azure::MicrosoftAzureBuilder;

use super::cloud::{CloudUrl, Connector, Scheme};
use super::Opened;
use crate::error::Result;

static AZURE: Scheme = Scheme {
    scheme: "az",
    valid_name: container_name,
    expected: "expected az://CONTAINER[/PREFIX], a container name of 3 to 63 lowercase \
               letters, digits and single hyphens, starting and ending with a letter or digit",
    options: &["endpoint", "allow_http"],
};

pub(super) fn open(rest: &str) -> Result<Opened> {
    let url = CloudUrl::parse(rest, &AZURE)?;
    let mut builder = MicrosoftAzureBuilder::from_env()
        .with_container_name(url.name)
        .with_http_connector(Connector::new("Azure")?);
    if let Some(endpoint) = url.option("endpoint") {
        builder = builder.with_endpoint(endpoint.to_owned());
    }
    if let Some(allow) = url.option("allow_http") {
        builder = builder.with_allow_http(allow == "true");
    }
    let store = builder.build().map_err(|e| {
        url.invalid(&format!(
            "{e}; set the AZURE_* variables or the URL's options"
        ))
    })?;
    Ok(url.opened(Arc::new(store)))
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
