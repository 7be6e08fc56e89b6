//! Where the Http plugin may send a request: `Security.HttpAllowedHosts`,
//! `Security.AllowPrivateHosts` and the named `ApiProfiles` (a base URL, default headers
//! with `${VAR}` secrets, a timeout), from the program's typed `security` and
//! `api_profiles` once per turn.
//!
//! Security decisions:
//! - A host must be listed in `HttpAllowedHosts` (exactly, ignoring case; an empty list
//!   allows every public host, as upstream), and every address it resolves to must be public
//!   unless `AllowPrivateHosts: true`: loopback, private, link-local, shared, unspecified,
//!   multicast and unique-local addresses (IPv4-mapped and NAT64 forms included) are refused.
//!   The checked addresses are the ones connected to (no second lookup to rebind).
//! - `${VAR}` in a profile is expanded from fuseraft's environment before each turn's
//!   calls; a model API key (`is_model_key`) is refused there, so it never leaves in a
//!   header. The expanded values are secrets: a tool result never shows them
//!   (`http_response.rs`).
//! - A profile's headers go only to its base URL's origin (scheme, host, port).

use super::Outcome;
use crate::history::{Denial, DenialKind};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use fuseraft_compiler::ir::{self, Program};
use url::{Host, Url};

/// The run's Http settings.
#[derive(Clone, Default, PartialEq)]
pub struct HttpPolicy {
    /// `Security.HttpAllowedHosts`, lower-cased, without brackets or a final dot.
    pub allowed_hosts: Vec<String>,
    pub allow_private_hosts: bool,
    pub profiles: Vec<ApiProfile>,
}

/// One of `ApiProfiles`, its `${VAR}`s expanded.
#[derive(Clone, PartialEq)]
pub struct ApiProfile {
    pub name: String,
    /// The base URL, or why it cannot be used (unparsable, not http(s), a model key).
    pub base_url: Result<Url, String>,
    /// `DefaultHeaders`, expanded.
    pub headers: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    /// Why a header cannot be sent (it names a model key), if one cannot.
    pub problem: Option<String>,
    /// The values `${VAR}` expanded to: never shown to a model.
    pub secrets: Vec<String>,
}

impl fmt::Debug for HttpPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpPolicy")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allow_private_hosts", &self.allow_private_hosts)
            .field("profiles", &self.profiles)
            .finish()
    }
}

impl fmt::Debug for ApiProfile {
    // Header values and secrets stay out of debug output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ApiProfile")
            .field("name", &self.name)
            .field("base_url", &self.base_url.as_ref().map(|_| "<set>"))
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HttpPolicy {
    /// The policy of `security` and `profiles`, `${VAR}` looked up with `var`.
    pub fn new(
        security: &ir::Security,
        profiles: &[ir::ApiProfile],
        var: &dyn Fn(&str) -> Option<String>,
    ) -> HttpPolicy {
        let mut policy = HttpPolicy {
            allowed_hosts: (security.http_allowed_hosts.iter())
                .map(|host| normalize_host(host))
                .filter(|host| !host.is_empty())
                .collect(),
            allow_private_hosts: security.allow_private_hosts,
            profiles: Vec::new(),
        };
        for written in profiles {
            // The compiler merged a profile's keys under one name (any case).
            let mut profile = ApiProfile {
                name: written.name.clone(),
                base_url: Err(format!("API profile `{}` has no `BaseUrl`", written.name)),
                headers: Vec::new(),
                timeout: None,
                problem: None,
                secrets: Vec::new(),
            };
            if let Some(url) = &written.base_url {
                profile.set_base_url(url, var);
            }
            for (header, value) in &written.headers {
                profile.add_header(header, value, var);
            }
            profile.timeout = written.timeout_seconds.map(Duration::from_secs);
            policy.profiles.push(profile);
        }
        policy
    }

    /// The policy of `program`, from fuseraft's own environment.
    pub fn from_env(program: &Program) -> HttpPolicy {
        HttpPolicy::new(&program.security, &program.api_profiles, &|name| {
            std::env::var(name).ok()
        })
    }

    /// The profile called `name` (ignoring case).
    pub fn profile(&self, name: &str) -> Option<&ApiProfile> {
        self.profiles
            .iter()
            .find(|profile| profile.name.eq_ignore_ascii_case(name.trim()))
    }

    /// Every secret of every profile, longest first (so none is left half redacted).
    pub fn secrets(&self) -> Vec<&str> {
        let mut secrets: Vec<&str> = self
            .profiles
            .iter()
            .flat_map(|profile| profile.secrets.iter().map(String::as_str))
            .filter(|secret| secret.len() >= 4)
            .collect();
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets
    }

    /// Why `url` may not be requested (its host unlisted), if it may not.
    pub fn unlisted(&self, url: &Url) -> Option<Denial> {
        let host = normalize_host(url.host_str().unwrap_or_default());
        if self.allowed_hosts.is_empty() || self.allowed_hosts.contains(&host) {
            return None;
        }
        let listed: Vec<String> = self
            .allowed_hosts
            .iter()
            .map(|host| format!("`{host}`"))
            .collect();
        Some(Denial::new(
            DenialKind::Http,
            format_args!(
                "host `{host}` is not in `Security.HttpAllowedHosts` ({})",
                listed.join(", ")
            ),
        ))
    }

    /// The addresses `url`'s host resolves to, all of them public unless private hosts are
    /// allowed; else why the request is refused.
    pub(crate) async fn addresses(&self, url: &Url) -> Result<Vec<SocketAddr>, Outcome> {
        let port = url.port_or_known_default().unwrap_or(80);
        let addresses: Vec<SocketAddr> = match url.host() {
            Some(Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
            Some(Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
            Some(Host::Domain(domain)) => match tokio::net::lookup_host((domain, port)).await {
                Ok(found) => found.collect(),
                Err(error) => {
                    return Err(Outcome::error(format_args!(
                        "host `{domain}` could not be resolved: {error}"
                    )))
                }
            },
            None => return Err(Outcome::error("the URL has no host")),
        };
        if addresses.is_empty() {
            return Err(Outcome::error(format_args!(
                "host `{}` resolved to no address",
                url.host_str().unwrap_or_default()
            )));
        }
        if !self.allow_private_hosts {
            if let Some(private) = addresses.iter().find(|addr| is_private(addr.ip())) {
                return Err(Outcome::denied(
                    DenialKind::Http,
                    format_args!(
                        "host `{}` resolves to the private or loopback address {} (set `Security.AllowPrivateHosts: true` to allow it)",
                        url.host_str().unwrap_or_default(),
                        private.ip()
                    ),
                ));
            }
        }
        Ok(addresses)
    }
}

impl ApiProfile {
    /// `BaseUrl`, expanded: an http or https URL, else why it cannot be used.
    fn set_base_url(&mut self, value: &str, var: &dyn Fn(&str) -> Option<String>) {
        self.base_url = match self.expand(value.trim(), var) {
            Ok(text) => match Url::parse(&text) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(url),
                _ => Err(format!(
                    "API profile `{}` has a `BaseUrl` that is not an http or https URL",
                    self.name
                )),
            },
            Err(problem) => Err(problem),
        }
    }

    /// One of `DefaultHeaders`, expanded (a model key makes the profile unusable).
    fn add_header(&mut self, header: &str, value: &str, var: &dyn Fn(&str) -> Option<String>) {
        match self.expand(value, var) {
            Ok(text) => self.headers.push((header.to_string(), text)),
            Err(problem) => self.problem = Some(problem),
        }
    }

    /// `text` with each `${VAR}` replaced (unset: empty, as upstream); a model key refused.
    fn expand(
        &mut self,
        text: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                return Ok(out);
            };
            let name = &after[..end];
            if crate::sandbox::env::is_model_key(name) {
                return Err(format!(
                    "API profile `{}` names `${{{name}}}`, a model API key, which the Http plugin never sends",
                    self.name
                ));
            }
            let value = var(name).unwrap_or_default();
            if !value.is_empty() && !self.secrets.contains(&value) {
                self.secrets.push(value.clone());
            }
            out.push_str(&value);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// A host as listed and compared: trimmed, lower-case, no IPv6 brackets, no final dot.
fn normalize_host(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    let host = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .map_or(host.as_str(), |inner| inner);
    host.trim_end_matches('.').to_string()
}

/// Whether an address is not on the public internet.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_private_v4(ip),
        IpAddr::V6(ip) => {
            if let Some(v4) = ip.to_ipv4_mapped() {
                return is_private_v4(v4);
            }
            let segments = ip.segments();
            // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
            if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = segments[6].to_be_bytes();
                let [c, d] = segments[7].to_be_bytes();
                return is_private_v4(Ipv4Addr::new(a, b, c, d));
            }
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_multicast()
                || (segments[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (segments[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (segments[0] & 0xffc0) == 0xfec0 // site-local fec0::/10
                || segments[..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible ::a.b.c.d
        }
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space 100.64.0.0/10
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18.0.0/15
        || a >= 240
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_in_every_spelling_are_private() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::10.0.0.1",
            "::127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "64:ff9b::8.8.8.8",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn profiles_expand_secrets_and_refuse_model_keys() {
        let security = ir::Security {
            http_allowed_hosts: vec!["API.example.com.".into(), "[::1]".into()],
            ..ir::Security::default()
        };
        let profile = |name: &str, url: &str| ir::ApiProfile {
            name: name.into(),
            base_url: Some(url.into()),
            ..ir::ApiProfile::default()
        };
        let profiles = [
            ir::ApiProfile {
                headers: vec![("Authorization".into(), "Bearer ${GH}".into())],
                timeout_seconds: Some(7),
                ..profile("gh", "https://api.example.com/v3")
            },
            profile("bad", "https://x.example/${OPENAI_API_KEY}"),
            profile("file", "file:///etc"),
        ];
        let policy = HttpPolicy::new(&security, &profiles, &|name| {
            (name == "GH").then(|| "ghp_secret123".to_string())
        });
        assert_eq!(policy.allowed_hosts, ["api.example.com", "::1"]);
        let gh = policy.profile("Gh").unwrap();
        assert_eq!(
            gh.headers,
            [("Authorization".into(), "Bearer ghp_secret123".into())]
        );
        assert_eq!(gh.timeout, Some(Duration::from_secs(7)));
        assert_eq!(policy.secrets(), ["ghp_secret123"]);
        assert!(!format!("{policy:?}").contains("ghp_secret123"));
        let bad = policy
            .profile("bad")
            .unwrap()
            .base_url
            .as_ref()
            .unwrap_err();
        assert!(bad.contains("model API key"), "{bad}");
        assert!(policy.profile("file").unwrap().base_url.is_err());
        let url = Url::parse("http://[::1]:8/").unwrap();
        assert_eq!(policy.unlisted(&url), None);
        let other = Url::parse("https://evil.example/").unwrap();
        assert!(policy
            .unlisted(&other)
            .unwrap()
            .text
            .starts_with("[DENIED: http]"));
    }
}
