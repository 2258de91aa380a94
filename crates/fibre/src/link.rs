//! Network devices and their addresses: what the kernel derives routes from.
use crate::addr::Address;
use crate::prefix::Prefix;
use crate::route::{Scope, SCOPE_HOST, SCOPE_LINK, SCOPE_SITE, SCOPE_UNIVERSE};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Interface index; 1 is `lo` in every network namespace.
pub type IfIndex = u32;
/// The index of `lo` (`LOOPBACK_IFINDEX`).
pub const LOOPBACK_IFINDEX: IfIndex = 1;

/// The device types fibre models.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub enum LinkKind {
    /// `lo`.
    Loopback,
    /// One end of a veth pair; `peer` is the other end's index.
    Veth {
        /// The other end's index.
        peer: IfIndex,
    },
    /// A device of a kernel fibre mirrors (ethernet, bridge, dummy, ...): it has the carrier
    /// the kernel reports (`IFF_LOWER_UP`).
    Device {
        /// The kernel's carrier state.
        carrier: bool,
    },
}

/// A network device.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct Link {
    /// Interface index.
    pub index: IfIndex,
    /// Device name (`veth0`).
    pub name: String,
    /// Administratively up (`IFF_UP`, `ip link set DEV up`).
    pub up: bool,
    /// Device type.
    pub kind: LinkKind,
    /// IPv6 addrconf has set the device up (it then has its ff00::/8 route): when it became
    /// ready, or when an IPv6 address was added while it was up; until it goes down.
    pub v6_configured: bool,
}

/// An address on a device (`ip addr add PREFIX dev NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct IfAddr<A: Address> {
    /// The address itself (`local`), with the subnet length.
    pub addr: A,
    /// Subnet length in bits.
    pub len: u8,
    /// The device the address is on.
    pub dev: IfIndex,
    /// IPv4 explicit broadcast (`brd`).
    pub broadcast: Option<A>,
    /// `noprefixroute`: no route to the subnet is derived from this address.
    pub noprefixroute: bool,
    /// Metric of the prefix route (`metric N`).
    pub metric: Option<u32>,
    /// The address's scope (`scope`, `ifa_scope`): which routes may take it as their source
    /// (IPv4's `inet_select_addr`). ip gives 127/8 host scope and other IPv4 addresses global
    /// scope unless told; IPv6's follows from the address.
    pub scope: Scope,
    /// Its preferred lifetime is over (`preferred_lft 0`, `IFA_F_DEPRECATED`): IPv6's source
    /// choice passes it over for one that is not (RFC 6724's rule 3). IPv4's choice does not
    /// look; `addr show` prints it for both.
    pub deprecated: bool,
}

impl<A: Address> IfAddr<A> {
    /// The subnet the address is on (`addr/len`, host bits masked).
    pub fn subnet(&self) -> Prefix<A> {
        Prefix::new(self.addr, self.len)
    }
}

/// The devices of one namespace. `lo` exists from the start, down, as in a new namespace.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct Links {
    links: Vec<Link>,
    next_index: IfIndex,
}

impl Default for Links {
    fn default() -> Self {
        Links {
            links: vec![Link {
                index: LOOPBACK_IFINDEX,
                name: "lo".into(),
                up: false,
                kind: LinkKind::Loopback,
                v6_configured: false,
            }],
            next_index: 2,
        }
    }
}

impl Links {
    /// Whether the devices hang together (a snapshot's, which came from outside): `lo` at
    /// index 1, unique indexes and names, the next index past them all, veths in pairs.
    #[cfg(feature = "snapshot")]
    pub(crate) fn check(&self) -> Result<(), String> {
        let lo = self.by_index(LOOPBACK_IFINDEX);
        if !lo.is_some_and(|l| l.kind == LinkKind::Loopback && l.name == "lo") {
            return Err("no lo at index 1".into());
        }
        // Room for a veth pair more (`add_veth` takes two indexes).
        if self.next_index > u32::MAX - 2 {
            return Err(format!("next device index {}", self.next_index));
        }
        for (i, l) in self.links.iter().enumerate() {
            let later = &self.links[i + 1..];
            if later.iter().any(|o| o.index == l.index || o.name == l.name) {
                return Err(format!("device {} ({}) appears twice", l.index, l.name));
            }
            if l.index >= self.next_index || l.name.is_empty() {
                return Err(format!("device {} ({}) is out of range", l.index, l.name));
            }
            match l.kind {
                LinkKind::Loopback if l.index != LOOPBACK_IFINDEX => {
                    return Err(format!("device {} is a second loopback", l.index))
                }
                LinkKind::Veth { peer } if peer == l.index || self.peer(peer) != Some(l.index) => {
                    return Err(format!("veth {} has no peer {peer}", l.name))
                }
                _ => {}
            }
        }
        Ok(())
    }
    /// The device named `name`.
    pub fn by_name(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }
    /// The device with index `index`.
    pub fn by_index(&self, index: IfIndex) -> Option<&Link> {
        self.links.iter().find(|l| l.index == index)
    }
    /// The name of device `index`.
    pub fn name_of(&self, index: IfIndex) -> Option<&str> {
        self.by_index(index).map(|l| l.name.as_str())
    }
    /// Whether device `index` exists and is administratively up (carrier not considered).
    pub fn is_up(&self, index: IfIndex) -> bool {
        self.by_index(index).is_some_and(|l| l.up)
    }
    /// Up with carrier: a veth has carrier only while its peer is up too. Routes through a device
    /// that is up without carrier are flagged `linkdown`; IPv6 addrconf waits for carrier.
    pub fn is_ready(&self, index: IfIndex) -> bool {
        match self.by_index(index) {
            Some(Link {
                up: true,
                kind: LinkKind::Veth { peer },
                ..
            }) => self.is_up(*peer),
            Some(Link {
                up,
                kind: LinkKind::Device { carrier },
                ..
            }) => *up && *carrier,
            Some(l) => l.up,
            None => false,
        }
    }
    /// The devices of a kernel, by its indexes (`lo` among them), for a mirror.
    #[cfg(feature = "netlink")]
    pub(crate) fn mirrored(links: Vec<Link>) -> Links {
        let next_index = links.iter().map(|l| l.index).max().unwrap_or(1) + 1;
        Links { links, next_index }
    }
    /// A device as a mirrored kernel reports it (`RTM_NEWLINK`): a new one, or new state
    /// (name, up, carrier) for one it has.
    #[cfg(feature = "netlink")]
    pub(crate) fn mirror_upsert(&mut self, link: Link) {
        self.next_index = self.next_index.max(link.index.saturating_add(1));
        match self.links.iter_mut().find(|l| l.index == link.index) {
            Some(l) => *l = link,
            None => self.links.push(link),
        }
    }
    /// All devices, in creation order.
    pub fn iter(&self) -> impl Iterator<Item = &Link> {
        self.links.iter()
    }
    /// Creates a veth pair. The kernel registers the peer first, so the peer gets the lower index.
    pub fn add_veth(&mut self, name: &str, peer: &str) -> (IfIndex, IfIndex) {
        let p = self.next_index;
        let n = p + 1;
        self.next_index += 2;
        self.links.push(Link {
            index: p,
            name: peer.into(),
            up: false,
            kind: LinkKind::Veth { peer: n },
            v6_configured: false,
        });
        self.links.push(Link {
            index: n,
            name: name.into(),
            up: false,
            kind: LinkKind::Veth { peer: p },
            v6_configured: false,
        });
        (n, p)
    }
    /// Sets device `index` up or down; going down clears `v6_configured`.
    pub fn set_up(&mut self, index: IfIndex, up: bool) {
        if let Some(l) = self.links.iter_mut().find(|l| l.index == index) {
            l.up = up;
            if !up {
                l.v6_configured = false;
            }
        }
    }
    /// Marks device `index` as set up by IPv6 addrconf (see [`Link::v6_configured`]).
    pub fn set_v6_configured(&mut self, index: IfIndex) {
        if let Some(l) = self.links.iter_mut().find(|l| l.index == index) {
            l.v6_configured = true;
        }
    }
    /// The other end of a veth pair.
    pub fn peer(&self, index: IfIndex) -> Option<IfIndex> {
        match self.by_index(index)?.kind {
            LinkKind::Veth { peer } => Some(peer),
            LinkKind::Loopback | LinkKind::Device { .. } => None,
        }
    }
    /// Removes a device (and its veth peer, which cannot live alone). Returns the indexes removed.
    pub fn remove(&mut self, index: IfIndex) -> Vec<IfIndex> {
        let mut gone = vec![index];
        if let Some(Link {
            kind: LinkKind::Veth { peer },
            ..
        }) = self.by_index(index)
        {
            gone.push(*peer);
        }
        self.links.retain(|l| !gone.contains(&l.index));
        gone
    }
}

/// The scope the kernel gives an IPv6 address (`ipv6_addr_scope`, as `ip addr` shows it): host
/// for `::1`, link for `fe80::/10`, site for `fec0::/10`, else global.
pub fn ipv6_scope(a: Ipv6Addr) -> Scope {
    match ipv6_src_scope(a) {
        _ if a.is_loopback() => SCOPE_HOST,
        0x02 => SCOPE_LINK,
        0x05 => SCOPE_SITE,
        _ => SCOPE_UNIVERSE,
    }
}

/// `__ipv6_addr_src_scope`: the scope RFC 6724's rules weigh and a device's list of IPv6
/// addresses is sorted by: a group's scope field; link scope for `::1` ("addr-select 3.4")
/// and `fe80::/10`; site for `fec0::/10`; global for every other unicast address; -1 for `::`.
pub(crate) fn ipv6_src_scope(a: Ipv6Addr) -> i8 {
    let top = a.segments()[0];
    if a.is_unspecified() {
        -1
    } else if a.is_multicast() {
        (top & 0x000f) as i8
    } else if a.is_loopback() || top & 0xffc0 == 0xfe80 {
        0x02
    } else if top & 0xffc0 == 0xfec0 {
        0x05
    } else {
        0x0e
    }
}

/// The IPv4 addresses of device `dev` in the kernel's list order, from `addrs` in the order
/// they were added (`__inet_insert_ifa`): a secondary (in a subnet an address before it has)
/// at the end; a primary after the last primary of a scope as narrow or narrower (host before
/// link before universe, the older first among equals). Only `addr del` without a length
/// asks it (the kernel deletes the first of that IP). Deletions leave the others in order;
/// replaying the survivors can differ where a deleted primary had set a later one's place.
pub(crate) fn ipv4_list_order<A: Address>(addrs: &[IfAddr<A>], dev: IfIndex) -> Vec<&IfAddr<A>> {
    let mut list: Vec<(&IfAddr<A>, bool)> = Vec::new();
    for a in addrs.iter().filter(|a| a.dev == dev) {
        let (mut after_primaries, mut secondary) = (0, false);
        for (i, (o, o_secondary)) in list.iter().enumerate() {
            if !o_secondary && a.scope <= o.scope {
                after_primaries = i + 1;
            }
            secondary |= o.len == a.len && o.subnet() == a.subnet();
        }
        let at = if secondary {
            list.len()
        } else {
            after_primaries
        };
        list.insert(at, (a, secondary));
    }
    list.into_iter().map(|(a, _)| a).collect()
}

/// Where the kernel puts a new IPv6 address in its device's list (`ipv6_link_dev_addr`): before
/// the device's first address of a scope no wider than its own, so global before link-local,
/// and the newest first among the same scope. Both a batch and a mirror keep IPv6 addresses in
/// this order: the source chosen among equals is the first (`router::ipv6::source`).
pub(crate) fn ipv6_list_position<A: Address>(addrs: &[IfAddr<A>], new: &IfAddr<A>) -> usize {
    let scope = |a: &A| match (*a).into() {
        std::net::IpAddr::V6(v6) => ipv6_src_scope(v6),
        std::net::IpAddr::V4(_) => 0,
    };
    let s = scope(&new.addr);
    let same_dev = |o: &IfAddr<A>| o.dev == new.dev;
    addrs
        .iter()
        .position(|o| same_dev(o) && s >= scope(&o.addr))
        .or_else(|| addrs.iter().rposition(same_dev).map(|i| i + 1))
        .unwrap_or(addrs.len())
}

/// The loopback addresses the kernel puts on `lo` when it first comes up.
pub fn loopback_v4() -> IfAddr<Ipv4Addr> {
    IfAddr {
        addr: Ipv4Addr::LOCALHOST,
        len: 8,
        dev: LOOPBACK_IFINDEX,
        broadcast: None,
        noprefixroute: false,
        metric: None,
        scope: SCOPE_HOST,
        deprecated: false,
    }
}
/// `::1/128`, the IPv6 loopback address the kernel puts on `lo`.
pub fn loopback_v6() -> IfAddr<Ipv6Addr> {
    IfAddr {
        addr: Ipv6Addr::LOCALHOST,
        len: 128,
        dev: LOOPBACK_IFINDEX,
        broadcast: None,
        noprefixroute: false,
        metric: None,
        scope: SCOPE_HOST,
        deprecated: false,
    }
}
