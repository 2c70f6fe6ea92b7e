//! Who a request comes from, as far as the network says: the client's address and whether
//! it came over HTTPS. Only the connection and the proxies the configuration trusts
//! (`http.trusted_proxies`) are believed, never the `Host` header: a request whose peer is
//! a trusted proxy is from the last address its `X-Forwarded-For` names that is no trusted
//! proxy, and came over HTTPS when that proxy says `X-Forwarded-Proto: https`. A cookie is
//! `Secure` when members reach the page over HTTPS: `http.public_url` is `https://…`, or a
//! trusted proxy says so.

use std::net::IpAddr;

use actix_web::HttpRequest;

/// What the configuration says about the way requests reach hearth.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientView {
    /// `http.public_url` starts with `https://`.
    pub public_url_is_https: bool,
    /// `http.trusted_proxies`: the addresses whose forwarding headers are believed.
    pub trusted_proxies: Vec<IpAddr>,
}

impl ClientView {
    /// What `http` (validated: every proxy an IP address) says.
    pub fn of(http: &crate::config::HttpConfig) -> Self {
        ClientView::new(
            http.public_url.as_deref(),
            http.trusted_proxies
                .iter()
                .filter_map(|proxy| proxy.trim().parse().ok())
                .collect(),
        )
    }

    pub fn new(public_url: Option<&str>, trusted_proxies: Vec<IpAddr>) -> Self {
        ClientView {
            public_url_is_https: public_url
                .is_some_and(|url| url.trim().to_ascii_lowercase().starts_with("https://")),
            trusted_proxies,
        }
    }

    fn peer(request: &HttpRequest) -> Option<IpAddr> {
        request.peer_addr().map(|address| address.ip())
    }

    fn came_through_trusted_proxy(&self, request: &HttpRequest) -> bool {
        Self::peer(request).is_some_and(|peer| self.trusted_proxies.contains(&peer))
    }

    /// The client's address: the peer's, or behind trusted proxies the nearest one they
    /// forwarded for that is not one of them.
    pub fn address(&self, request: &HttpRequest) -> String {
        let Some(peer) = Self::peer(request) else {
            return String::new();
        };
        if !self.trusted_proxies.contains(&peer) {
            return peer.to_string();
        }
        let forwarded: Vec<IpAddr> = request
            .headers()
            .get_all("x-forwarded-for")
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .filter_map(|address| address.trim().parse().ok())
            .collect();
        forwarded
            .iter()
            .rev()
            .find(|address| !self.trusted_proxies.contains(address))
            .or(forwarded.first())
            .copied()
            .unwrap_or(peer)
            .to_string()
    }

    /// Whether the member reached the page over HTTPS, so cookies are `Secure`.
    pub fn secure(&self, request: &HttpRequest) -> bool {
        if self.public_url_is_https {
            return true;
        }
        self.came_through_trusted_proxy(request)
            && request
                .headers()
                .get("x-forwarded-proto")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.split(',').next())
                .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn from(peer: &str) -> TestRequest {
        TestRequest::default().peer_addr(format!("{peer}:40000").parse().unwrap())
    }

    #[test]
    fn forwarding_headers_count_only_from_a_trusted_proxy() {
        let view = ClientView::new(None, vec!["10.0.0.1".parse().unwrap()]);
        let direct = from("192.0.2.7")
            .insert_header(("X-Forwarded-For", "203.0.113.9"))
            .insert_header(("X-Forwarded-Proto", "https"))
            .insert_header(("Host", "hearth.example"))
            .to_http_request();
        assert_eq!(view.address(&direct), "192.0.2.7");
        assert!(
            !view.secure(&direct),
            "a stranger's headers are not believed"
        );
        let proxied = from("10.0.0.1")
            .insert_header(("X-Forwarded-For", "198.51.100.1, 203.0.113.9, 10.0.0.1"))
            .insert_header(("X-Forwarded-Proto", "https"))
            .to_http_request();
        assert_eq!(view.address(&proxied), "203.0.113.9");
        assert!(view.secure(&proxied));
        let plain = from("10.0.0.1")
            .insert_header(("X-Forwarded-Proto", "http"))
            .to_http_request();
        assert!(!view.secure(&plain));
        assert_eq!(view.address(&plain), "10.0.0.1");
    }

    #[test]
    fn an_https_public_url_makes_cookies_secure_whatever_the_host() {
        let view = ClientView::new(Some("https://hearth.home.example/"), Vec::new());
        let request = from("127.0.0.1")
            .insert_header(("Host", "localhost"))
            .to_http_request();
        assert!(view.secure(&request));
        let view = ClientView::new(Some("http://hearth.lan"), Vec::new());
        let request = from("192.0.2.7")
            .insert_header(("Host", "hearth.example.org"))
            .to_http_request();
        assert!(!view.secure(&request), "the Host header decides nothing");
    }
}
