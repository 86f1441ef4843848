//! `s3://BUCKET[/PREFIX]`: S3 and the stores that speak its API, through
//! `object_store`'s client. Credentials, region and endpoint come from the
//! standard `AWS_*` variables, as `object_store` reads them
//! (`AmazonS3Builder::from_env`); URL options override them: `endpoint`,
//! `region`, `allow_http` (docs/objects.md). Credentials never come from
//! the URL, and messages show the URL without its options.

use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};

use super::cloud::{CloudUrl, Connector, Scheme};
use super::Opened;
use crate::error::Result;

static S3: Scheme = Scheme {
    scheme: "s3",
    valid_name: bucket_name,
    expected: "expected s3://BUCKET[/PREFIX], a bucket name of 3 to 63 lowercase letters, \
               digits, dots and hyphens",
    options: &["endpoint", "region", "allow_http"],
};

pub(super) fn open(rest: &str) -> Result<Opened> {
    let url = CloudUrl::parse(rest, &S3)?;
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(url.name)
        .with_http_connector(Connector::new("S3")?);
    if let Some(endpoint) = url.option("endpoint") {
        // Over AWS_ENDPOINT_URL_S3 too, which object_store prefers.
        builder = builder
            .with_endpoint(endpoint)
            .with_config(AmazonS3ConfigKey::S3Endpoint, endpoint);
    }
    if let Some(region) = url.option("region") {
        builder = builder.with_region(region);
    }
    if let Some(allow) = url.option("allow_http") {
        builder = builder.with_allow_http(allow == "true");
    }
    let store = builder.build().map_err(|e| {
        url.invalid(&format!(
            "{e}; set the AWS_* variables or the URL's options"
        ))
    })?;
    Ok(url.opened(Arc::new(store)))
}

/// S3's rule for a bucket's name.
fn bucket_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_follow_s3() {
        assert!(bucket_name("fencing-test") && bucket_name("a.b.c"));
        for bad in ["", "ab", "AB", "key:secret@bucket", "a_b", &"a".repeat(64)] {
            assert!(!bucket_name(bad), "{bad}");
        }
    }
}
