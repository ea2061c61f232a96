//! String formats, as kube-openapi's `strfmt.Default` registry checks them for the formats
//! apiextensions-apiserver keeps (`pkg/apiserver/validation/formats.go`, the v1.32 list; names are
//! matched with `-` removed, so `date-time` is `datetime`). A string that fails its format is a
//! type error: `Invalid value: "x": spec.f in body must be of type uuid: "x"`.
//!
//! Checked exactly as upstream: `uuid`, `uuid3`, `uuid4`, `uuid5`, `byte` (base64, standard
//! alphabet, padded, non-empty), `date` (`2006-01-02`, day within the month), `datetime`
//! (`strfmt.IsDateTime`: a date, `T`, `hh:mm:ss`, optional fraction, `Z` or `±hh:mm`),
//! `ipv4`/`ipv6` (`net.ParseIP` with a `.` / `:` in it), `cidr`, `mac` (`net.ParseMAC`),
//! `hostname` (strfmt's pattern and label lengths), `hexcolor`, `rgbcolor`, `ssn`, `isbn`,
//! `isbn10`, `isbn13`, `bsonobjectid`, `password` (anything), `duration` (`time.ParseDuration`
//! or strfmt's `5 days`-style units), `quantity` (`resource.ParseQuantity`'s grammar).
//!
//! Approximated: `email` (`net/mail.ParseAddress`: `local@domain` or `Name <local@domain>`, no
//! comments or quoted display names checked in full), `uri` (`url.ParseRequestURI`: an absolute
//! URI with a scheme, or an absolute path; no character-level checks beyond whitespace and
//! control characters), `creditcard` (digits with anything else stripped, the card-number pattern
//! of govalidator, Luhn checksum).

use std::net::IpAddr;
use std::sync::LazyLock;

use regex::Regex;

/// A format of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    Duration,
    DateTime,
    Quantity,
}

static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$").ok()
});
static RGB: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let c = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    Regex::new(&format!(
        r"^rgb\([\t\n\f\r ]*{c}[\t\n\f\r ]*,[\t\n\f\r ]*{c}[\t\n\f\r ]*,[\t\n\f\r ]*{c}[\t\n\f\r ]*\)$"
    ))
    .ok()
});
static CREDIT_CARD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}|6[27][0-9]{14})$").ok()
});

impl Format {
    /// The registry's format of that name (`date-time` and `datetime` alike), if any.
    pub(crate) fn named(name: &str) -> Option<Self> {
        let normalized: String = name.chars().filter(|&c| c != '-').collect();
        Some(match normalized.as_str() {
            "bsonobjectid" => Self::BsonObjectId,
            "uri" => Self::Uri,
            "email" => Self::Email,
            "hostname" => Self::Hostname,
            "ipv4" => Self::Ipv4,
            "ipv6" => Self::Ipv6,
            "cidr" => Self::Cidr,
            "mac" => Self::Mac,
            "uuid" => Self::Uuid,
            "uuid3" => Self::Uuid3,
            "uuid4" => Self::Uuid4,
            "uuid5" => Self::Uuid5,
            "isbn" => Self::Isbn,
            "isbn10" => Self::Isbn10,
            "isbn13" => Self::Isbn13,
            "creditcard" => Self::CreditCard,
            "ssn" => Self::Ssn,
            "hexcolor" => Self::HexColor,
            "rgbcolor" => Self::RgbColor,
            "byte" => Self::Byte,
            "password" => Self::Password,
            "date" => Self::Date,
            "duration" => Self::Duration,
            "datetime" => Self::DateTime,
            "quantity" => Self::Quantity,
            _ => return None,
        })
    }

    /// Whether `s` is of this format.
    pub(crate) fn check(self, s: &str) -> bool {
        match self {
            Self::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            Self::Uri => is_request_uri(s),
            Self::Email => is_email(s),
            Self::Hostname => {
                HOSTNAME.as_ref().is_some_and(|re| re.is_match(s))
                    && s.len() <= 255
                    && s.split('.').all(|p| p.len() <= 63)
            }
            Self::Ipv4 => s.parse::<IpAddr>().is_ok() && s.contains('.'),
            Self::Ipv6 => s.parse::<IpAddr>().is_ok() && s.contains(':'),
            Self::Cidr => is_cidr(s),
            Self::Mac => is_mac(s),
            Self::Uuid => is_uuid(s, None),
            Self::Uuid3 => is_uuid(s, Some(b'3')),
            Self::Uuid4 => is_uuid(s, Some(b'4')),
            Self::Uuid5 => is_uuid(s, Some(b'5')),
            Self::Isbn => is_isbn10(s) || is_isbn13(s),
            Self::Isbn10 => is_isbn10(s),
            Self::Isbn13 => is_isbn13(s),
            Self::CreditCard => is_credit_card(s),
            Self::Ssn => is_ssn(s),
            Self::HexColor => {
                let h = s.strip_prefix('#').unwrap_or(s);
                (h.len() == 3 || h.len() == 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
            }
            Self::RgbColor => RGB.as_ref().is_some_and(|re| re.is_match(s)),
            Self::Byte => is_base64(s),
            Self::Password => true,
            Self::Date => is_date(s),
            Self::Duration => is_duration(s),
            Self::DateTime => is_date_time(s),
            Self::Quantity => is_quantity(s),
        }
    }
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$` and its
/// version-less form.
fn is_uuid(s: &str, version: Option<u8>) -> bool {
    let hex: Vec<u8> = Vec::with_capacity(32);
    let mut hex = hex;
    let b = s.as_bytes();
    let mut i = 0;
    for (g, len) in [8usize, 4, 4, 4, 12].into_iter().enumerate() {
        if g > 0 && b.get(i) == Some(&b'-') {
            i += 1;
        }
        for _ in 0..len {
            match b.get(i) {
                Some(c) if c.is_ascii_hexdigit() => hex.push(c.to_ascii_lowercase()),
                _ => return false,
            }
            i += 1;
        }
    }
    if i != b.len() {
        return false;
    }
    match version {
        None => true,
        Some(v) => hex[12] == v && (v == b'3' || matches!(hex[16], b'8' | b'9' | b'a' | b'b')),
    }
}

/// govalidator's base64 pattern: groups of four, the last one possibly padded; never empty.
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let alpha = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let (body, last) = b.split_at(b.len() - 4);
    body.iter().all(|&c| alpha(c))
        && match last {
            [a, b2, b'=', b'='] => alpha(*a) && alpha(*b2),
            [a, b2, c, b'='] => alpha(*a) && alpha(*b2) && alpha(*c),
            [a, b2, c, d] => alpha(*a) && alpha(*b2) && alpha(*c) && alpha(*d),
            _ => false,
        }
}

fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `time.Parse("2006-01-02", s)`.
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&s[0..4]), digits(&s[5..7]), digits(&s[8..10])) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `strfmt.IsDateTime`: lower-cased and split at `t`, a date, then
/// `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$` with hours up to 23
/// and minutes and seconds up to 59.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else { return false };
    if !is_date(date) {
        return false;
    }
    let b = time.as_bytes();
    let two = |i: usize| b.get(i..i + 2).filter(|d| d.iter().all(u8::is_ascii_digit));
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else { return false };
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') {
        return false;
    }
    let rest = &time[8..];
    // `(.[0-9]+)?`: any one character, then digits, before the zone.
    let fraction = rest.chars().next().is_some_and(|c| {
        let after = &rest[c.len_utf8()..];
        let n = after.bytes().take_while(u8::is_ascii_digit).count();
        n > 0 && zone(&after[n..])
    });
    (fraction || zone(rest)) && h <= b"23".as_slice() && m <= b"59".as_slice() && sec <= b"59".as_slice()
}

/// `z` or `[+-][0-9]{2}:[0-9]{2}`.
fn zone(s: &str) -> bool {
    let b = s.as_bytes();
    s == "z"
        || (b.len() == 6
            && (b[0] == b'+' || b[0] == b'-')
            && b[1].is_ascii_digit()
            && b[2].is_ascii_digit()
            && b[3] == b':'
            && b[4].is_ascii_digit()
            && b[5].is_ascii_digit())
}

/// Go's `time.ParseDuration` (`1h30m`, `-1.5s`, `0`), else strfmt's lenient form: any
/// `<digits><spaces><unit>` where the unit is one of `ns`, `us`/`µs`/`micro…`, `ms`/`milli…`,
/// `s`/`sec…`, `m`/`min…`, `h`/`hr`/`hour…`, `d`/`day…`, `w`/`wk`/`week…`.
fn is_duration(s: &str) -> bool {
    go_parse_duration(s) || strfmt_duration(s)
}

fn go_parse_duration(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let int = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut n = int;
        let mut frac = 0;
        if rest.as_bytes().get(n) == Some(&b'.') {
            n += 1;
            frac = rest[n..].bytes().take_while(u8::is_ascii_digit).count();
            n += frac;
        }
        if int == 0 && frac == 0 {
            return false;
        }
        rest = &rest[n..];
        let unit = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        if !matches!(&rest[..unit], "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return false;
        }
        rest = &rest[unit..];
    }
    true
}

fn strfmt_duration(s: &str) -> bool {
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits_end = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let unit_start = i;
        let unit_len: usize = s[unit_start..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == 'µ')
            .map(char::len_utf8)
            .sum();
        if unit_len == 0 || s[start..digits_end].parse::<i64>().is_err() {
            continue;
        }
        i = unit_start + unit_len;
        let unit = s[unit_start..i].to_lowercase();
        if UNITS.iter().any(|variants| {
            let last = variants.len() - 1;
            variants.iter().enumerate().any(|(j, v)| (j == last && unit.starts_with(v)) || unit == *v)
        }) {
            return true;
        }
    }
    false
}

/// `resource.ParseQuantity`'s grammar ([`crate::quantity`]).
fn is_quantity(s: &str) -> bool {
    crate::quantity::Quantity::parse(s).is_ok()
}

/// `net.ParseCIDR`: an IP, `/`, a prefix length within the address's bits.
fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else { return false };
    let Ok(ip) = ip.parse::<IpAddr>() else { return false };
    let Some(bits) = digits(bits) else { return false };
    bits <= if ip.is_ipv4() { 32 } else { 128 }
}

/// `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:…`, `xx-xx-…` or `xxxx.xxxx.…`.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let octets = |n: usize| n == 6 || n == 8 || n == 20;
    if s.contains(':') || s.contains('-') {
        let sep = if s.contains(':') { ':' } else { '-' };
        let parts: Vec<&str> = s.split(sep).collect();
        octets(parts.len()) && parts.iter().all(|p| hex(p, 2))
    } else {
        let parts: Vec<&str> = s.split('.').collect();
        octets(parts.len() * 2) && parts.iter().all(|p| hex(p, 4))
    }
}

/// govalidator's `IsSSN`: eleven characters, `^\d{3}[- ]?\d{2}[- ]?\d{4}$`.
fn is_ssn(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 11
        && b[..3].iter().all(u8::is_ascii_digit)
        && matches!(b[3], b'-' | b' ')
        && b[4..6].iter().all(u8::is_ascii_digit)
        && matches!(b[6], b'-' | b' ')
        && b[7..].iter().all(u8::is_ascii_digit)
}

/// The ISBN with spaces and hyphens taken out.
fn isbn_chars(s: &str) -> Vec<u8> {
    s.bytes().filter(|b| !matches!(b, b' ' | b'-' | b'\t' | b'\n' | b'\r' | b'\x0c')).collect()
}

fn is_isbn10(s: &str) -> bool {
    let b = isbn_chars(s);
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) || !(b[9].is_ascii_digit() || b[9] == b'X') {
        return false;
    }
    let sum: u32 = b
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let d = if c == b'X' { 10 } else { u32::from(c - b'0') };
            (u32::try_from(i).unwrap_or(0) + 1) * d
        })
        .sum();
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let b = isbn_chars(s);
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 =
        b[..12].iter().enumerate().map(|(i, &c)| u32::from(c - b'0') * if i % 2 == 0 { 1 } else { 3 }).sum();
    (10 - sum % 10) % 10 == u32::from(b[12] - b'0')
}

fn is_credit_card(s: &str) -> bool {
    let d: String = s.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.as_ref().is_some_and(|re| re.is_match(&d)) {
        return false;
    }
    let mut sum = 0;
    for (i, c) in d.bytes().rev().enumerate() {
        let mut v = u32::from(c - b'0');
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum % 10 == 0
}

/// `local@domain` or `Display Name <local@domain>`, with a non-empty local part and domain.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.strip_suffix('>')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        (None, None) => s,
        _ => return false,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else { return false };
    let atom = |p: &str| {
        !p.is_empty()
            && p.split('.').all(|a| {
                !a.is_empty() && a.chars().all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c))
            })
    };
    atom(local) && (atom(domain) || (domain.starts_with('[') && domain.ends_with(']')))
}

/// `url.ParseRequestURI`: an absolute URI (`scheme:…`) or an absolute path, without spaces or
/// control characters.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    let Some((scheme, _)) = s.split_once(':') else { return false };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    //! Follows kube-openapi's `pkg/validation/strfmt/default.go`, `time.go` and `duration.go`.
    use super::*;

    fn ok(f: &str, s: &str) -> bool {
        Format::named(f).expect("a format").check(s)
    }

    #[test]
    fn uuids() {
        assert!(ok("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(ok("uuid", "123E4567E89B12D3A456426614174000"));
        assert!(!ok("uuid", "123e4567-e89b-12d3-a456"));
        assert!(ok("uuid4", "123e4567-e89b-42d3-a456-426614174000"));
        assert!(!ok("uuid4", "123e4567-e89b-12d3-a456-426614174000"));
    }

    #[test]
    fn dates_and_times() {
        assert!(ok("date", "2024-02-29"));
        assert!(!ok("date", "2023-02-29"));
        assert!(!ok("date", "2023-1-01"));
        assert!(ok("date-time", "2014-12-15T19:30:20.000Z"));
        assert!(ok("datetime", "2014-12-15T19:30:20+01:00"));
        assert!(!ok("date-time", "2014-12-15T19:30:20"), "a zone is required");
        assert!(!ok("date-time", "2014-12-15T24:30:20Z"));
        assert!(ok("duration", "1h30m"));
        assert!(ok("duration", "3 days"));
        assert!(!ok("duration", "soon"));
    }

    #[test]
    fn bytes_and_networks() {
        assert!(ok("byte", "aGVsbG8="));
        assert!(!ok("byte", "hello"));
        assert!(!ok("byte", ""));
        assert!(ok("ipv4", "10.0.0.1"));
        assert!(!ok("ipv4", "::1"));
        assert!(ok("ipv6", "::1"));
        assert!(ok("cidr", "10.0.0.0/8"));
        assert!(!ok("cidr", "10.0.0.0/33"));
        assert!(ok("mac", "00:00:5e:00:53:01"));
        assert!(ok("mac", "0000.5e00.5301"));
        assert!(!ok("mac", "00:00:5e:00:53"));
        assert!(ok("hostname", "example.com"));
        assert!(!ok("hostname", "-bad-.com"));
    }

    #[test]
    fn the_others() {
        assert!(ok("quantity", "10Gi"));
        assert!(ok("quantity", "1.5e3"));
        assert!(!ok("quantity", "10GB"));
        assert!(ok("email", "a@example.com"));
        assert!(ok("email", "Ann <a@example.com>"));
        assert!(!ok("email", "example.com"));
        assert!(ok("uri", "https://example.com/x"));
        assert!(!ok("uri", "example.com"));
        assert!(ok("isbn10", "0321751043"));
        assert!(ok("isbn13", "978-0321751041"));
        assert!(ok("ssn", "123-45-6789"));
        assert!(!ok("ssn", "123456789"));
        assert!(ok("hexcolor", "#FFF"));
        assert!(ok("rgbcolor", "rgb(255, 0, 10)"));
        assert!(ok("creditcard", "4111 1111 1111 1111"));
        assert!(ok("bsonobjectid", "507f1f77bcf86cd799439011"));
        assert!(Format::named("int32").is_none());
    }
}
