//! Network devices and their addresses: what the kernel derives routes from.
use crate::addr::Address;
use crate::prefix::Prefix;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Interface index; 1 is `lo` in every network namespace.
pub type IfIndex = u32;
pub const LOOPBACK_IFINDEX: IfIndex = 1;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkKind {
    Loopback,
    /// One end of a veth pair; `peer` is the other end's index.
    Veth {
        peer: IfIndex,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub index: IfIndex,
    pub name: String,
    pub up: bool,
    pub kind: LinkKind,
    /// IPv6 addrconf has set the device up (it then has its ff00::/8 route): when it became
    /// ready, or when an IPv6 address was added while it was up; until it goes down.
    pub v6_configured: bool,
}

/// An address on a device (`ip addr add PREFIX dev NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfAddr<A: Address> {
    /// The address itself (`local`), with the subnet length.
    pub addr: A,
    pub len: u8,
    pub dev: IfIndex,
    /// IPv4 explicit broadcast (`brd`).
    pub broadcast: Option<A>,
    pub noprefixroute: bool,
    /// Metric of the prefix route (`metric N`).
    pub metric: Option<u32>,
}

impl<A: Address> IfAddr<A> {
    pub fn subnet(&self) -> Prefix<A> {
        Prefix::new(self.addr, self.len)
    }
}

/// The devices of one namespace. `lo` exists from the start, down, as in a new namespace.
#[derive(Clone, Debug)]
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
    pub fn by_name(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }
    pub fn by_index(&self, index: IfIndex) -> Option<&Link> {
        self.links.iter().find(|l| l.index == index)
    }
    pub fn name_of(&self, index: IfIndex) -> Option<&str> {
        self.by_index(index).map(|l| l.name.as_str())
    }
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
            Some(l) => l.up,
            None => false,
        }
    }
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
    pub fn set_up(&mut self, index: IfIndex, up: bool) {
        if let Some(l) = self.links.iter_mut().find(|l| l.index == index) {
            l.up = up;
            if !up {
                l.v6_configured = false;
            }
        }
    }
    pub fn set_v6_configured(&mut self, index: IfIndex) {
        if let Some(l) = self.links.iter_mut().find(|l| l.index == index) {
            l.v6_configured = true;
        }
    }
    /// The other end of a veth pair.
    pub fn peer(&self, index: IfIndex) -> Option<IfIndex> {
        match self.by_index(index)?.kind {
            LinkKind::Veth { peer } => Some(peer),
            LinkKind::Loopback => None,
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

/// The loopback addresses the kernel puts on `lo` when it first comes up.
pub fn loopback_v4() -> IfAddr<Ipv4Addr> {
    IfAddr {
        addr: Ipv4Addr::LOCALHOST,
        len: 8,
        dev: LOOPBACK_IFINDEX,
        broadcast: None,
        noprefixroute: false,
        metric: None,
    }
}
pub fn loopback_v6() -> IfAddr<Ipv6Addr> {
    IfAddr {
        addr: Ipv6Addr::LOCALHOST,
        len: 128,
        dev: LOOPBACK_IFINDEX,
        broadcast: None,
        noprefixroute: false,
        metric: None,
    }
}
