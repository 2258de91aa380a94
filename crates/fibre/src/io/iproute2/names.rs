//! iproute2's names for numbers: tables (`rt_tables`), protocols (`rt_protos`), scopes
//! (`rt_scopes`), DS field values (`rt_dsfield`); and how ip reads a number (`strtoul`), an
//! IPv4 address and a prefix length, on which its names' readers rest. The parser reads them,
//! the printer writes them.
use crate::route::*;
use std::net::Ipv4Addr;

/// A scope as ip prints it.
pub fn scope_name(s: Scope) -> String {
    match s {
        SCOPE_UNIVERSE => "global".into(),
        SCOPE_SITE => "site".into(),
        SCOPE_LINK => "link".into(),
        SCOPE_HOST => "host".into(),
        SCOPE_NOWHERE => "nowhere".into(),
        n => n.to_string(),
    }
}
/// A scope by name or number.
pub fn scope_from_name(s: &str) -> Option<Scope> {
    Some(match s {
        "global" | "universe" => SCOPE_UNIVERSE,
        "site" => SCOPE_SITE,
        "link" => SCOPE_LINK,
        "host" => SCOPE_HOST,
        "nowhere" => SCOPE_NOWHERE,
        n => parse_u8(n)?,
    })
}

const PROTOCOL_NAMES: &[(Protocol, &str)] = &[
    (0, "unspec"),
    (1, "redirect"),
    (2, "kernel"),
    (3, "boot"),
    (4, "static"),
    (8, "gated"),
    (9, "ra"),
    (10, "mrt"),
    (11, "zebra"),
    (12, "bird"),
    (13, "dnrouted"),
    (14, "xorp"),
    (15, "ntk"),
    (16, "dhcp"),
    (17, "keepalived"),
    (42, "babel"),
    (99, "openr"),
    (186, "bgp"),
    (187, "isis"),
    (188, "ospf"),
    (189, "rip"),
    (192, "eigrp"),
];
/// A protocol as ip prints it.
pub fn protocol_name(p: Protocol) -> String {
    PROTOCOL_NAMES
        .iter()
        .find(|(n, _)| *n == p)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| p.to_string())
}
/// A protocol by name or number.
pub fn protocol_from_name(s: &str) -> Option<Protocol> {
    PROTOCOL_NAMES
        .iter()
        .find(|(_, n)| *n == s)
        .map(|(p, _)| *p)
        .or_else(|| parse_u8(s))
}

/// Table names as iproute2 prints them (`rt_tables`).
pub fn table_name(t: TableId) -> String {
    match t {
        TABLE_LOCAL => "local".into(),
        TABLE_MAIN => "main".into(),
        TABLE_DEFAULT => "default".into(),
        TABLE_UNSPEC => "unspec".into(),
        n => n.to_string(),
    }
}
/// A table by name or number.
pub fn table_from_name(s: &str) -> Option<TableId> {
    match s {
        "local" => Some(TABLE_LOCAL),
        "main" => Some(TABLE_MAIN),
        "default" => Some(TABLE_DEFAULT),
        "unspec" => Some(TABLE_UNSPEC),
        n => parse_u32(n),
    }
}

/// DS field values by name, as in iproute2's `rt_dsfield`.
pub const DSFIELD_NAMES: &[(u8, &str)] = &[
    (0x20, "CS1"),
    (0x40, "CS2"),
    (0x60, "CS3"),
    (0x80, "CS4"),
    (0xa0, "CS5"),
    (0xc0, "CS6"),
    (0xe0, "CS7"),
    (0x28, "AF11"),
    (0x30, "AF12"),
    (0x38, "AF13"),
    (0x48, "AF21"),
    (0x50, "AF22"),
    (0x58, "AF23"),
    (0x68, "AF31"),
    (0x70, "AF32"),
    (0x78, "AF33"),
    (0x88, "AF41"),
    (0x90, "AF42"),
    (0x98, "AF43"),
    (0xb8, "EF"),
];

/// A route type as iproute2 reads one (`rtnl_rtntype_a2n`): `local`, `nat` and `throw` whole,
/// `brd` for broadcast, the others by any abbreviation, tried in its order (`a` is anycast,
/// `b` broadcast, `u` unreachable), or the type's number.
pub fn route_type_from_word(s: &str) -> Option<RouteType> {
    let abbreviates = |word: &str| !s.is_empty() && word.starts_with(s);
    Some(match s {
        "local" => RouteType::Local,
        "nat" => RouteType::Nat,
        _ if abbreviates("broadcast") || s == "brd" => RouteType::Broadcast,
        _ if abbreviates("anycast") => RouteType::Anycast,
        _ if abbreviates("multicast") => RouteType::Multicast,
        _ if abbreviates("prohibit") => RouteType::Prohibit,
        _ if abbreviates("unreachable") => RouteType::Unreachable,
        _ if abbreviates("blackhole") => RouteType::Blackhole,
        // RTN_XRESOLVE: a type fibre does not model.
        _ if abbreviates("xresolve") => return None,
        _ if abbreviates("unicast") => RouteType::Unicast,
        "throw" => RouteType::Throw,
        _ => {
            let code = parse_u32(s)?;
            return RouteType::ALL.get((code as usize).wrapping_sub(1)).copied();
        }
    })
}

/// A number as [`parse_u32`] reads it, if it fits in a `u8`.
pub fn parse_u8(s: &str) -> Option<u8> {
    parse_u32(s).and_then(|v| u8::try_from(v).ok())
}

/// What `strtoul(s, &end, 0)` reads at the start of `s`, as glibc reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Strtoul {
    /// The value: `u64::MAX` past it (glibc's `ERANGE`); after a minus sign, negated in
    /// `u64` (C's unsigned negation), so `-0` is 0 and `-1` is `u64::MAX`.
    pub value: u64,
    /// Bytes read, blanks and sign included; 0 where no digit came (`end` is `s`).
    pub read: usize,
}

/// `strtoul(s, &end, 0)`: blanks, an optional sign, then hex after `0x` or `0X` (where a hex
/// digit follows: `0x` alone reads as the digit 0, its `x` left), octal after a leading 0,
/// else decimal. ip reads its numbers (`get_unsigned`, `get_u32`, the name tables' numbers)
/// and each part of an IPv4 address (`get_addr_ipv4`) with it.
pub(crate) fn strtoul(s: &[u8]) -> Strtoul {
    strtoul_in(s, 0)
}

/// `strtoul(s, &end, base)` for base 0 (see [`strtoul`]), 10 (what `sscanf`'s `%u` reads) or
/// 16 (`0x` allowed before the digits).
pub(crate) fn strtoul_in(s: &[u8], base: u32) -> Strtoul {
    let mut i = 0;
    // C's `isspace` in the C locale.
    while s
        .get(i)
        .is_some_and(|&b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
    {
        i += 1;
    }
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let hex_digit = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_hexdigit());
    let radix = if base == 10 {
        10
    } else if s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && hex_digit(s.get(i + 2))
    {
        i += 2;
        16
    } else if base == 16 {
        16
    } else if s.get(i) == Some(&b'0') {
        8
    } else {
        10
    };
    let start = i;
    let mut value = 0u64;
    let mut overflow = false;
    while let Some(d) = s.get(i).and_then(|&b| (b as char).to_digit(radix)) {
        match value
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return Strtoul { value: 0, read: 0 };
    }
    let value = match (overflow, negative) {
        (true, _) => u64::MAX,
        (false, true) => value.wrapping_neg(),
        (false, false) => value,
    };
    Strtoul { value, read: i }
}

/// `sscanf(s, "%u-%u", &lo, &hi)` as glibc reads it, for ip's ranges (`uidrange`, `sport`,
/// `dport`): how many numbers it read (0, 1 or 2), and them. A number is decimal after blanks
/// and a sign, negated or too large as [`Strtoul`] says, and cut to the field's width by the
/// caller as C's cast does (`as`); the dash follows the first at once, and anything after the
/// second is ignored (`5-7x` is 5 to 7).
pub(crate) fn scan_range(s: &str) -> (usize, u64, u64) {
    let s = s.as_bytes();
    let lo = strtoul_in(s, 10);
    if lo.read == 0 {
        return (0, 0, 0);
    }
    let rest = &s[lo.read..];
    if rest.first() != Some(&b'-') {
        return (1, lo.value, 0);
    }
    let hi = strtoul_in(&rest[1..], 10);
    if hi.read == 0 {
        return (1, lo.value, 0);
    }
    (2, lo.value, hi.value)
}

/// Numbers as iproute2's `get_unsigned` and `get_u32` read them (`strtoul` over the whole
/// word, at most `u32::MAX`): decimal, `0x` hex or leading-zero octal, after an optional sign
/// (`+5` is 5, `-0` is 0; `-N` is 2^64 - N, as C negates an unsigned long, so past the range
/// but for N within 2^32 of 2^64).
pub fn parse_u32(s: &str) -> Option<u32> {
    let n = strtoul(s.as_bytes());
    if n.read == 0 || n.read != s.len() {
        return None;
    }
    u32::try_from(n.value).ok()
}

/// An IPv4 address as ip reads one (`get_addr_ipv4`): one to four parts split by dots, each a
/// number `strtoul` reads of at most 255, the parts left out zero. So `10.1` is 10.1.0.0,
/// and a part with a leading zero is octal: `010.1.1.1` is 8.1.1.1 (`08` is refused).
pub fn ipv4_as_ip_reads(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut rest = s.as_bytes();
    for (i, octet) in octets.iter_mut().enumerate() {
        let n = strtoul(rest);
        if n.read == 0 || n.value > 255 {
            return None;
        }
        *octet = n.value as u8;
        rest = &rest[n.read..];
        match rest.first() {
            None => break,
            Some(b'.') if i < 3 => rest = &rest[1..],
            Some(_) => return None,
        }
    }
    Some(Ipv4Addr::from(octets))
}

/// A prefix length as ip reads one (`get_netmask`), whatever the prefix's family: a number,
/// else a contiguous IPv4 netmask (`255.255.255.0` is 24, `255.255` 16), where `default`,
/// `any` and `all` read as the zero mask (`get_addr_1` gives them no bytes).
pub fn prefix_len_as_ip_reads(s: &str) -> Option<u32> {
    parse_u32(s).or_else(|| {
        let mask = match s {
            "default" | "any" | "all" => 0,
            _ => u32::from(ipv4_as_ip_reads(s)?),
        };
        // `mask2bits`: the host part must be 2^n - 1.
        let host = !mask;
        (host & host.wrapping_add(1) == 0).then(|| mask.count_ones())
    })
}

/// IP protocols as the machine's `/etc/protocols` gives them, each with its names (the
/// official one first, then its aliases: ip asks `getprotobynumber`/`getprotobyname`, which
/// read it); empty where the file is missing.
fn protocols() -> &'static [(u8, Vec<String>)] {
    static TABLE: std::sync::OnceLock<Vec<(u8, Vec<String>)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let text = std::fs::read_to_string("/etc/protocols").unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut w = l.split('#').next()?.split_whitespace();
                let name = w.next()?;
                let number = w.next()?.parse().ok()?;
                let names = std::iter::once(name).chain(w).map(String::from).collect();
                Some((number, names))
            })
            .collect()
    })
}

/// `inet_proto_n2a`: the protocol's name, or `ipproto-N`.
pub fn ipproto_name(p: u8) -> String {
    protocols()
        .iter()
        .find(|(n, _)| *n == p)
        .map_or_else(|| format!("ipproto-{p}"), |(_, names)| names[0].clone())
}

/// `inet_proto_a2n`'s `getprotobyname`: a protocol by a name or alias of `/etc/protocols`,
/// as written there (`TCP` is tcp's alias).
pub fn ipproto_from_name(name: &str) -> Option<u8> {
    protocols()
        .iter()
        .find(|(_, names)| names.iter().any(|n| n == name))
        .map(|(p, _)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names_round_trip() {
        for t in RouteType::ALL {
            assert_eq!(RouteType::from_name(t.name()), Some(t));
        }
        assert_eq!(protocol_from_name("bird"), Some(12));
        assert_eq!(protocol_name(186), "bgp");
        assert_eq!(table_from_name("main"), Some(254));
        assert_eq!(table_name(100), "100");
        assert_eq!(parse_u32("0x10"), Some(16));
        assert_eq!(parse_u32("010"), Some(8));
        assert_eq!(parse_u32("-1"), None);
        assert_eq!(
            parse_u32("0x+1"),
            None,
            "strtoul stops at the sign: ip refuses it"
        );
        assert_eq!(parse_u32("0+7"), None);
        assert_eq!(parse_u32("0x"), None);
        // sscanf's "%u-%u": decimal only, the dash at once, the rest ignored.
        assert_eq!(scan_range("5-7x"), (2, 5, 7));
        assert_eq!(scan_range("010-0x9"), (2, 10, 0));
        assert_eq!(scan_range(" +5- 7"), (2, 5, 7));
        assert_eq!(scan_range("5 -7"), (1, 5, 0));
        assert_eq!(scan_range("5-"), (1, 5, 0));
        assert_eq!(scan_range("-1-2"), (2, u64::MAX, 2));
        assert_eq!(scan_range("x-2"), (0, 0, 0));
        assert_eq!(scope_from_name("link"), Some(253));
    }

    /// What glibc's `strtoul` (base 0) and ip's readers on top of it give, checked against ip
    /// 6.1 in a namespace where a line says so (`route add 10.9.0.0/+16 ...` adds a /16).
    #[test]
    fn numbers_addresses_and_masks_read_as_ip_reads_them() {
        for (word, want) in [
            ("+5", Some(5)),
            ("-0", Some(0)),
            ("-0x0", Some(0)),
            ("-1", None),
            ("+", None),
            ("0X1f", Some(31)),
            ("0x1g", None),
            ("08", None),
            ("4294967295", Some(u32::MAX)),
            ("4294967296", None),
            ("99999999999999999999999", None),
            (" 7", Some(7)),
        ] {
            assert_eq!(parse_u32(word), want, "{word:?}");
        }
        for (word, want) in [
            ("10.1", Some([10, 1, 0, 0])),
            ("012.0124.0.002", Some([10, 84, 0, 2])),
            ("0x0b.1.0.0", Some([11, 1, 0, 0])),
            ("+10.+84.-0.+3", Some([10, 84, 0, 3])),
            ("010.084.0.1", None),
            ("256.1.1.1", None),
            ("1.2.3.4.5", None),
            ("1..2", None),
            ("1.2.", None),
            ("1.2.3.4x", None),
            ("", None),
            ("2001:db8::1", None),
        ] {
            assert_eq!(ipv4_as_ip_reads(word), want.map(Ipv4Addr::from), "{word:?}");
        }
        for (word, want) in [
            ("24", Some(24)),
            ("0x18", Some(24)),
            ("255.255.255.0", Some(24)),
            ("255.255", Some(16)),
            ("0377.255.0.0", Some(16)),
            ("0.0.0.0", Some(0)),
            ("255.255.255.255", Some(32)),
            ("any", Some(0)),
            ("default", Some(0)),
            ("255.0.255.0", None),
            ("24.0", None),
            ("ffff::", None),
        ] {
            assert_eq!(prefix_len_as_ip_reads(word), want, "{word:?}");
        }
    }
}
