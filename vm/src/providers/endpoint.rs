//! A model endpoint's URL, parsed by the `url` crate (WHATWG rules, as browsers and reqwest
//! parse it), never split by hand: `https://evil.example\.anthropic.com` is host
//! `evil.example`, whatever its text ends with.

use std::net::IpAddr;

use url::{Host, Url};

/// A parsed `http(s)://host[:port]/path[?query]`, without credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    url: Url,
}

impl Endpoint {
    pub(crate) fn parse(text: &str) -> Result<Endpoint, String> {
        let text = text.trim();
        let bad = || format!("endpoint `{text}` is not an http:// or https:// URL");
        let url = Url::parse(text).map_err(|_| bad())?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(bad());
        }
        if !url.username().is_empty() || url.password().is_some() {
            // The text is not echoed: it holds a credential.
            return Err(format!(
                "the {} endpoint for host `{}` carries credentials: put the key in an environment variable",
                url.scheme(),
                url.host_str().unwrap_or_default()
            ));
        }
        Ok(Endpoint { url })
    }

    pub(crate) fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// The host as the URL serializes it: lower-cased, punycode, IPv6 in brackets.
    #[cfg(test)]
    pub(crate) fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }

    /// The port when the URL names one other than the scheme's default.
    pub(crate) fn port(&self) -> Option<u16> {
        self.url.port()
    }

    /// The path and the query (`/v1`, `/openai/deployments/d?api-version=…`); empty for `/`.
    pub(crate) fn path(&self) -> String {
        let path = match self.url.path() {
            "/" => "",
            path => path,
        };
        match self.url.query() {
            Some(query) => format!("{path}?{query}"),
            None => path.to_string(),
        }
    }

    /// `scheme://host[:port]` and the endpoint's path and query, for messages.
    pub(crate) fn display(&self) -> String {
        self.with_path(&self.path())
    }

    pub(crate) fn is_loopback(&self) -> bool {
        match self.url.host() {
            Some(Host::Domain(domain)) => domain == "localhost",
            Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
            Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
            None => false,
        }
    }

    /// The host is `domain` itself.
    pub(crate) fn host_is(&self, domain: &str) -> bool {
        matches!(self.url.host(), Some(Host::Domain(host)) if host == domain)
    }

    /// The host is a subdomain of `domain` (at least one label before it), not `domain`.
    pub(crate) fn host_under(&self, domain: &str) -> bool {
        match self.url.host() {
            Some(Host::Domain(host)) => host
                .strip_suffix(domain)
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty()),
            _ => false,
        }
    }

    /// The URL with `path` (a path, possibly with a query) replacing the path and query.
    pub(crate) fn with_path(&self, path: &str) -> String {
        format!("{}{path}", self.url.origin().ascii_serialization())
    }
}

/// Whether a request URL's host is on the loopback interface.
pub(crate) fn is_loopback(url: &str) -> bool {
    Endpoint::parse(url).is_ok_and(|endpoint| endpoint.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_what_the_url_standard_says() {
        let evil = Endpoint::parse(r"https://evil.example\.anthropic.com").unwrap();
        assert_eq!(evil.host(), "evil.example");
        assert!(!evil.host_under("anthropic.com"));
        let cases = [
            ("https://API.Anthropic.COM/v1", "api.anthropic.com", ""),
            (
                "https://api.openai.com.evil.example/v1",
                "api.openai.com.evil.example",
                "",
            ),
            ("http://[::1]:8000/v1", "[::1]", "8000"),
            ("http://127.1:9/", "127.0.0.1", "9"),
            ("https://api.openai.com:443/v1", "api.openai.com", ""),
        ];
        for (text, host, port) in cases {
            let endpoint = Endpoint::parse(text).unwrap();
            let shown = endpoint.port().map(|p| p.to_string()).unwrap_or_default();
            assert_eq!((endpoint.host(), shown.as_str()), (host, port), "{text}");
        }
        assert!(Endpoint::parse("http://[::1]:8000").unwrap().is_loopback());
        assert!(Endpoint::parse("http://127.0.0.2").unwrap().is_loopback());
        assert!(Endpoint::parse("http://LOCALHOST:1").unwrap().is_loopback());
        assert!(!Endpoint::parse("http://localhost.evil.example")
            .unwrap()
            .is_loopback());
        let sub = Endpoint::parse("https://res.openai.azure.com").unwrap();
        assert!(sub.host_under("openai.azure.com") && !sub.host_is("openai.azure.com"));
        assert!(!Endpoint::parse("https://evilopenai.azure.com")
            .unwrap()
            .host_under("openai.azure.com"));
    }

    #[test]
    fn paths_and_bad_urls() {
        let endpoint =
            Endpoint::parse("https://r.openai.azure.com/openai/deployments/d?api-version=1")
                .unwrap();
        assert_eq!(endpoint.path(), "/openai/deployments/d?api-version=1");
        assert_eq!(
            endpoint.with_path("/x/chat/completions"),
            "https://r.openai.azure.com/x/chat/completions"
        );
        assert_eq!(Endpoint::parse("http://h:11434/").unwrap().path(), "");
        for bad in [
            "ftp://x",
            "api.openai.com/v1",
            "http://",
            "https://:443",
            "file:///etc",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        let error = Endpoint::parse("https://user:hunter2@host.example/v1").unwrap_err();
        assert!(
            error.contains("carries credentials") && !error.contains("hunter2"),
            "{error}"
        );
    }
}
