//! The source IPv6 chooses for a packet of this host when its route names none
//! (`ipv6_dev_get_saddr`: RFC 6724's rules in Linux's order, default address labels).
use super::*;
use crate::link::ipv6_src_scope;

/// The default address label (`ip6addrlbl_init_table`, the longest prefix that holds `a`).
fn label(a: &Ipv6Addr) -> u8 {
    let b = a.to_bits();
    match () {
        _ if b == 1 => 0,                   // ::1/128
        _ if b >> 32 == 0 => 3,             // ::/96
        _ if b >> 32 == 0xffff => 4,        // ::ffff:0:0/96
        _ if b >> 96 == 0x2001_0000 => 6,   // 2001::/32
        _ if b >> 100 == 0x0200_1001 => 7,  // 2001:10::/28
        _ if b >> 112 == 0x2002 => 2,       // 2002::/16
        _ if b >> 112 == 0x3ffe => 12,      // 3ffe::/16
        _ if b >> 118 == 0xfec0 >> 6 => 11, // fec0::/10
        _ if b >> 121 == 0xfc00 >> 9 => 5,  // fc00::/7
        _ => 1,                             // ::/0
    }
}

/// The top 28 bits of ORCHID, 2001:10::/28 (RFC 4843).
const ORCHID: u128 = 0x0200_1001;

/// Whether a deprecated `a` still counts as preferred (`ipv6_saddr_preferred`): `::1`, and
/// IPv4-mapped and IPv4-compatible addresses.
fn always_preferred(a: &Ipv6Addr) -> bool {
    let b = a.to_bits();
    b >> 64 == 0 && matches!((b >> 32) as u32, 0 | 0xffff) && b != 0
}

/// Whether `a` is an ORCHID.
fn orchid(a: &Ipv6Addr) -> bool {
    a.to_bits() >> 100 == ORCHID
}

/// `ipv6_dev_get_saddr(dev, dst)`: the source for a packet to `dst` whose route leaves by `dev`.
/// The candidates are the addresses of every device (only `dev`'s to a group or a destination
/// of link scope or narrower, `::` included); the best by the rules, in order: the destination
/// itself; the narrowest scope that reaches the destination (else the widest); not deprecated;
/// on `dev`; the destination's label; ORCHID alike; the longest prefix shared with the
/// destination, up to the address's length. Of equals, the first in the kernel's order wins:
/// devices in order, each device's addresses as its list holds them (`addrs` keeps that order:
/// `link::ipv6_list_position`). (The rules on home, temporary and optimistic addresses do not
/// tell fibre's addresses apart: mobile IPv6 is not built into the kernels fibre follows,
/// temporary addresses come from router advertisements, and optimistic ones from duplicate
/// address detection, which fibre's namespaces turn off.)
///
/// One pass, without allocating (`route get` asks for each answer): each candidate's rules and
/// place packed into one number, the greatest best.
pub(super) fn source_toward(
    addrs: &[IfAddr<Ipv6Addr>],
    dev: Option<IfIndex>,
    dst: Ipv6Addr,
) -> Option<Ipv6Addr> {
    let dst_scope = ipv6_src_scope(dst);
    let only = dev.filter(|_| dst.is_multicast() || dst_scope <= 0x02);
    let (dst_bits, dst_label, dst_orchid) = (dst.to_bits(), label(&dst), orchid(&dst));
    let mut best: Option<(u128, Ipv6Addr)> = None;
    for (i, a) in addrs.iter().enumerate() {
        if only.is_some_and(|d| d != a.dev) || a.addr.is_multicast() || a.addr.is_unspecified() {
            continue;
        }
        let scope = ipv6_src_scope(a.addr);
        // The kernel's scope rule is -scope when it reaches the destination, else scope - 128;
        // plus 128, a byte (a candidate's scope is 0 to 15).
        let scope_rule = if scope >= dst_scope {
            128 - scope as u8
        } else {
            scope as u8
        };
        let shared = (a.addr.to_bits() ^ dst_bits)
            .leading_zeros()
            .min(u32::from(a.len));
        let key = u128::from(a.addr == dst) << 120
            | u128::from(scope_rule) << 112
            | u128::from(!a.deprecated || always_preferred(&a.addr)) << 111
            | u128::from(dev.is_none_or(|d| d == a.dev)) << 110
            | u128::from(label(&a.addr) == dst_label) << 109
            | u128::from(orchid(&a.addr) == dst_orchid) << 108
            // At most 128: bits 100 to 107.
            | u128::from(shared) << 100
            // Of equals, the first in the kernel's order: the lower device, then the earlier
            // in the list.
            | u128::from(u32::MAX - a.dev) << 64
            | u128::from(u64::MAX - i as u64);
        if best.is_none_or(|(k, _)| key > k) {
            best = Some((key, a.addr));
        }
    }
    best.map(|(_, a)| a)
}

/// The source of a plain query's answer whatever its destination, where the addresses decide
/// it alone. A plain query's destination is neither a group nor of link scope or narrower
/// (`need_strict`), nor `::` (`prepared_answer`): every address is a candidate, and one of site
/// or global scope beats every one of link scope (`::1` among them) whatever the destination,
/// deprecated or not (the scope rule comes first).
/// So with one such, that one; with none, the only candidate if there is one (or no source
/// without any). `None`: it depends on the destination ([`source_toward`]).
pub(super) fn sole_source(addrs: &[IfAddr<Ipv6Addr>]) -> Option<Option<Ipv6Addr>> {
    let mut candidates = addrs
        .iter()
        .filter(|a| !a.addr.is_multicast() && !a.addr.is_unspecified())
        .map(|a| a.addr);
    let mut wide = candidates.clone().filter(|a| ipv6_src_scope(*a) > 0x02);
    match (wide.next(), wide.next()) {
        (Some(one), None) => Some(Some(one)),
        (None, _) => match (candidates.next(), candidates.next()) {
            (only, None) => Some(only),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Addresses of every kind a host has: `::1`, link-local, site-local, ULA and global ones,
    /// deprecated or not.
    fn address() -> impl Strategy<Value = IfAddr<Ipv6Addr>> {
        (0..5u8, any::<u128>(), 1..5u32, 1..=128u8, any::<bool>()).prop_map(
            |(kind, bits, dev, len, deprecated)| {
                let addr = Ipv6Addr::from_bits(match kind {
                    0 => 1,
                    1 => 0xfe80 << 112 | bits >> 64,
                    2 => 0xfec0 << 112 | bits >> 16,
                    3 => 0xfd00 << 112 | bits >> 8,
                    _ => 0x2000 << 112 | bits >> 3,
                });
                IfAddr {
                    addr,
                    len,
                    dev: if addr.is_loopback() { 1 } else { dev },
                    broadcast: None,
                    noprefixroute: false,
                    metric: None,
                    scope: crate::link::ipv6_scope(addr),
                    deprecated,
                }
            },
        )
    }

    proptest! {
        /// Where `sole_source` decides a plain query's source, `source_toward` agrees for every
        /// destination a plain query can have (not `need_strict`) and every device.
        #[test]
        fn sole_source_agrees_with_the_rules(
            addrs in prop::collection::vec(address(), 0..4),
            dst in any::<u128>(),
            dev in 1..5u32,
        ) {
            let dst = Ipv6Addr::from_bits(dst);
            prop_assume!(!need_strict(&dst) && !dst.is_unspecified());
            // ::1 ties a link-local address on scope: the rules after it decide.
            if let Some(known) = sole_source(&addrs) {
                prop_assert_eq!(known, source_toward(&addrs, Some(dev), dst));
            }
        }
    }
}
