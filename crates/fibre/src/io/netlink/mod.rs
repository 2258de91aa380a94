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
//! first dump, so nothing falls between) and applies each batch it reads as one change set
//! (see `router::mirrored` for what a notification does, and what the kernel does without
//! one). Netlink may drop notifications: the kernel then says so (ENOBUFS, an overrun), and
//! the mirror resyncs: it throws away what is queued, dumps everything again and puts the new
//! state in place, so that nothing is lost and nothing stale stays. A resync whose dumps ran
//! while the kernel changed is done again once the kernel is quiet, and so is one whose IPv6
//! dump hid a route, after a change that may bring it into view (see [`Mirror::sync`]: the
//! kernel's IPv6 route dump can miss routes). Multicast notifications
//! carry no sequence of their own (`nlmsg_seq` is the requester's), so an overrun is the one
//! sign of loss there is. A notification that does not apply (a route through an object the
//! mirror does not have) also means the mirror went wrong: it resyncs too.
//!
//! Readers: the mirror keeps two copies of the router. Readers ([`MirrorReader`]) take the
//! published one, without a lock; the mirror changes the other, publishes it, and brings the
//! first one up to date once the last reader has let go of it. A reader holding a copy long (a
//! full `route show`) never stops the mirror from reading notifications: the events wait,
//! and are published once a copy is free.
mod decode;
mod events;
mod hidden;
mod socket;

pub use hidden::COUNT_AT_MOST as HIDDEN_COUNT_AT_MOST;

use crate::addr::Family;
use crate::nexthop::{NhObject, NhObjectKind};
use crate::route::RouteSpec;
use crate::router::{FamilyParts, Router, RouterFamily, RouterImage};
use arc_swap::ArcSwap;
use events::{Event, Objects};
use socket::{Conn, Events, Heard};
use std::collections::HashSet;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

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
    /// What the kernel said does not make a router, eight times over: state fibre does not
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
    /// IPv6 routes the kernel holds but its dump did not list (a route between the legs of
    /// an ECMP route: see [`Mirror::sync`]), counted in `/proc/net/ipv6_route`; `None` where
    /// they were not counted (over 8,192 IPv6 routes, whose count costs the kernel too long,
    /// or the file could not be read), and every destination with ECMP legs may hide one.
    /// The mirror syncs again once a change may have brought one into view.
    pub hidden: Option<usize>,
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
    /// Notifications applied (the others are of what the model does not hold, or not of
    /// routing state).
    pub applied: usize,
    /// Times the notification buffer overran (the kernel dropped some).
    pub overruns: usize,
    /// Notifications that did not apply (each led to a resync).
    pub failed: usize,
    /// Resyncs done (after overruns, failed notifications, dumps taken while the kernel
    /// changed, or asked for).
    pub resyncs: usize,
    /// Of those, the ones done because the last sync may have missed something: its dumps
    /// ran while the kernel changed, or a change may have brought into view a route its dump
    /// hid (see [`Mirror::sync`]).
    pub rechecks: usize,
    /// What the resyncs found different from what the mirror held (see
    /// [`SyncReport::drift`]): after an overrun, what the lost notifications said.
    pub drift: usize,
    /// Why the last notification that did not apply did not.
    pub last_failure: Option<String>,
    /// Change sets published to readers.
    pub published: usize,
    /// How long the events of a change set waited, from being read off the socket to being
    /// visible to readers, summed over the published ones (its mean is the lag).
    pub lag_total: std::time::Duration,
    /// The longest of those waits.
    pub lag_max: std::time::Duration,
}

impl FollowReport {
    fn add(&mut self, o: &FollowReport) {
        self.events += o.events;
        self.applied += o.applied;
        self.overruns += o.overruns;
        self.failed += o.failed;
        self.resyncs += o.resyncs;
        self.rechecks += o.rechecks;
        self.drift += o.drift;
        if o.last_failure.is_some() {
            self.last_failure.clone_from(&o.last_failure);
        }
        self.published += o.published;
        self.lag_total += o.lag_total;
        self.lag_max = self.lag_max.max(o.lag_max);
    }

    /// The mean time events waited to be visible to readers.
    pub fn lag_mean(&self) -> std::time::Duration {
        self.lag_total.div_f64(self.published.max(1) as f64)
    }

    fn count(&mut self, published: Option<Published>) {
        if let Some(p) = published {
            self.applied += p.events;
            self.published += 1;
            self.lag_total += p.lag;
            self.lag_max = self.lag_max.max(p.lag);
        }
    }
}

/// A change set made visible to readers.
struct Published {
    /// Its events.
    events: usize,
    /// How long the oldest of them waited, from being read to being visible.
    lag: std::time::Duration,
}

/// A reader of a mirror's router, for any thread: [`MirrorReader::load`] never blocks, and
/// never holds the mirror up.
#[derive(Clone)]
pub struct MirrorReader {
    live: Arc<ArcSwap<Router>>,
}

impl MirrorReader {
    /// The router as last published: each change set whole.
    pub fn load(&self) -> Arc<Router> {
        self.live.load_full()
    }
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
        + route_drift::<A>(old, new)
}

/// The routes of one family that differ between two routers. Both list them by (table,
/// destination, source), so one pass over the two in step compares each key's routes: no
/// table of a full view's size is hashed whole.
fn route_drift<A: RouterFamily>(old: &Router, new: &Router) -> usize {
    let key = |r: &RouteSpec<A>| (r.table, r.dst, r.src);
    let (mut o, mut n) = (old.routes::<A>().peekable(), new.routes::<A>().peekable());
    let mut drift = 0;
    loop {
        let k = match (o.peek().map(key), n.peek().map(key)) {
            (None, None) => return drift,
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
        };
        let group = |routes: &mut std::iter::Peekable<_>| {
            let mut list = Vec::new();
            while let Some(r) = routes.next_if(|r| key(r) == k) {
                list.push(r);
            }
            list
        };
        let (a, b) = (group(&mut o), group(&mut n));
        drift += difference(a.into_iter(), b.into_iter());
    }
}

/// A router that follows a kernel.
pub struct Mirror {
    conn: Conn,
    events: Events,
    /// The published copy, which readers load.
    live: Arc<ArcSwap<Router>>,
    /// The other copy: `behind` the published one by the events applied there since.
    spare: Option<Arc<Router>>,
    behind: Vec<Event>,
    /// Events read but not yet published (the spare copy was still being read).
    pending: Vec<Event>,
    /// When the oldest pending event was read.
    pending_since: Option<std::time::Instant>,
    objects: Objects,
    /// A sync has put the kernel's state in place (the next one reports drift).
    synced: bool,
    /// The mirror may not hold what the kernel lists: the last sync's dumps ran while the
    /// kernel changed, or a change since may have brought into view a route they hid. It
    /// syncs again once the kernel is quiet (see [`Mirror::sync`]).
    unsure: bool,
    /// Where the last sync found routes its dump hid, and the file it counted them in.
    hidden: HashSet<hidden::Key>,
    proc_routes: hidden::ProcRoutes,
    /// Everything followed so far.
    total: FollowReport,
}

fn decode_err(what: &str) -> impl Fn(String) -> MirrorError + '_ {
    move |e| MirrorError::Decode(format!("{what}: {e}"))
}

/// The notification buffer a mirror asks for, in bytes. It must hold what the kernel says
/// while a resync dumps a full table (seconds): at 10^4 changes/s and about a kilobyte of
/// kernel memory per notification, 64 MiB holds six seconds of them; a buffer that overruns
/// during every resync would never catch up. The kernel only charges what is queued. Without
/// CAP_NET_ADMIN the kernel caps it at `net.core.rmem_max`.
pub const DEFAULT_RCVBUF: usize = 64 << 20;

/// How long after its dumps a sync waits for a notification that would make it unsure (see
/// [`Mirror::sync`]): the kernel queues a change's notification just after making the change,
/// which a dump running on another CPU may already have seen. (It was added when the churn
/// test with a 4 KiB buffer lost `blackhole 2001:db8:10e:2::/64 table 100` once more, taken
/// then for a restarted dump's skip; that route was one the dump hides, which the wait does
/// not mend. The window it covers is real all the same.) A sync of a quiet kernel takes this
/// much longer.
const UNSURE_WAIT_MS: libc::c_int = 2;

impl Mirror {
    /// Opens a socket in network namespace `netns` (the caller's for `None`), listens to the
    /// kernel's notifications, then syncs (listening first, so no change falls between).
    pub fn open(netns: Option<&str>) -> Result<(Mirror, SyncReport), MirrorError> {
        Mirror::open_with(netns, None)
    }

    /// As [`Mirror::open`], with a receive buffer of `rcvbuf` bytes for notifications
    /// ([`DEFAULT_RCVBUF`] if `None`; small ones overrun under churn: a test of resyncs).
    pub fn open_with(
        netns: Option<&str>,
        rcvbuf: Option<usize>,
    ) -> Result<(Mirror, SyncReport), MirrorError> {
        let mut m = Mirror {
            events: Events::open(netns, rcvbuf.unwrap_or(DEFAULT_RCVBUF))?,
            conn: Conn::open(netns)?,
            live: Arc::new(ArcSwap::from_pointee(Router::new())),
            spare: None,
            behind: Vec::new(),
            pending: Vec::new(),
            pending_since: None,
            objects: Objects::default(),
            synced: false,
            unsure: false,
            hidden: HashSet::new(),
            proc_routes: hidden::ProcRoutes::open(netns),
            total: FollowReport::default(),
        };
        let report = m.sync()?;
        Ok((m, report))
    }

    /// Follows the kernel for up to `wait`: reads its notifications and applies each batch
    /// read as one change set, until the kernel has been quiet for `settle` (after at least
    /// one notification), or `wait` is over. An overrun or a notification that does not
    /// apply makes it resync.
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
            let mut pause = if heard { settle.min(left) } else { left };
            if !self.pending.is_empty() {
                // A copy is still being read: look again soon.
                pause = pause.min(std::time::Duration::from_millis(1));
            }
            match self.events.hear(pause)? {
                Heard::Messages(messages) => {
                    heard = true;
                    report.events += messages.len();
                    let mut failure = None;
                    self.pending_since
                        .get_or_insert_with(std::time::Instant::now);
                    for n in &messages {
                        if !self.hidden.is_empty() && hidden::may_reveal(n, &self.hidden) {
                            self.unsure = true;
                        }
                        match events::decode(n, &mut self.objects) {
                            Ok(Some(e)) => self.pending.push(e),
                            Ok(None) => {}
                            Err(e) => failure = Some(format!("message {}: {e}", n.kind)),
                        }
                    }
                    match failure.map_or_else(|| self.publish(), Err) {
                        Err(e) => {
                            report.failed += 1;
                            report.last_failure = Some(e);
                            self.resync_into(&mut report)?;
                        }
                        Ok(published) => report.count(published),
                    }
                }
                Heard::Overrun => {
                    heard = true;
                    report.overruns += 1;
                    self.resync_into(&mut report)?;
                }
                Heard::Quiet => {
                    match self.publish() {
                        Err(e) => {
                            report.failed += 1;
                            report.last_failure = Some(e);
                            self.resync_into(&mut report)?;
                        }
                        Ok(published) => report.count(published),
                    }
                    if self.unsure && self.pending.is_empty() {
                        // The kernel is quiet now: a dump has nothing to miss.
                        report.rechecks += 1;
                        self.resync_into(&mut report)?;
                    }
                    if self.pending.is_empty() && (heard || left.is_zero()) {
                        break;
                    }
                }
            }
            if deadline <= std::time::Instant::now() && self.pending.is_empty() {
                break;
            }
        }
        self.total.add(&report);
        Ok(report)
    }

    /// Publishes the pending events if the spare copy is free: applies what it is behind and
    /// the pending events to it, as one change set, and swaps it in; says what it published,
    /// if anything. An error says which event did not apply.
    fn publish(&mut self) -> Result<Option<Published>, String> {
        if self.pending.is_empty() {
            self.pending_since = None;
            self.catch_up();
            return Ok(None);
        }
        let mut spare = match self.spare.take() {
            Some(s) => s,
            // After a change set that did not apply: a fresh copy of the published one.
            None => {
                self.behind.clear();
                Arc::new(Router::clone(&self.live.load()))
            }
        };
        let Some(router) = Arc::get_mut(&mut spare) else {
            // A reader still has it: the events wait.
            self.spare = Some(spare);
            return Ok(None);
        };
        let fresh = std::mem::take(&mut self.pending);
        let mut batch = std::mem::take(&mut self.behind);
        batch.extend(fresh.iter().cloned());
        if let Err(e) = events::apply_all(router, &batch) {
            self.spare = None;
            return Err(e);
        }
        // The copy readers had becomes the spare, behind by just the fresh events.
        self.spare = Some(self.live.swap(spare));
        let published = Published {
            events: fresh.len(),
            lag: self
                .pending_since
                .take()
                .map_or_else(Default::default, |t| t.elapsed()),
        };
        self.behind = fresh;
        self.catch_up();
        Ok(Some(published))
    }

    /// Brings the spare copy up to date if no reader holds it any more, so that the next
    /// change set applies only its own events (a change after a quiet spell is published in
    /// half the time). A copy still read is brought up to date by the next publish. Events
    /// that applied to one copy apply to the other; if they did not, the copy is dropped and
    /// the next publish makes a fresh one from the published router.
    fn catch_up(&mut self) {
        if self.behind.is_empty() {
            return;
        }
        let Some(router) = self.spare.as_mut().and_then(Arc::get_mut) else {
            return;
        };
        let behind = std::mem::take(&mut self.behind);
        if events::apply_all(router, &behind).is_err() {
            self.spare = None;
        }
    }

    /// Resyncs after an overrun or a failed notification.
    fn resync_into(&mut self, report: &mut FollowReport) -> Result<(), MirrorError> {
        report.drift += self.sync()?.drift;
        report.resyncs += 1;
        Ok(())
    }

    /// Dumps everything again and puts it in place (a periodic resync, for those who trust
    /// notifications less than the kernel's word on loss), counted in [`Mirror::totals`]
    /// with the drift it mended.
    pub fn resync(&mut self) -> Result<SyncReport, MirrorError> {
        let report = self.sync()?;
        self.total.resyncs += 1;
        self.total.drift += report.drift;
        Ok(report)
    }

    /// Everything followed since the mirror opened.
    pub fn totals(&self) -> &FollowReport {
        &self.total
    }

    /// The mirrored router, as last published.
    pub fn router(&self) -> Arc<Router> {
        self.live.load_full()
    }

    /// A reader of the mirrored router for other threads.
    pub fn reader(&self) -> MirrorReader {
        MirrorReader {
            live: Arc::clone(&self.live),
        }
    }

    /// Dumps the kernel's whole state into a fresh router and puts it in place. The dumps are
    /// one per kind: a change between them (or during one) can leave parts that do not fit
    /// together, so a sync that finds that tries again, up to eight times, pausing a little
    /// longer each time (5 ms, doubling, at most 200 ms): a kernel changed fast enough to
    /// spoil one dump (thousands of changes a second) spoiled three in a row now and then.
    ///
    /// A dump can also miss a route without anything not fitting, two ways, both IPv6:
    /// - The dump goes on after each part it sends by starting over and skipping as many routes
    ///   as it sent (`fib6_dump_table`, when the table changed in between), so a route removed
    ///   behind it makes it skip one it never sent. That route's notification came before the
    ///   dump (it was thrown away), and no later one names it. So a sync whose dumps ran while
    ///   notifications came in, or after which one came within 2 ms, is not trusted: the
    ///   mirror syncs again at the next moment the kernel is quiet ([`FollowReport::rechecks`]).
    /// - The dump never lists a route that sits between the legs of an ECMP route in the
    ///   kernel's list (`fib6_dump_node` goes on after the last leg). The kernel lists it once
    ///   the legs go, and tells nothing. A sync counts such routes in `/proc/net/ipv6_route`
    ///   ([`SyncReport::hidden`]) and syncs again at the next quiet moment after a change that
    ///   may bring one into view: a route deleted or replaced at its destination. Past 8,192
    ///   IPv6 routes it does not count them (the kernel takes time quadratic in its routes to
    ///   write that file: 30 s for a full table), and any destination with legs may hide one:
    ///   a route deleted or replaced at any of those brings a resync at the next quiet moment,
    ///   a full one (1.1 s for full tables of both families here). The seeded churn test
    ///   with a small buffer lost `blackhole 2001:db8:10e:2::/64 table 100` so, now and then,
    ///   when the last resync before the legs went came after the blackhole was hidden (the
    ///   kernel held 50 such routes at that point).
    pub fn sync(&mut self) -> Result<SyncReport, MirrorError> {
        const TRIES: u32 = 8;
        let mut tries = 0;
        loop {
            tries += 1;
            match self.sync_once() {
                Err(MirrorError::Inconsistent(_)) if tries < TRIES => {}
                Err(MirrorError::Io(e))
                    if e.kind() == std::io::ErrorKind::Interrupted && tries < TRIES => {}
                other => return other,
            }
            let pause = (5u64 << (tries - 1)).min(200);
            std::thread::sleep(std::time::Duration::from_millis(pause));
        }
    }

    fn sync_once(&mut self) -> Result<SyncReport, MirrorError> {
        // What is queued happened before the dump starts: the dump holds it.
        self.events.drain()?;
        self.spare = None;
        let mut report = SyncReport::default();
        let mut left_out = Vec::new();
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
                left_out.extend(events::object_id(p));
                report.skipped += 1;
                continue;
            };
            match family {
                AF_INET => v4.objects.push(o4),
                AF_INET6 => match decode::nexthop::<Ipv6Addr>(p).map_err(decode_err("nexthop"))? {
                    Some((_, o6)) => v6.objects.push(o6),
                    None => {
                        left_out.push(o4.id);
                        report.skipped += 1
                    }
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
                left_out.push(g.id);
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
        // For counting hidden IPv6 routes: the destinations with ECMP legs (only they can hide
        // one), and the routes the model does not read.
        let (mut legs6, mut unread6) = (HashSet::new(), Vec::new());
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
                        decode::route::<Ipv6Addr>(&p, g).map(|r| {
                            r.map(|r| {
                                if r.len() > 1 {
                                    legs6.insert((r[0].dst, r[0].src));
                                }
                                v6.routes.extend(r)
                            })
                            .is_some()
                        })
                    }
                }
                .map_err(decode_err("route"))?;
                report.skipped += usize::from(!read);
                if !read && family == Family::Inet6 {
                    if let Some((key, n)) = decode::route6_key(&p) {
                        if n > 1 {
                            legs6.insert(key);
                        }
                        unread6.push((key, n));
                    }
                }
            }
        }
        // Where the dump hid routes. Counted after the dumps: a change in between makes the
        // sync unsure (below), and the next one counts again.
        let (hidden, counted) = hidden::find(&mut self.proc_routes, legs6, &v6.routes, &unread6);
        report.hidden = counted;
        // Routes through an object the model does not hold (or of the other family) go too.
        let before = v4.routes.len() + v6.routes.len();
        let (o4, o6) = (&v4.objects, &v6.objects);
        v4.routes
            .retain(|r| r.nhid.is_none_or(|n| o4.iter().any(|o| o.id == n.id)));
        v6.routes
            .retain(|r| r.nhid.is_none_or(|n| o6.iter().any(|o| o.id == n.id)));
        report.skipped += before - v4.routes.len() - v6.routes.len();
        // Anything queued now came after the drain above: the kernel changed during the dumps.
        // Or queued a moment later: a dump on another CPU can see a change (and skip a route
        // for it) before the change's notification is queued, so the look waits a little
        // ([`UNSURE_WAIT_MS`]).
        let unsure = self.events.any_queued(UNSURE_WAIT_MS)?;
        report.routes = [v4.routes.len(), v6.routes.len()];
        let image = RouterImage::mirrored(links, v4, v6);
        let mut router = Router::from_image(image).map_err(MirrorError::Inconsistent)?;
        router.set_ipv6_multicast_routing(kernel_has_ipv6_multicast_routing());
        if self.synced {
            let old = self.live.load();
            router.mirror_inherit_rules_customised(&old);
            let (o, n) = (&**old, &router);
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
        self.objects = Objects::of(&router, &left_out);
        // Published first; the spare copy is made now rather than at the first notification,
        // which would otherwise wait for it (the old spare went at the start: no more than
        // three routers are alive at once).
        let router = Arc::new(router);
        self.live.store(Arc::clone(&router));
        self.spare = Some(Arc::new(Router::clone(&router)));
        self.behind.clear();
        self.pending.clear();
        self.pending_since = None;
        self.synced = true;
        self.unsure = unsure;
        self.hidden = hidden;
        Ok(report)
    }
}

/// Whether the running kernel was built with IPv6 multicast routing (`CONFIG_IPV6_MROUTE`):
/// it then has `/proc/net/ip6_mr_cache` (in every namespace: it is the build's, so the
/// caller's namespace tells the followed one's). A mirror models the kernel it follows
/// ([`Router::set_ipv6_multicast_routing`]): one answer differs, a `route get` with `iif` of a
/// packet to an IPv6 group. Where `/proc/net` shows no IPv6 at all (not mounted, or IPv6 off),
/// nothing is known and the answer is the default model's, built with it.
pub fn kernel_has_ipv6_multicast_routing() -> bool {
    let net = std::path::Path::new("/proc/net");
    !net.join("ipv6_route").exists() || net.join("ip6_mr_cache").exists()
}

fn parts<A: RouterFamily>() -> FamilyParts<A> {
    FamilyParts {
        routes: Vec::new(),
        rules: Vec::new(),
        addrs: Vec::new(),
        objects: Vec::new(),
    }
}
