//! IP addresses and CIDRs as upstream's validation reads them (apimachinery's
//! `util/validation/ip.go` and `k8s.io/utils/net`'s sloppy parsers): an IPv4 octet may carry
//! leading zeros, IPv6 is Go's `net.ParseIP`; the checks a Service, an Endpoints object, an
//! EndpointSlice, a NetworkPolicy or a Node apply to them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::status::FieldError;

/// Parses an IP as `netutils.ParseIPSloppy`: dotted quads whose octets may have leading zeros
/// (read as decimal), or IPv6 in any form Go accepts.
#[must_use]
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse::<u16>().ok().and_then(|n| u8::try_from(n).ok())?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

/// Parses a CIDR as `netutils.ParseCIDRSloppy`: an address and a prefix length no longer than
/// the address (host bits may be set). Returns the address and the length.
#[must_use]
pub fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (ip, len) = s.split_once('/')?;
    let ip = parse_ip(ip)?;
    if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let len: u8 = len.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((ip, len))
}

/// Whether `s` is an IPv6 address (`netutils.IsIPv6String`).
#[must_use]
pub fn is_ipv6(s: &str) -> bool {
    matches!(parse_ip(s), Some(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none())
}

/// The address as Go's `net.IP` sees it: an IPv4-mapped IPv6 address is IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// `validation.IsValidIP`: one cause when `value` is not an IP.
#[must_use]
pub fn ip_errors(field: &str, value: &str) -> Vec<FieldError> {
    if parse_ip(value).is_some() {
        Vec::new()
    } else {
        vec![(
            field.to_owned(),
            format!(
                "Invalid value: {}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                crate::go_print::go_quote(value)
            ),
        )]
    }
}

/// `validation.IsValidCIDR`: one cause when `value` is not a CIDR.
#[must_use]
pub fn cidr_errors(field: &str, value: &str) -> Vec<FieldError> {
    if parse_cidr(value).is_some() {
        Vec::new()
    } else {
        vec![(
            field.to_owned(),
            format!(
                "Invalid value: {}: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                crate::go_print::go_quote(value)
            ),
        )]
    }
}

/// `ValidateNonSpecialIP`: an address a workload may be reached at is none of the unspecified,
/// loopback, link-local and link-local multicast ones (one cause for each it is).
#[must_use]
pub fn non_special_ip_errors(field: &str, value: &str) -> Vec<FieldError> {
    let q = crate::go_print::go_quote(value);
    let Some(ip) = parse_ip(value).map(canonical) else {
        return vec![(field.to_owned(), format!("Invalid value: {q}: must be a valid IP address"))];
    };
    let (unspecified, loopback, link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (
                v4.is_unspecified(),
                o[0] == 127,
                o[0] == 169 && o[1] == 254,
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (
                v6.is_unspecified(),
                v6.is_loopback(),
                s[0] & 0xffc0 == 0xfe80,
                s[0] >> 8 == 0xff && (s[0] & 0x0f) == 0x02,
            )
        }
    };
    let mut errs = Vec::new();
    let mut push = |m: String| errs.push((field.to_owned(), format!("Invalid value: {q}: {m}")));
    if unspecified {
        push(format!("may not be unspecified ({value})"));
    }
    if loopback {
        push("may not be in the loopback range (127.0.0.0/8, ::1/128)".into());
    }
    if link_local {
        push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".into());
    }
    if link_local_multicast {
        push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into());
    }
    errs
}

/// The network a CIDR names, as bits of a 128-bit number with its prefix length (IPv4 in the
/// low 32 bits), and whether it is IPv4.
#[must_use]
pub fn network(cidr: &str) -> Option<(u128, u8, bool)> {
    let (ip, len) = parse_cidr(cidr)?;
    let (bits, width, v4) = match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32u8, true),
        IpAddr::V6(v6) => (u128::from(v6), 128u8, false),
    };
    let host = u32::from(width - len);
    let mask = if host >= 128 { 0 } else { !0u128 << host };
    Some((bits & mask, len, v4))
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`, or `[]string(nil)` for none.
#[must_use]
pub fn go_strings(items: Option<&[String]>) -> String {
    match items {
        None => "[]string(nil)".to_owned(),
        Some(items) => {
            let quoted: Vec<String> = items.iter().map(|s| crate::go_print::go_quote(s)).collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sloppy_parsing_and_special_ranges() {
        assert!(parse_ip("010.1.1.1").is_some());
        assert!(parse_ip("256.1.1.1").is_none());
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_cidr("10.0.0.1/8").is_some());
        assert_eq!(non_special_ip_errors("f", "::1").len(), 1);
        assert_eq!(non_special_ip_errors("f", "ff02::1").len(), 1);
        assert!(non_special_ip_errors("f", "10.1.2.3").is_empty());
        assert_eq!(network("10.1.0.0/8"), Some((10 << 24, 8, true)));
    }
}
