//! Addresses for the etcd client's requests. ureq resolves a request's host
//! before it looks for an idle connection, and with a deadline on the call
//! its resolver starts a thread per request to bound the lookup: a thread
//! created and ended for every request, even on a pooled connection to an
//! address written as one. A member written as an IP address needs no
//! lookup at all; only a host name goes to ureq's resolver.

use std::net::{IpAddr, SocketAddr};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

#[derive(Debug, Default)]
pub(super) struct LiteralFirst {
    names: DefaultResolver,
}

impl Resolver for LiteralFirst {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        match literal(uri) {
            Some(address) => {
                let mut found = self.empty();
                found.push(address);
                Ok(found)
            }
            None => self.names.resolve(uri, config, timeout),
        }
    }
}

/// The address of `uri` when its host is an IP address and it names its
/// port (every member URL the client builds does).
fn literal(uri: &Uri) -> Option<SocketAddr> {
    let authority = uri.authority()?;
    let host = authority.host();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some(SocketAddr::new(
        host.parse::<IpAddr>().ok()?,
        authority.port_u16()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_address_with_its_port_is_taken_as_it_is() {
        let at = |u: &str| literal(&u.parse::<Uri>().unwrap());
        assert_eq!(
            at("http://127.0.0.1:2379/v3/kv/txn"),
            Some("127.0.0.1:2379".parse().unwrap())
        );
        assert_eq!(
            at("https://[::1]:2379/v3/kv/txn"),
            Some("[::1]:2379".parse().unwrap())
        );
        assert_eq!(at("http://etcd-0.etcd:2379/v3/kv/txn"), None);
        assert_eq!(at("http://localhost:2379/"), None);
        assert_eq!(at("http://127.0.0.1/"), None);
    }
}
