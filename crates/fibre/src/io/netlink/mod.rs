//! Following a live kernel over rtnetlink: a [`Mirror`] keeps a [`Router`] equal to a
//! kernel's devices, addresses, rules, next-hop objects and routes of every table.
//!
//! A sync dumps all of it into a fresh router and puts that in place whole. The routes the
//! kernel derives from addresses and links (local, broadcast, connected, IPv6 multicast and
//! link-local) come from the kernel with the others: a mirrored router derives none itself,
//! so none is missing and none is there twice. Lists keep the kernel's order (the dump's) and
//! go through the same checks as a snapshot's.
//!
//! Following: [`Mirror::follow`] listens to the kernel's notifications (subscribed before the
//! first dump, so nothing falls between) and resyncs when there were any, or when the buffer
//! overran. Applying notifications one by one is the next step.
mod decode;
mod socket;

use crate::addr::Family;
use crate::nexthop::{NhObject, NhObjectKind};
use crate::router::{FamilyParts, Router, RouterFamily, RouterImage};
use socket::{Conn, Events, Heard};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

const RTM_GETNEXTHOP: u16 = 106;
const AF_INET: u8 = libc::AF_INET as u8;
const AF_INET6: u8 = libc::AF_INET6 as u8;

/// Why a mirror could not sync.
#[derive(Debug)]
pub enum MirrorError {
    /// The socket or a dump failed.
    Io(std::io::Error),
    /// A message could not be read.
    Decode(String),
    /// What the kernel said does not make a router, three times over: state fibre does not
    /// model (an `fdb` object, a group mixing families), or a fibre bug to report.
    Inconsistent(String),
}

impl fmt::Display for MirrorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MirrorError::Io(e) => write!(f, "netlink: {e}"),
            MirrorError::Decode(e) => write!(f, "netlink message: {e}"),
            MirrorError::Inconsistent(e) => write!(f, "kernel state: {e}"),
        }
    }
}

impl std::error::Error for MirrorError {}

impl From<std::io::Error> for MirrorError {
    fn from(e: std::io::Error) -> Self {
        MirrorError::Io(e)
    }
}

/// What a sync read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Devices.
    pub links: usize,
    /// Addresses of both families.
    pub addrs: usize,
    /// Rules of both families.
    pub rules: usize,
    /// Next-hop objects.
    pub objects: usize,
    /// Routes, IPv4 then IPv6 (IPv6 multipath counted per leg).
    pub routes: [usize; 2],
    /// Kernel entries the model does not hold (cloned routes, unknown types).
    pub skipped: usize,
    /// What this sync found different from what the mirror held before it (devices,
    /// addresses, rules, objects and routes added or gone): the drift a resync mended. 0 for
    /// the first sync.
    pub drift: usize,
}

/// What a spell of following found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FollowReport {
    /// Notifications read.
    pub events: usize,
    /// Times the notification buffer overran (the kernel dropped some).
    pub overruns: usize,
    /// Resyncs done.
    pub resyncs: usize,
    /// What the resync found changed (see [`SyncReport::drift`]).
    pub drift: usize,
}

/// How many entries are in one list and not the other, as multisets.
fn difference<T: Eq + std::hash::Hash>(
    old: impl Iterator<Item = T>,
    new: impl Iterator<Item = T>,
) -> usize {
    let mut count: std::collections::HashMap<T, i64> = std::collections::HashMap::new();
    for x in old {
        *count.entry(x).or_default() += 1;
    }
    for x in new {
        *count.entry(x).or_default() -= 1;
    }
    count.values().map(|c| c.unsigned_abs() as usize).sum()
}

/// The entries of one family that differ between two routers.
fn family_drift<A: RouterFamily>(old: &Router, new: &Router) -> usize {
    let (o, n) = (old.family::<A>(), new.family::<A>());
    let addrs = o.addrs().iter().filter(|a| !n.addrs().contains(a)).count()
        + n.addrs().iter().filter(|a| !o.addrs().contains(a)).count();
    addrs
        + difference(o.rules().iter(), n.rules().iter())
        + difference(o.objects().values(), n.objects().values())
        + difference(old.routes::<A>(), new.routes::<A>())
}

/// A router that follows a kernel.
pub struct Mirror {
    conn: Conn,
    events: Events,
    router: Router,
    /// A sync has put the kernel's state in place (the next one reports drift).
    synced: bool,
}

fn decode_err(what: &str) -> impl Fn(String) -> MirrorError + '_ {
    move |e| MirrorError::Decode(format!("{what}: {e}"))
}

impl Mirror {
    /// Opens a socket in network namespace `netns` (the caller's for `None`), listens to the
    /// kernel's notifications, then syncs (listening first, so no change falls between).
    pub fn open(netns: Option<&str>) -> Result<(Mirror, SyncReport), MirrorError> {
        Mirror::open_with(netns, None)
    }

    /// As [`Mirror::open`], with a receive buffer of `rcvbuf` bytes for notifications (small
    /// ones overrun under churn: a test of resyncs).
    pub fn open_with(
        netns: Option<&str>,
        rcvbuf: Option<usize>,
    ) -> Result<(Mirror, SyncReport), MirrorError> {
        let mut m = Mirror {
            events: Events::open(netns, rcvbuf)?,
            conn: Conn::open(netns)?,
            router: Router::new(),
            synced: false,
        };
        let report = m.sync()?;
        Ok((m, report))
    }

    /// Follows the kernel for up to `wait`: reads its notifications until it is quiet for
    /// `settle`, then resyncs if there were any (or if the buffer overran, which loses
    /// notifications: a resync mends whatever they said). Each resync puts a whole new state in
    /// place, so readers see every change whole.
    ///
    /// This first version resyncs on any change; applying notifications one by one, with a
    /// resync only on overrun or a failed apply, is the next step.
    pub fn follow(
        &mut self,
        wait: std::time::Duration,
        settle: std::time::Duration,
    ) -> Result<FollowReport, MirrorError> {
        let mut report = FollowReport::default();
        let deadline = std::time::Instant::now() + wait;
        let mut heard = false;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let pause = if heard { settle.min(left) } else { left };
            match self.events.hear(pause)? {
                Heard::Messages(n) => {
                    report.events += n;
                    heard = true;
                }
                Heard::Overrun => {
                    report.overruns += 1;
                    heard = true;
                }
                Heard::Quiet => break,
            }
            if left.is_zero() {
                break;
            }
        }
        if heard {
            report.drift = self.sync()?.drift;
            report.resyncs = 1;
        }
        Ok(report)
    }

    /// The mirrored router.
    pub fn router(&self) -> &Router {
        &self.router
    }

    /// Dumps the kernel's whole state into a fresh router and puts it in place. The dumps are
    /// one per kind: a change between them (or during one) can leave parts that do not fit
    /// together, so a sync that finds that tries again, up to three times.
    pub fn sync(&mut self) -> Result<SyncReport, MirrorError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.sync_once() {
                Err(MirrorError::Inconsistent(_)) if tries < 3 => {}
                Err(MirrorError::Io(e))
                    if e.kind() == std::io::ErrorKind::Interrupted && tries < 3 => {}
                other => return other,
            }
        }
    }

    fn sync_once(&mut self) -> Result<SyncReport, MirrorError> {
        let mut report = SyncReport::default();
        let links = self
            .conn
            .dump(libc::RTM_GETLINK, &[0u8; 16])?
            .into_iter()
            .map(|(_, p)| decode::link(&p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(decode_err("device"))?;
        report.links = links.len();
        let (mut v4, mut v6) = (parts::<Ipv4Addr>(), parts::<Ipv6Addr>());
        for (_, p) in self.conn.dump(libc::RTM_GETADDR, &[0u8; 8])? {
            let family = p.first().copied();
            let added = match family {
                Some(AF_INET) => decode::addr(&p)
                    .map(|a| a.map(|a| v4.addrs.push(a)).is_some())
                    .map_err(decode_err("address"))?,
                Some(AF_INET6) => decode::addr(&p)
                    .map(|a| a.map(|a| v6.addrs.push(a)).is_some())
                    .map_err(decode_err("address"))?,
                _ => false,
            };
            report.addrs += usize::from(added);
        }
        // Objects first: routes say whether theirs is a group. A group's family is its members'.
        let objects = self.conn.dump(RTM_GETNEXTHOP, &[0u8; 8]).or_else(|e| {
            // A kernel without next-hop objects refuses the dump.
            match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => Ok(Vec::new()),
                _ => Err(e),
            }
        })?;
        let mut groups: Vec<NhObject<Ipv4Addr>> = Vec::new();
        for (_, p) in &objects {
            let Some((family, o4)) =
                decode::nexthop::<Ipv4Addr>(p).map_err(decode_err("nexthop"))?
            else {
                report.skipped += 1;
                continue;
            };
            match family {
                AF_INET => v4.objects.push(o4),
                AF_INET6 => match decode::nexthop::<Ipv6Addr>(p).map_err(decode_err("nexthop"))? {
                    Some((_, o6)) => v6.objects.push(o6),
                    None => report.skipped += 1,
                },
                _ => groups.push(o4),
            }
        }
        for g in groups {
            let NhObjectKind::Group(members) = g.kind else {
                continue;
            };
            let all_v4 = members
                .iter()
                .all(|m| v4.objects.iter().any(|o| o.id == m.id));
            let all_v6 = members
                .iter()
                .all(|m| v6.objects.iter().any(|o| o.id == m.id));
            if !all_v4 && !all_v6 {
                // A member the model does not hold, or IPv4 and IPv6 members together.
                report.skipped += 1;
                continue;
            }
            let in_v6 = all_v6;
            if in_v6 {
                v6.objects.push(NhObject {
                    id: g.id,
                    protocol: g.protocol,
                    kind: NhObjectKind::Group(members),
                });
            } else {
                v4.objects.push(NhObject {
                    kind: NhObjectKind::Group(members),
                    ..g
                });
            }
        }
        report.objects = v4.objects.len() + v6.objects.len();
        for (family, af) in [(Family::Inet, AF_INET), (Family::Inet6, AF_INET6)] {
            let mut hdr = [0u8; 12];
            hdr[0] = af;
            for (_, p) in self.conn.dump(libc::RTM_GETRULE, &hdr)? {
                match family {
                    Family::Inet => v4.rules.push(decode::rule(&p).map_err(decode_err("rule"))?),
                    Family::Inet6 => v6.rules.push(decode::rule(&p).map_err(decode_err("rule"))?),
                }
                report.rules += 1;
            }
            for (_, p) in self.conn.dump(libc::RTM_GETROUTE, &hdr)? {
                let read = match family {
                    Family::Inet => {
                        let g = |id| v4.objects.iter().any(|o| o.id == id && o.is_group());
                        decode::route::<Ipv4Addr>(&p, g)
                            .map(|r| r.map(|r| v4.routes.extend(r)).is_some())
                    }
                    Family::Inet6 => {
                        let g = |id| v6.objects.iter().any(|o| o.id == id && o.is_group());
                        decode::route::<Ipv6Addr>(&p, g)
                            .map(|r| r.map(|r| v6.routes.extend(r)).is_some())
                    }
                }
                .map_err(decode_err("route"))?;
                report.skipped += usize::from(!read);
            }
        }
        // Routes through an object the model does not hold (or of the other family) go too.
        let before = v4.routes.len() + v6.routes.len();
        let (o4, o6) = (&v4.objects, &v6.objects);
        v4.routes
            .retain(|r| r.nhid.is_none_or(|n| o4.iter().any(|o| o.id == n.id)));
        v6.routes
            .retain(|r| r.nhid.is_none_or(|n| o6.iter().any(|o| o.id == n.id)));
        report.skipped += before - v4.routes.len() - v6.routes.len();
        report.routes = [v4.routes.len(), v6.routes.len()];
        let image = RouterImage::mirrored(links, v4, v6);
        let router = Router::from_image(image).map_err(MirrorError::Inconsistent)?;
        if self.synced {
            let (o, n) = (&self.router, &router);
            report.drift = o
                .links()
                .iter()
                .filter(|l| !n.links().iter().any(|x| x == *l))
                .count()
                + n.links()
                    .iter()
                    .filter(|l| !o.links().iter().any(|x| x == *l))
                    .count()
                + family_drift::<Ipv4Addr>(o, n)
                + family_drift::<Ipv6Addr>(o, n);
        }
        self.router = router;
        self.synced = true;
        Ok(report)
    }
}

fn parts<A: RouterFamily>() -> FamilyParts<A> {
    FamilyParts {
        routes: Vec::new(),
        rules: Vec::new(),
        addrs: Vec::new(),
        objects: Vec::new(),
    }
}
