//! iproute2's names for numbers: tables (`rt_tables`), protocols (`rt_protos`), scopes
//! (`rt_scopes`), DS field values (`rt_dsfield`), and how ip reads a number. The parser reads
//! them, the printer writes them.
use crate::route::*;

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

/// Numbers as iproute2's `get_unsigned` reads them: decimal, `0x` hex or leading-zero octal.
pub fn parse_u32(s: &str) -> Option<u32> {
    if s.is_empty() || s.starts_with('+') || s.starts_with('-') {
        return None;
    }
    // `strtoul` takes a sign only before the `0x` / `0`; Rust's radix parsers take a `+` after
    // it too, so digits are checked to be digits.
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

/// IP protocol names as the machine's `/etc/protocols` gives them (ip asks
/// `getprotobynumber`/`getprotobyname`, which read it); empty where the file is missing.
fn protocols() -> &'static [(u8, String)] {
    static TABLE: std::sync::OnceLock<Vec<(u8, String)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let text = std::fs::read_to_string("/etc/protocols").unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut w = l.split('#').next()?.split_whitespace();
                let name = w.next()?;
                let number = w.next()?.parse().ok()?;
                Some((number, name.to_string()))
            })
            .collect()
    })
}

/// `inet_proto_n2a`: the protocol's name, or its number.
pub fn ipproto_name(p: u8) -> String {
    protocols()
        .iter()
        .find(|(n, _)| *n == p)
        .map_or_else(|| p.to_string(), |(_, name)| name.clone())
}

/// `inet_proto_a2n`: a protocol named in `/etc/protocols`.
pub fn ipproto_from_name(name: &str) -> Option<u8> {
    protocols().iter().find(|(_, n)| n == name).map(|(p, _)| *p)
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
        assert_eq!(scope_from_name("link"), Some(253));
    }
}
