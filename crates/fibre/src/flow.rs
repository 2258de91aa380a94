//! The lookup key: what a packet (or `ip route get`) tells the routing code.
use crate::addr::Address;
use crate::link::IfIndex;

/// A flow as the kernel's `flowi4` / `flowi6` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Flow<A: Address> {
    /// Destination address.
    pub dst: A,
    /// Source address; `None` is the unspecified address (no `from`).
    pub src: Option<A>,
    /// Input device: set for forwarded packets (`route get ... iif DEV`). Output lookups carry
    /// `lo` here for rule matching, as the kernel does.
    pub iif: Option<IfIndex>,
    /// Output device the caller insists on (`oif DEV`).
    pub oif: Option<IfIndex>,
    /// Firewall mark, matched by rules' `fwmark`.
    pub mark: u32,
    /// The DS field byte (`tos`): IPv4 routes match its legacy TOS bits, rules its DSCP.
    pub tos: u8,
    /// IP protocol number, matched by rules' `ipproto`.
    pub ipproto: u8,
    /// Source port, matched by rules' `sport`.
    pub sport: u16,
    /// Destination port, matched by rules' `dport`.
    pub dport: u16,
    /// Socket owner's uid, matched by rules' `uidrange`.
    pub uid: u32,
    /// IPv6: a route on another device than `oif` is unusable rather than merely less preferred
    /// (`RT6_LOOKUP_F_IFACE`: oif given without a source address).
    pub strict_oif: bool,
    /// IPv4: only routes of at least this scope qualify (gateway checks look for `link`).
    pub scope: u8,
    /// The packet arrives on `iif` (`route get ... iif DEV`) rather than leaving this host:
    /// IPv6 then prefers (or, strict, requires) routes on the input device.
    pub input: bool,
}

impl<A: Address> Flow<A> {
    /// A flow to `dst` with nothing else specified.
    pub fn to(dst: A) -> Self {
        Flow {
            dst,
            src: None,
            iif: None,
            oif: None,
            mark: 0,
            tos: 0,
            ipproto: 0,
            sport: 0,
            dport: 0,
            uid: 0,
            strict_oif: false,
            scope: 0,
            input: false,
        }
    }
}
