//! How the API server would reach a webhook: its `clientConfig`, an `https` URL or an in-cluster
//! Service (`ValidateWebhookURL`, `ValidateWebhookService` in apiserver's
//! `pkg/util/webhook/validation.go`), for [`super::webhook_configuration`]: the configuration
//! held to the rules a real server holds it to. Admission calls the webhooks
//! (`admission/webhook`).
//!
//! A URL is read as Go's `net/url.Parse` reads it, far enough to give its errors for the URLs
//! people write: control characters, a bad scheme, a host with characters a host may not hold, a
//! port that is not a number, bad `%` escapes, a bad user part.

use serde_json::{Value, json};

use crate::field_errors::{invalid_bare, invalid_str, required};
use crate::go_print::go_quote;
use crate::metadata::subdomain_errors;
use crate::object_meta::set_default;
use crate::status::FieldError;

/// What every URL error adds about the form a URL should have.
const FORM: &str = "; desired format: https://host[/path]";

/// `SetDefaults_ServiceReference`: a Service is called on port 443 unless told otherwise.
pub(crate) fn default_client_config(cc: Option<&mut Value>) {
    if let Some(service) = cc.and_then(|c| c.get_mut("service")).and_then(Value::as_object_mut) {
        set_default(service, "port", json!(443));
    }
}

/// The `clientConfig` rules: exactly one of `url` and `service`, then that one's.
pub(crate) fn client_config_errors(cc: Option<&Value>, at: &str) -> Vec<FieldError> {
    let field = |k: &str| cc.and_then(|c| c.get(k)).filter(|v| !v.is_null());
    match (field("url"), field("service")) {
        (Some(url), None) => url_errors(url.as_str().unwrap_or(""), &format!("{at}.url")),
        (None, Some(service)) => service_errors(service, &format!("{at}.service")),
        _ => vec![required(at, "exactly one of url or service is required")],
    }
}

/// `ValidateWebhookURL` with `https` required.
fn url_errors(raw: &str, at: &str) -> Vec<FieldError> {
    let url = match GoUrl::parse(raw) {
        Ok(u) => u,
        Err(why) => return vec![required(at, &format!("url must be a valid URL: {why}{FORM}"))],
    };
    let mut errs = Vec::new();
    if url.scheme != "https" {
        errs.push(invalid_str(at, &url.scheme, &format!("'https' is the only allowed URL scheme{FORM}")));
    }
    if url.host.is_empty() {
        errs.push(invalid_str(at, &url.host, &format!("host must be provided{FORM}")));
    }
    if let Some(user) = &url.user {
        errs.push(invalid_str(at, user, "user information is not permitted in the URL"));
    }
    if !url.fragment.is_empty() {
        errs.push(invalid_str(at, &url.fragment, "fragments are not permitted in the URL"));
    }
    if !url.query.is_empty() {
        errs.push(invalid_str(at, &url.query, "query parameters are not permitted in the URL"));
    }
    errs
}

/// `ValidateWebhookService`, called as upstream calls it: with the Service's name where the
/// function takes the namespace and the other way round, so an empty name is reported as the
/// namespace's error and an empty namespace as the name's.
fn service_errors(service: &Value, at: &str) -> Vec<FieldError> {
    let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    if text("namespace").is_empty() {
        errs.push(required(format!("{at}.name"), "service name is required"));
    }
    if text("name").is_empty() {
        errs.push(required(format!("{at}.namespace"), "service namespace is required"));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&port) {
        errs.push(invalid_bare(
            format!("{at}.port"),
            port,
            &format!("port is not valid: {}", crate::field_errors::inclusive_range(1, 65535)),
        ));
    }
    if let Some(path) = service.get("path").and_then(Value::as_str) {
        errs.extend(service_path_errors(path, &format!("{at}.path")));
    }
    errs
}

/// A Service path: `/`, or `/`-separated DNS-1123 subdomains (a trailing `/` allowed).
fn service_path_errors(path: &str, at: &str) -> Vec<FieldError> {
    if path.is_empty() || path == "/" {
        return Vec::new();
    }
    if path == "//" {
        return vec![invalid_str(at, path, "segment[0] may not be empty")];
    }
    let mut errs = Vec::new();
    if !path.starts_with('/') {
        errs.push(invalid_str(at, path, "must start with a '/'"));
    }
    // Upstream drops the first byte whatever it is, then one trailing slash.
    let rest = path.get(1..).unwrap_or("");
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errs.push(invalid_str(at, path, &format!("segment[{i}] may not be empty")));
            continue;
        }
        for why in subdomain_errors(step) {
            errs.push(invalid_str(at, path, &format!("segment[{i}]: {why}")));
        }
    }
    errs
}

/// The parts of a URL the rules look at, as Go's `url.Parse` gives them.
#[derive(Debug, PartialEq, Eq)]
struct GoUrl {
    /// Lower-cased; empty when the URL has none.
    scheme: String,
    /// Unescaped; empty for a URL without an authority.
    host: String,
    /// The user part as `Userinfo.String` prints it, when there is one.
    user: Option<String>,
    /// Unescaped.
    fragment: String,
    /// As written.
    query: String,
}

impl GoUrl {
    /// Go's `url.Parse`; the error is its `*url.Error` text (`parse "<url>": <why>`).
    fn parse(raw: &str) -> Result<Self, String> {
        let (url, fragment) = raw.split_once('#').unwrap_or((raw, ""));
        let mut parsed =
            Self::parse_reference(url).map_err(|why| format!("parse {}: {why}", go_quote(url)))?;
        parsed.fragment =
            unescape(fragment, Mode::Other).map_err(|why| format!("parse {}: {why}", go_quote(raw)))?;
        Ok(parsed)
    }

    /// Go's `parse(rawURL, false)`: the part before `#`.
    fn parse_reference(url: &str) -> Result<Self, String> {
        if url.bytes().any(|b| b < b' ' || b == 0x7f) {
            return Err("net/url: invalid control character in URL".to_owned());
        }
        let (scheme, rest) = scheme_of(url)?;
        let mut parsed = Self {
            scheme: scheme.to_ascii_lowercase(),
            host: String::new(),
            user: None,
            fragment: String::new(),
            query: String::new(),
        };
        if url == "*" {
            return Ok(parsed);
        }
        let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
            &rest[..rest.len() - 1]
        } else if let Some((before, query)) = rest.split_once('?') {
            parsed.query = query.to_owned();
            before
        } else {
            rest
        };
        if !rest.starts_with('/') {
            if !parsed.scheme.is_empty() {
                // An opaque URL (`https:host`): no authority at all.
                return Ok(parsed);
            }
            if rest.split('/').next().is_some_and(|first| first.contains(':')) {
                return Err("first path segment in URL cannot contain colon".to_owned());
            }
        }
        let mut path = rest;
        if (!parsed.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
            let after = &rest[2..];
            let (authority, tail) = after.find('/').map_or((after, ""), |i| after.split_at(i));
            let (user, host) = authority_of(authority)?;
            parsed.user = user;
            parsed.host = host;
            path = tail;
        }
        unescape(path, Mode::Other)?;
        Ok(parsed)
    }
}

/// Go's `getScheme`: the letters, digits, `+`, `-` and `.` before the first `:`, starting with a
/// letter; none when something else comes first.
fn scheme_of(url: &str) -> Result<(&str, &str), String> {
    for (i, b) in url.bytes().enumerate() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_owned()),
            b':' => return Ok((&url[..i], &url[i + 1..])),
            _ => return Ok(("", url)),
        }
    }
    Ok(("", url))
}

/// Go's `parseAuthority`: `[user@]host[:port]`.
fn authority_of(authority: &str) -> Result<(Option<String>, String), String> {
    let (user, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = host_of(host)?;
    let Some(user) = user else { return Ok((None, host)) };
    let user_ok = user.chars().all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c));
    if !user_ok {
        return Err("net/url: invalid userinfo".to_owned());
    }
    let (name, password) = user.split_once(':').map_or((user, None), |(n, p)| (n, Some(p)));
    unescape(name, Mode::Other)?;
    if let Some(p) = password {
        unescape(p, Mode::Other)?;
    }
    Ok((Some(user.to_owned()), host))
}

/// Go's `parseHost`: a port, when there is one, is digits; the host's characters are a host's.
fn host_of(host: &str) -> Result<String, String> {
    let port = if host.starts_with('[') {
        let Some(end) = host.rfind(']') else { return Err("missing ']' in host".to_owned()) };
        Some(&host[end + 1..])
    } else {
        host.rfind(':').map(|i| &host[i..])
    };
    if let Some(port) = port
        && !port.is_empty()
        && !(port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!("invalid port {} after host", go_quote(port)));
    }
    unescape(host, Mode::Host)
}

/// Which part of a URL [`unescape`] reads: a host holds fewer characters than the rest.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Host,
    Other,
}

/// Go's `unescape`: `%XX` escapes decoded (a host's may not encode control bytes other than
/// `%25`), and a host's other characters checked.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |j: usize| b.get(j).and_then(|c| (*c as char).to_digit(16));
                let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                    let bad = String::from_utf8_lossy(&b[i..b.len().min(i + 3)]).into_owned();
                    return Err(format!("invalid URL escape {}", go_quote(&bad)));
                };
                if mode == Mode::Host && hi < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                // Both digits are below 16: the byte fits.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(0));
                i += 3;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && !host_byte(c) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&(c as char).to_string())
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// An ASCII byte Go's `shouldEscape` lets stand in a host.
fn host_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(raw: &str) -> Result<GoUrl, String> {
        GoUrl::parse(raw)
    }

    #[test]
    fn urls_parse_as_go_parses_them() {
        let u = url("https://admin@hook.example.com:8443/x?a=b#part").unwrap();
        assert_eq!((u.scheme.as_str(), u.host.as_str()), ("https", "hook.example.com:8443"));
        assert_eq!(
            (u.user.as_deref(), u.query.as_str(), u.fragment.as_str()),
            (Some("admin"), "a=b", "part")
        );
        assert_eq!(url("https:///x").unwrap().host, "");
        assert_eq!(url("hook.example.com/x").unwrap().scheme, "");
        assert_eq!(url(":x").unwrap_err(), "parse \":x\": missing protocol scheme");
        assert_eq!(url("a:b").unwrap().scheme, "a");
        assert_eq!(
            url("https://a b/").unwrap_err(),
            "parse \"https://a b/\": invalid character \" \" in host name"
        );
        assert_eq!(
            url("https://h:p/").unwrap_err(),
            "parse \"https://h:p/\": invalid port \":p\" after host"
        );
        assert_eq!(url("https://h/%zz").unwrap_err(), "parse \"https://h/%zz\": invalid URL escape \"%zz\"");
    }

    #[test]
    fn service_paths() {
        assert!(service_path_errors("/a/b.c/", "p").is_empty());
        assert_eq!(
            service_path_errors("/a//b", "p")[0].1,
            "Invalid value: \"/a//b\": segment[1] may not be empty"
        );
    }
}
