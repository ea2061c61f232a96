//! certificates.k8s.io/v1 CertificateSigningRequests: what the strategy fills in (the requester,
//! the request's user: see [`crate::invocation`]), what its
//! `/status` write keeps of the stored conditions, and `pkg/apis/certificates/validation`'s
//! rules in its order: the PEM request, usages, signer name, duration, conditions and the issued
//! certificate's PEM blocks.
//!
//! The request is held to being a PEM `CERTIFICATE REQUEST` block of DER; its signature is not
//! checked (the sandbox issues nothing from it).

use base64::Engine;
use serde_json::Value;

use crate::field_errors::{
    duplicate, forbidden, invalid_bare, invalid_str, not_supported, required, too_long,
};
use crate::status::FieldError;

use super::crd::str_at;

/// The key usages a request may ask for (`allValidUsages`), sorted as Go's `sets.List` gives
/// them.
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The signer v1 refuses on new requests (`LegacyUnknownSignerName`).
const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// The requester's identity: `PrepareForCreate` clears what the body says and sets the
/// request's user (the administrator for a create made outside a request).
pub fn default(csr: &mut Value) {
    let Some(spec) = csr.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let user = crate::invocation::current(|i| i.and_then(|i| i.user.clone()))
        .unwrap_or_else(crate::user::UserInfo::admin)
        .to_json();
    for k in ["username", "uid", "groups", "extra"] {
        spec.remove(k);
        if let Some(v) = user.get(k) {
            spec.insert(k.into(), v.clone());
        }
    }
}

/// The `/status` strategy's `PrepareForUpdate`: where the write holds as many Approved (or
/// Denied) conditions as the stored object, the stored ones are kept (`preserveConditionInstances`).
pub fn prepare_status_update(csr: &mut Value, old: &Value) {
    for kind in ["Approved", "Denied"] {
        let old_conds: Vec<Value> = conditions(old).into_iter().filter(|c| c["type"] == kind).collect();
        let Some(list) = csr.pointer_mut("/status/conditions").and_then(Value::as_array_mut) else { return };
        let at: Vec<usize> =
            list.iter().enumerate().filter(|(_, c)| c["type"] == kind).map(|(i, _)| i).collect();
        if at.len() == old_conds.len() {
            for (i, c) in at.into_iter().zip(old_conds) {
                list[i] = c;
            }
        }
    }
}

/// The `/status` write's own rules (`allowSettingApprovalConditions` is the approval
/// subresource's alone): the Approved and Denied conditions neither added nor changed, and an
/// issued certificate not replaced.
pub fn validate_status_update(csr: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for kind in ["Approved", "Denied"] {
        let of =
            |c: &Value| -> Vec<Value> { conditions(c).into_iter().filter(|x| x["type"] == kind).collect() };
        let (new_conds, old_conds) = (of(csr), of(old));
        if new_conds.len() > old_conds.len() {
            errs.push(forbidden(
                "status.conditions",
                &format!("updates may not add a condition of type {kind:?}"),
            ));
        }
        // A changed condition of the same count is restored by `prepare_status_update`; a
        // removal is the update rules' error.
    }
    let cert = bytes_at(csr, "/status/certificate");
    let old_cert = bytes_at(old, "/status/certificate");
    if cert != old_cert && !old_cert.is_empty() {
        errs.push(forbidden("status.certificate", "updates may not modify existing certificate content"));
    }
    errs
}

fn conditions(csr: &Value) -> Vec<Value> {
    csr.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// The bytes of a `[]byte` field (base64 in JSON).
fn bytes_at(v: &Value, pointer: &str) -> Vec<u8> {
    let text = v.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_default()
}

/// Go's `%#v` of a `[]byte`.
fn go_bytes(b: &[u8]) -> String {
    if b.is_empty() {
        return "[]byte(nil)".to_owned();
    }
    let shown: Vec<String> = b.iter().map(|x| format!("{x:#x}")).collect();
    format!("[]byte{{{}}}", shown.join(", "))
}

/// One PEM block: its type, whether it had headers, and its decoded body.
struct Block {
    kind: String,
    headers: bool,
    body: Vec<u8>,
}

/// The next PEM block of `text` and what follows it, as Go's `pem.Decode` finds it (text
/// before a block is skipped; a block whose body is not base64 is passed over).
fn pem_next(mut text: &str) -> Option<(Block, &str)> {
    loop {
        let start = text.find("-----BEGIN ")?;
        let after = &text[start + 11..];
        let type_end = after.find("-----")?;
        let kind = &after[..type_end];
        let rest = &after[type_end + 5..];
        let end_marker = format!("-----END {kind}-----");
        let Some(end) = rest.find(&end_marker) else {
            text = rest;
            continue;
        };
        let inner = &rest[..end];
        let remaining = &rest[end + end_marker.len()..];
        let (headers, body_text) = match inner.find(':') {
            Some(colon) => {
                let body = inner[colon..].split_once("\n\n").map_or("", |(_, b)| b);
                (true, body)
            }
            None => (false, inner),
        };
        let clean: String = body_text.chars().filter(|c| !c.is_whitespace()).collect();
        match base64::engine::general_purpose::STANDARD.decode(clean) {
            Ok(body) if !kind.contains(char::is_control) => {
                return Some((Block { kind: kind.to_owned(), headers, body }, remaining));
            }
            _ => text = remaining,
        }
    }
}

/// Whether `der` opens with a DER SEQUENCE that spans it (what a request or certificate is).
fn is_der_sequence(der: &[u8]) -> bool {
    let [0x30, len, rest @ ..] = der else { return false };
    let (size, body) = match *len {
        n if n < 0x80 => (usize::from(n), rest),
        n => {
            let count = usize::from(n & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return false;
            }
            let size = rest[..count].iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (size, &rest[count..])
        }
    };
    size == body.len()
}

/// `ParseCSR` as far as the sandbox takes it: the first PEM block is a `CERTIFICATE REQUEST`
/// of DER.
fn request_error(pem: &[u8]) -> Option<&'static str> {
    let text = String::from_utf8_lossy(pem);
    match pem_next(&text) {
        Some((b, _)) if b.kind == "CERTIFICATE REQUEST" => {
            (!is_der_sequence(&b.body)).then_some("asn1: structure error: tags don't match")
        }
        _ => Some("PEM block type must be CERTIFICATE REQUEST"),
    }
}

/// `validateCertificate`: empty, or only header-less `CERTIFICATE` blocks, at least one.
fn certificate_error(pem: &[u8]) -> Option<String> {
    if pem.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(pem).into_owned();
    let mut rest = text.as_str();
    let mut blocks = 0;
    while let Some((b, after)) = pem_next(rest) {
        if b.kind != "CERTIFICATE" {
            return Some(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                crate::go_print::go_quote(&b.kind)
            ));
        }
        if b.headers {
            return Some("no PEM block headers are permitted".to_owned());
        }
        if !is_der_sequence(&b.body) {
            return Some("x509: malformed certificate".to_owned());
        }
        blocks += 1;
        rest = after;
    }
    (blocks == 0).then(|| "must contain at least one CERTIFICATE PEM block".to_owned())
}

/// `ValidateSignerName`: `<domain>/<path>`, the domain of two or more DNS labels, the path of
/// DNS subdomains, within the lengths that fit a namespaced resource's name.
fn signer_name_errors(name: &str) -> Vec<FieldError> {
    const AT: &str = "spec.signerName";
    if name.is_empty() {
        return vec![required(AT, "")];
    }
    let Some((domain, path)) = name.split_once('/').filter(|(_, p)| !p.contains('/')) else {
        return vec![invalid_str(
            AT,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut errs = Vec::new();
    if domain.len() > 253 {
        errs.push(too_long(AT, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((lbl, why)) = labels.iter().find_map(|l| {
        let why = crate::metadata::label_errors(l);
        (!why.is_empty()).then_some((*l, why))
    }) {
        let q = crate::go_print::go_quote(lbl);
        errs.extend(why.iter().map(|w| invalid_str(AT, domain, &format!("validating label {q}: {w}"))));
    }
    if labels.len() < 2 {
        errs.push(invalid_str(AT, domain, "should be a domain with at least two segments separated by dots"));
    }
    if let Some((lbl, why)) = path.split('.').find_map(|l| {
        let why = crate::metadata::subdomain_errors(l);
        (!why.is_empty()).then_some((l, why))
    }) {
        let q = crate::go_print::go_quote(lbl);
        errs.extend(why.iter().map(|w| invalid_str(AT, path, &format!("validating label {q}: {w}"))));
    }
    if name.len() > 253 + 253 + 63 + 1 + 1 {
        errs.push(too_long(AT, 571));
    }
    errs
}

/// What the stored object already breaks, which an update may keep breaking
/// (`getValidationOptions`).
#[derive(Default)]
struct Tolerated {
    both_approved_and_denied: bool,
    legacy_signer: bool,
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    arbitrary_certificate: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
}

fn has_duplicates<'a>(items: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

fn usages(csr: &Value) -> Vec<&str> {
    csr.pointer("/spec/usages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn tolerated(new: &Value, old: Option<&Value>) -> Tolerated {
    let Some(old) = old else { return Tolerated::default() };
    let conds = conditions(old);
    let types = || conds.iter().map(|c| str_at(c, "type"));
    let cert = bytes_at(old, "/status/certificate");
    Tolerated {
        both_approved_and_denied: types().any(|t| t == "Approved") && types().any(|t| t == "Denied"),
        legacy_signer: old.pointer("/spec/signerName").and_then(Value::as_str) == Some(LEGACY_SIGNER),
        duplicate_condition_types: has_duplicates(types()),
        empty_condition_type: types().any(str::is_empty),
        arbitrary_certificate: bytes_at(new, "/status/certificate") == cert
            || certificate_error(&cert).is_some(),
        unknown_usages: usages(old).iter().any(|u| !USAGES.contains(u)),
        duplicate_usages: has_duplicates(usages(old).into_iter()),
    }
}

/// `validateCertificateSigningRequest` (the metadata aside) and, on update,
/// `validateCertificateSigningRequestUpdate`'s condition and certificate rules that hold
/// whichever endpoint wrote the object.
pub fn validate(csr: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let ok = tolerated(csr, old);
    let mut errs = Vec::new();
    let request = bytes_at(csr, "/spec/request");
    if let Some(why) = request_error(&request) {
        errs.push(invalid_bare("spec.request", go_bytes(&request), why));
    }
    let asked = usages(csr);
    if asked.is_empty() {
        errs.push(required("spec.usages", ""));
    }
    if !ok.unknown_usages {
        for (i, u) in asked.iter().enumerate() {
            if !USAGES.contains(u) {
                errs.push(not_supported(format!("spec.usages[{i}]"), u, &USAGES));
            }
        }
    }
    if !ok.duplicate_usages {
        let mut seen = std::collections::HashSet::new();
        for (i, u) in asked.iter().enumerate() {
            if !seen.insert(*u) {
                errs.push(duplicate(format!("spec.usages[{i}]"), u));
            }
        }
    }
    let signer = csr.pointer("/spec/signerName").and_then(Value::as_str).unwrap_or("");
    if !ok.legacy_signer && signer == LEGACY_SIGNER {
        errs.push(invalid_str(
            "spec.signerName",
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(signer_name_errors(signer));
    }
    if let Some(secs) = csr.pointer("/spec/expirationSeconds").and_then(Value::as_i64)
        && secs < 600
    {
        errs.push(invalid_bare(
            "spec.expirationSeconds",
            secs,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errs.extend(condition_errors(csr, &ok));
    if !ok.arbitrary_certificate
        && let Some(why) = certificate_error(&bytes_at(csr, "/status/certificate"))
    {
        errs.push(invalid_str("status.certificate", "<certificate data>", &why));
    }
    if let Some(old) = old {
        for kind in ["Approved", "Denied", "Failed"] {
            let count = |c: &Value| conditions(c).iter().filter(|x| x["type"] == kind).count();
            if count(csr) < count(old) {
                errs.push(forbidden(
                    "status.conditions",
                    &format!("updates may not remove a condition of type {kind:?}"),
                ));
            }
        }
    }
    errs
}

/// `validateConditions`: each condition's type and status given, True alone for the
/// Approved/Denied/Failed types, Approved and Denied not both, no type twice.
fn condition_errors(csr: &Value, ok: &Tolerated) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (mut approved, mut denied) = (false, false);
    let mut seen = std::collections::HashSet::new();
    for (i, c) in conditions(csr).iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        let kind = str_at(c, "type");
        if !ok.empty_condition_type && kind.is_empty() {
            errs.push(required(format!("{at}.type"), ""));
        }
        let allowed: &[&str] = if matches!(kind, "Approved" | "Denied" | "Failed") {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        let status = str_at(c, "status");
        if status.is_empty() {
            errs.push(required(format!("{at}.status"), ""));
        } else if !allowed.contains(&status) {
            errs.push(not_supported(format!("{at}.status"), status, allowed));
        }
        if !ok.both_approved_and_denied {
            let clash = match kind {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                errs.push(invalid_str(
                    format!("{at}.type"),
                    kind,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !ok.duplicate_condition_types && !seen.insert(kind.to_owned()) {
            errs.push(duplicate(format!("{at}.type"), kind));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_must_be_a_pem_request() {
        assert_eq!(request_error(b"not"), Some("PEM block type must be CERTIFICATE REQUEST"));
        let pem = b"-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n";
        assert_eq!(request_error(pem), None);
        assert_eq!(go_bytes(b"no\n"), "[]byte{0x6e, 0x6f, 0xa}");
    }

    #[test]
    fn signer_names_are_a_domain_and_a_path() {
        assert!(signer_name_errors("example.com/signer").is_empty());
        assert_eq!(
            signer_name_errors("example/signer")[0].1,
            "Invalid value: \"example\": should be a domain with at least two segments separated by dots"
        );
        assert!(signer_name_errors("a/b/c")[0].1.contains("must be a fully qualified domain"));
    }

    #[test]
    fn a_certificate_is_certificate_blocks() {
        assert_eq!(certificate_error(b""), None);
        assert_eq!(
            certificate_error(b"x").as_deref(),
            Some("must contain at least one CERTIFICATE PEM block")
        );
        let other = b"-----BEGIN KEY-----\nMAA=\n-----END KEY-----\n";
        assert_eq!(
            certificate_error(other).as_deref(),
            Some("only CERTIFICATE PEM blocks are allowed, found \"KEY\"")
        );
    }

    #[test]
    fn a_status_write_keeps_the_stored_approval() {
        let old =
            json!({ "status": { "conditions": [{ "type": "Approved", "status": "True", "reason": "a" }] } });
        let mut new =
            json!({ "status": { "conditions": [{ "type": "Approved", "status": "True", "reason": "b" }] } });
        prepare_status_update(&mut new, &old);
        assert_eq!(new, old);
    }
}
