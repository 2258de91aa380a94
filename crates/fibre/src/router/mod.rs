//! The router: links and addresses, the tables of both families, policy rules, and the lookup
//! that puts them together as `ip route get` does.
//!
//! Changes go through [`Router::begin`] / [`Router::commit`] / [`Router::rollback`] (or
//! [`Router::apply`], which wraps them): a change set either lands whole or leaves everything as
//! it was. Route lists record their old contents before each edit; next-hop releases wait for the
//! commit; the small parts (links, addresses, rules) are shared with the set's snapshot at
//! `begin`, and copied by the first change to one. A route change outside a set is a set of its
//! own that (in release builds) shares none of them and takes in its own family only (see
//! `set_snapshot`).
use crate::addr::{Address, Family};
use crate::error::{ChangeError, Errno};
use crate::flow::Flow;
use crate::link::{loopback_v4, loopback_v6, IfAddr, LinkKind, Links};
use crate::nexthop::{NextHop, NhObject};
use crate::prefix::Prefix;
use crate::rib::ipv6::siblings;
use crate::rib::{InsertMode, KernelSemantics, LinkState, Rib, RouteSelector, TableLookup};
use crate::route::*;
use crate::rules::{Rule, RuleAction};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

mod answer;
use answer::SourceRule;
mod change;
mod dump;
pub mod fibs;
#[cfg(feature = "snapshot")]
mod image;
#[cfg(feature = "netlink")]
pub(crate) use image::FamilyParts;
#[cfg(feature = "snapshot")]
pub(crate) use image::RouterImage;
#[cfg(test)]
mod commit_tests;
mod ipv4;
mod ipv6;
pub(crate) use ipv6::DEVICE_ONLY_LEG;
mod journal;
#[cfg(feature = "netlink")]
mod mirrored;
#[cfg(feature = "netlink")]
pub(crate) use mirrored::mirror_mode;
mod nhobjects;
mod plain;
use plain::Prepared;
mod query;
mod route_classes;
mod set_snapshot;
mod state;

pub use change::{Change, FamilyChange};
use gateways::GatewayMemo;
pub use query::{AnswerHops, CacheFlags, Matched, RouteAnswer, RouteQuery};
use set_snapshot::Snapshot;
pub use state::FamilyState;
use state::FlowNames;

use family::Kernel;

/// The address families the router keeps, IPv4 and IPv6: what generic code over the router
/// names (`router.route_get::<A>(..)`, `router.family::<A>()`). The trait is sealed; what
/// differs between the kernel's IPv4 and IPv6 is behind it, in `router::ipv4` and
/// `router::ipv6`.
pub trait RouterFamily: family::Kernel {}
impl RouterFamily for Ipv4Addr {}
impl RouterFamily for Ipv6Addr {}

mod gateways;
mod family {
    use super::*;

    /// The router's family-specific parts (sealed: the module is private, so neither the
    /// trait nor its mutable access to a [`Router`] can be reached from outside).
    pub trait Kernel: KernelSemantics + crate::fib::FibFamily {
        /// The protocol number of the family's ICMP, which route queries accept.
        const ICMP: u8;
        /// What adding a blackhole object says while `lo` is down.
        const BLACKHOLE_LO_DOWN: &'static str;
        /// What a route through an object of the other family is told (`None`: not modelled).
        const FOREIGN_OBJECT: Option<&'static str>;
        /// Checks a next-hop object's gateway (its device is known to be up with carrier);
        /// returns the next hop's scope.
        fn check_object_hop(r: &Router, hop: &mut NextHop<Self>) -> Result<Scope, ChangeError>;
        /// Whether a route of `scope` may go through `obj`, whose deciding next hop (its own,
        /// or a group's first member's) is `first`.
        fn check_route_through(
            scope: Scope,
            obj: &NhObject<Self>,
            first: Option<&NextHop<Self>>,
        ) -> Result<(), ChangeError>;
        fn state(r: &Router) -> &FamilyState<Self>;
        fn state_mut(r: &mut Router) -> &mut FamilyState<Self>;
        /// A change of this family as a router change.
        fn wrap(c: FamilyChange<Self>) -> Change;
        /// The routes the kernel derives from addresses and link state, in order (a route two
        /// addresses derive may come twice), but for [`Kernel::owned_routes`].
        fn derive(links: &Links, addrs: &[IfAddr<Self>]) -> Vec<RouteSpec<Self>>;
        /// The derived routes an address does not take back with it (IPv6's prefix routes),
        /// each with its address, in order.
        fn owned_routes(links: &Links, addrs: &[IfAddr<Self>]) -> Vec<(Self, RouteSpec<Self>)> {
            let _ = (links, addrs);
            Vec::new()
        }
        /// Policy lookup with the kernel's fast path when rules were never touched.
        fn policy_lookup(
            st: &FamilyState<Self>,
            flow: &Flow<Self>,
            iif: Option<&str>,
            oif: Option<&str>,
            links: &dyn LinkState,
        ) -> Result<Matched<Self>, Errno>;
        /// Refuses an address the kernel does not put on a device of this kind.
        fn check_address(a: &IfAddr<Self>, kind: Option<&LinkKind>) -> Result<(), ChangeError>;
        /// The whole `ip route get` for this family (`ipproto` already checked).
        fn route_get(r: &Router, q: &RouteQuery<Self>) -> Result<RouteAnswer<Self>, Errno>;
        /// `route get`'s fast path (`router::plain`): the prepared answer of a plain query
        /// (no device, no source, default rules, and what else the family asks) whose
        /// destination the FIB answers with a route class; `None`: the full path answers.
        fn prepared_answer<'r>(r: &'r Router, q: &RouteQuery<Self>) -> Option<&'r Prepared<Self>>;
        /// What `route get` answers a plain query (see `router::plain`) to `dst` that matched
        /// `m`, by the full path's code (IPv4: with step 5 and the flags of the route's type):
        /// prepared once per route class.
        fn plain_answer(st: &FamilyState<Self>, m: &Matched<Self>, dst: Self) -> RouteAnswer<Self>;
        /// How the source of [`Kernel::plain_answer`] follows from its route and next hop.
        fn plain_source<H>(
            st: &FamilyState<Self>,
            route: &Route<Self, H>,
            hop: Option<&NextHop<Self>>,
        ) -> SourceRule<Self>;
        /// How the source of a route of `scope` through a next hop on `dev` (to `gateway`)
        /// follows from the host's addresses, when the route has none of its own.
        fn hop_source(
            st: &FamilyState<Self>,
            dev: Option<IfIndex>,
            gateway: Option<Self>,
            scope: Scope,
        ) -> SourceRule<Self>;
        /// Whether a packet from `source` may leave by `dev` (IPv4: a loopback source by lo
        /// only); the full path checks the same in its own steps.
        fn check_source(source: Option<Self>, dev: Option<IfIndex>) -> Result<(), Errno>;
        /// The source chosen on `dev` toward `dst` ([`SourceRule::Toward`]).
        fn source_toward(st: &FamilyState<Self>, dev: Option<IfIndex>, dst: Self) -> Option<Self>;
        /// Checks and completes a route before insert (gateway reachability, device state).
        fn prepare(
            r: &Router,
            gateways: &mut GatewayMemo<Self>,
            spec: &mut RouteSpec<Self>,
        ) -> Result<(), ChangeError>;
        /// The next hops a match reports: IPv4 the route's group; IPv6 the ECMP siblings, the
        /// matched one first (the kernel's circular sibling list).
        fn matched_hops(st: &FamilyState<Self>, m: &Matched<Self>) -> AnswerHops<Self>;
        /// `route del`.
        fn route_del(
            st: &mut FamilyState<Self>,
            table: TableId,
            sel: &RouteSelector<Self>,
        ) -> Result<(), ChangeError>;
        /// The table a rule with `lookup 0` gets.
        fn unspecified_table(st: &FamilyState<Self>) -> Result<TableId, ChangeError>;
        /// What the routes do once addresses are gone (`before`: the addresses before the
        /// change).
        fn addresses_gone(r: &mut Router, before: &[IfAddr<Self>]);
        /// What `addr del` of `gone` does to routes beyond the derived ones (IPv6: takes back
        /// a prefix route, `ipv6_del_addr`), after they are brought in line.
        fn address_deleted(st: &mut FamilyState<Self>, gone: &IfAddr<Self>);
        /// `addr replace` of the address at `at` with `new` (the same address): what a
        /// replacement changes (`inet_rtm_newaddr`, `inet6_addr_modify`); returns the address
        /// as it was.
        fn replace_address(
            st: &mut FamilyState<Self>,
            at: usize,
            new: &IfAddr<Self>,
        ) -> IfAddr<Self>;
        /// What the replacement of `before` by the address at `at` does to routes beyond the
        /// derived ones (IPv6: moves or takes back a prefix route, `inet6_addr_modify`), before
        /// they are brought in line.
        fn address_replaced(
            st: &mut FamilyState<Self>,
            before: &IfAddr<Self>,
            at: usize,
            links: &Links,
        );
        /// Whether new derived routes go in before those that no longer follow are deleted
        /// (see `FamilyState::sync_derived`).
        const DERIVED_ADDS_FIRST: bool;
        /// The metric derived route `spec`, no longer following from addresses and links, is
        /// deleted at (`None`: any).
        fn derived_delete_metric(
            st: &FamilyState<Self>,
            spec: &RouteSpec<Self>,
            links: &Links,
        ) -> Option<u32>;
    }
}

/// A leg is dead once its device is `dev` (going down or away) or another device that is down.
fn dead<A: Address>(h: &NextHop<A>, dev: IfIndex, links: &Links) -> bool {
    h.dev == Some(dev) || !h.dev.is_some_and(|d| links.is_up(d))
}

/// Links plus "is it up", for lookups.
impl LinkState for Links {
    fn is_up(&self, dev: IfIndex) -> bool {
        Links::is_up(self, dev)
    }
}

/// A network namespace's routing state.
///
/// Sealed: [`Router::links`] and [`Router::family`] are read-only views, and every change
/// goes through a change set ([`Router::apply`], [`Router::change`], or
/// [`Router::begin`]…[`Router::commit`]), so the FIBs and next-hop groups always follow.
#[derive(Clone, Debug, Default)]
pub struct Router {
    /// Shared with an open change set's snapshot until the first link change copies it (in
    /// release builds a lone route change's set does not share it: see `router::set_snapshot`).
    links: Arc<Links>,
    v4: FamilyState<Ipv4Addr>,
    v6: FamilyState<Ipv6Addr>,
    /// The last next-hop object id handed out to a request without one (`nh_find_unused_id`
    /// counts on from here, not from the lowest free id).
    last_nhid: u32,
    /// A mirror of a kernel: the routes the kernel derives from addresses and links come from
    /// the kernel with the rest, so fibre derives none itself (neither twice nor missing).
    mirrored: bool,
    /// The kernel modelled was built without IPv6 multicast routing (see
    /// [`Router::set_ipv6_multicast_routing`]). A setting of the model, as the FIB path's
    /// switch is, not state: snapshots do not carry it.
    without_ipv6_mroute: bool,
    /// Inline, not boxed: a lone change takes one and drops it, and should not allocate.
    snapshot: Option<Snapshot>,
    /// Which state this is (see [`Router::version`]).
    version: Version,
}

/// A number for a router's state that no other state of any router in this process has had:
/// taken when a router is made and at every commit; a clone, holding the same state, keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Version(u64);

impl Version {
    fn next() -> Version {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Version(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl Default for Version {
    fn default() -> Version {
        Version::next()
    }
}

impl Router {
    /// A router with only `lo` (down), the default rules and empty local and main tables, as
    /// a new network namespace.
    pub fn new() -> Self {
        Self::default()
    }

    /// The router's state as a number: equal for two routers (or one router at two moments)
    /// only if they hold the same state, copies of one another. What is derived from a
    /// router and kept (such as a MIB's row counts) is still good while the version is.
    pub fn version(&self) -> u64 {
        self.version.0
    }

    /// Turns the FIB path off (every lookup walks the RIB) or back on: the reference that the
    /// FIB path is tested against.
    pub fn set_fibs_enabled(&mut self, on: bool) {
        self.v4.fibs.disabled = !on;
        self.v6.fibs.disabled = !on;
    }

    /// Whether the kernel modelled was built with IPv6 multicast routing
    /// (`CONFIG_IPV6_MROUTE`, as distributions ship it: the default). It decides one answer: a
    /// `route get` with `iif` of a packet to an IPv6 group is EMSGSIZE with it (`rt6_fill_node`
    /// asks multicast routing for the reply and finds no multicast route) and the route
    /// matched without it. `io::netlink::kernel_has_ipv6_multicast_routing` tells the running
    /// kernel's, and a netlink `Mirror` models the kernel it follows with it.
    pub fn set_ipv6_multicast_routing(&mut self, built_in: bool) {
        self.without_ipv6_mroute = !built_in;
    }

    /// Opens a change set.
    pub fn begin(&mut self) {
        self.open(None);
    }

    /// Opens a change set. `route_of`: `None` for any set; the family of a set of one route
    /// change, which edits only that family's route lists (see `router::set_snapshot`).
    fn open(&mut self, route_of: Option<Family>) {
        assert!(self.snapshot.is_none(), "change sets do not nest");
        self.snapshot = Some(Snapshot::take(self, route_of));
    }
    /// Keeps every change since [`Router::begin`]; the FIBs follow (one publication each).
    pub fn commit(&mut self) {
        if let Some(s) = self.snapshot.take() {
            s.check_links(&self.links);
            self.version = Version::next();
            if let Some(snap) = s.v4 {
                self.v4.commit(snap, &self.links);
            }
            if let Some(snap) = s.v6 {
                self.v6.commit(snap, &self.links);
            }
        }
    }
    /// Undoes every change since [`Router::begin`].
    pub fn rollback(&mut self) {
        if let Some(s) = self.snapshot.take() {
            if let Some(links) = s.links_to_restore(&self.links) {
                self.links = links;
            }
            self.last_nhid = s.last_nhid;
            // A destination put back may sit at another index of its RIB than the FIB's id
            // names: its id is derived again (an unchanged answer publishes nothing).
            if let Some(snap) = s.v4 {
                let touched = snap.restore(&mut self.v4);
                self.v4.follow_touched(touched, &*self.links);
            }
            if let Some(snap) = s.v6 {
                let touched = snap.restore(&mut self.v6);
                self.v6.follow_touched(touched, &*self.links);
            }
            self.forget_gateways();
        }
    }

    /// Applies changes all or nothing; on error, names the index of the failing change.
    pub fn apply(&mut self, changes: &[Change]) -> Result<(), (usize, ChangeError)> {
        self.begin();
        for (i, c) in changes.iter().enumerate() {
            if let Err(e) = self.change(c) {
                self.rollback();
                return Err((i, e));
            }
        }
        self.commit();
        Ok(())
    }

    /// Applies one change. Outside a change set it is atomic by itself; inside one, a failure
    /// may leave earlier parts of *this* change applied until the set is rolled back.
    pub fn change(&mut self, c: &Change) -> Result<(), ChangeError> {
        if self.snapshot.is_none() {
            self.open(c.route_family());
            let r = self.change(c);
            match &r {
                Err(e) if !e.partial => self.rollback(),
                _ => self.commit(),
            }
            return r;
        }
        if c.route_family().is_none() {
            // Links, addresses, rules and next-hop objects decide gateway checks too.
            self.forget_gateways();
        }
        match c {
            Change::Inet(c) => return self.family_change(c),
            Change::Inet6(c) => return self.family_change(c),
            Change::LinkAddVeth { .. } | Change::LinkSet { .. } | Change::LinkDel { .. } => {}
        }
        // Next hops die or come back: the FIBs are rebuilt at commit.
        self.v4.fibs.links_changed = true;
        self.v6.fibs.links_changed = true;
        let (v4_before, v6_before) = (self.v4.addrs.clone(), self.v6.addrs.clone());
        match c {
            Change::LinkAddVeth { name, peer } => {
                if name == peer
                    || self.links.by_name(name).is_some()
                    || self.links.by_name(peer).is_some()
                {
                    return Err(Errno::EEXIST.into());
                }
                Arc::make_mut(&mut self.links).add_veth(name, peer);
            }
            Change::LinkSet { dev, up } => self.set_link(*dev, *up)?,
            Change::LinkDel { dev } => {
                let l = self.links.by_index(*dev).ok_or(Errno::ENODEV)?;
                if l.kind == LinkKind::Loopback {
                    return Err(Errno::EOPNOTSUPP.into());
                }
                // `unregister_netdevice_many` closes the devices that are up first and
                // unregisters them after: IPv6 siblings left without a live leg go whole at
                // the down, where the removal alone takes only the legs on the device.
                let closing: Vec<IfIndex> = std::iter::once(*dev)
                    .chain(self.links.peer(*dev))
                    .filter(|&d| self.links.is_up(d))
                    .collect();
                self.close_links(&closing);
                for d in Arc::make_mut(&mut self.links).remove(*dev) {
                    self.flush_objects_on(d);
                    // The addresses go before the device's routes (`inetdev_event` runs before
                    // `fib_netdev_event`): each takes its own routes and asks, with the
                    // device's other routes (a host-scope local one) still there, whether it is
                    // still local (`fib_del_ifaddr`).
                    let (v4_before, v6_before) = (self.v4.addrs.clone(), self.v6.addrs.clone());
                    Arc::make_mut(&mut self.v4.addrs).retain(|a| a.dev != d);
                    Arc::make_mut(&mut self.v6.addrs).retain(|a| a.dev != d);
                    self.sync_derived();
                    Ipv4Addr::addresses_gone(self, &v4_before);
                    Ipv6Addr::addresses_gone(self, &v6_before);
                    self.flush_dev(d, true);
                }
                self.sync_derived();
                // Every address gone was seen to above.
                return Ok(());
            }
            Change::Inet(_) | Change::Inet6(_) => unreachable!("handled above"),
        }
        Ipv4Addr::addresses_gone(self, &v4_before);
        Ipv6Addr::addresses_gone(self, &v6_before);
        Ok(())
    }

    /// One family's part of [`Router::change`].
    fn family_change<A: RouterFamily>(&mut self, c: &FamilyChange<A>) -> Result<(), ChangeError> {
        match c {
            FamilyChange::AddrAdd(a) => self.addr_add(a.clone(), false)?,
            FamilyChange::AddrReplace(a) => self.addr_add(a.clone(), true)?,
            FamilyChange::AddrDel(a) => {
                let before = A::state(self).addrs.clone();
                let gone = addr_del(A::state_mut(self), a)?;
                self.sync_derived();
                if !self.mirrored {
                    A::address_deleted(A::state_mut(self), &gone);
                }
                A::addresses_gone(self, &before);
                if A::FAMILY == Family::Inet {
                    self.last_v4_address_gone(a.dev);
                }
            }
            FamilyChange::Route(spec, mode) => self.route_change(spec, *mode)?,
            FamilyChange::RouteDel(t, sel) => {
                self.check_nhid_selector::<A>(sel)?;
                A::route_del(A::state_mut(self), *t, sel)?
            }
            FamilyChange::RuleAdd(r) if r.action == RuleAction::Lookup(0) => {
                // The kernel makes the empty table in `configure`, after `fib_nl2rule`.
                r.check_fields(r.priority)?;
                let st = A::state_mut(self);
                let id = A::unspecified_table(st)?;
                Arc::make_mut(&mut st.rules).add_configured(Rule {
                    action: RuleAction::Lookup(id),
                    ..r.clone()
                })?;
                st.table_mut(id);
            }
            FamilyChange::RuleAdd(r) => {
                Arc::make_mut(&mut A::state_mut(self).rules).add(r.clone())?
            }
            FamilyChange::RuleDel(s) => {
                drop(Arc::make_mut(&mut A::state_mut(self).rules).delete(s)?)
            }
            FamilyChange::NexthopAdd(o, replace) => self.nexthop_add(o.clone(), *replace)?,
            FamilyChange::NexthopDel(id) => self.nexthop_del::<A>(*id)?,
        }
        Ok(())
    }

    fn sync_derived(&mut self) {
        if self.mirrored {
            return;
        }
        self.v4.sync_derived(&self.links);
        self.v6.sync_derived(&self.links);
    }

    /// Routes through a device that went away or down (`fib_sync_down_dev`, `fib6_ifdown`).
    ///
    /// - IPv4: a removed device takes every route with a leg on it, multipath routes whole. A
    ///   device going down kills its legs; a route goes once all its legs are dead (on this
    ///   device or on others already down), except host-scope routes (local addresses), which
    ///   only a removal takes. Dead legs of kept routes come back with their device.
    /// - IPv6 (one route per leg): a removed device takes the legs on it. A device going down
    ///   takes single-path routes on it; ECMP siblings stay with the leg dead while one sibling
    ///   is on a live device, and go together once none is. (A device removed while up is
    ///   taken down first: see `Change::LinkDel` in [`Router::change`].) The kernel's walk
    ///   (`fib6_clean_node`) jumps from the first sibling it keeps to the last, so a route
    ///   that sits between siblings stays, even on the device going down (its dump,
    ///   `fib6_dump_node`, jumps the same way: the route is not listed). Reject routes sit on
    ///   `lo` and go with it.
    /// - Both: routes through next-hop objects follow their object (see
    ///   [`Router::close_links`]), whatever their next hops' devices.
    fn flush_dev(&mut self, dev: IfIndex, removed: bool) {
        self.flush_dev_v4(dev, removed);
        let links = &self.links;
        if removed {
            self.v6.remove_where(|r, hops| {
                r.nhid.is_none() && hops.iter().any(|h| h.dev == Some(dev))
            });
            return;
        }
        // Siblings whose every leg is dead, found per list before anything is removed.
        let st = &self.v6;
        let mut doomed = std::collections::HashSet::new();
        for rib in st.tables.values() {
            for (_, dst, entry) in rib.entries() {
                for list in rib.lists_of(dst, entry) {
                    let list = &list[..];
                    // Routes through next-hop objects follow their object, not the device
                    // (`fib6_ifdown` skips them); reject routes sit on `lo`.
                    let on_dev = |r: &Route<Ipv6Addr>| {
                        let hops = st.nhs.get(r.hops);
                        r.nhid.is_none()
                            && (hops.iter().any(|h| h.dev == Some(dev))
                                || hops.is_empty() && dev == LOOPBACK_IFINDEX)
                    };
                    let mut i = 0;
                    while i < list.len() {
                        let sibs = siblings(list, i, &st.nhs);
                        let all_dead = || {
                            sibs.iter()
                                .all(|s| st.nhs.get(s.hops).iter().all(|h| dead(h, dev, links)))
                        };
                        if sibs.len() == 1 || sibs.iter().any(|s| on_dev(s)) && all_dead() {
                            doomed.extend(
                                sibs.iter()
                                    .filter(|s| sibs.len() > 1 || on_dev(s))
                                    .map(|s| (s.table, s.dst, s.src, s.metric, s.hops)),
                            );
                            i += 1;
                        } else {
                            // Kept (`fib6_ifdown` returns -2): on after the last sibling.
                            let last = sibs.last().expect("itself");
                            i = list
                                .iter()
                                .rposition(|o| std::ptr::eq(o, *last))
                                .expect("in it")
                                + 1;
                        }
                    }
                }
            }
        }
        self.v6
            .remove_where(|r, _| doomed.contains(&(r.table, r.dst, r.src, r.metric, r.hops)));
    }

    /// A device that lost its last IPv4 address has IPv4 disabled (`fib_inetaddr_event` calls
    /// `fib_disable_ip` with `force`): every IPv4 route whose legs are all on it or on devices
    /// that are down goes, host-scope ones too; no `RTM_DELROUTE` says so.
    fn last_v4_address_gone(&mut self, dev: IfIndex) {
        if self.v4.addrs.iter().any(|a| a.dev == dev) {
            return;
        }
        let links = &self.links;
        self.v4.remove_where(|_, hops| {
            hops.iter().any(|h| h.dev == Some(dev)) && hops.iter().all(|h| dead(h, dev, links))
        });
    }

    /// The IPv4 part of [`Router::flush_dev`].
    fn flush_dev_v4(&mut self, dev: IfIndex, removed: bool) {
        let links = &self.links;
        // Routes through next-hop objects follow their object (`fib_sync_down_dev` walks the
        // devices' own next hops only).
        self.v4.remove_where(|r, hops| {
            r.nhid.is_none()
                && hops.iter().any(|h| h.dev == Some(dev))
                && (removed || (hops.iter().all(|h| dead(h, dev, links)) && r.scope < SCOPE_HOST))
        });
    }

    /// Devices going down together (`dev_close_many`: all of them down, then each one's
    /// NETDEV_DOWN): next-hop objects go with a link and with the carrier of its veth peer
    /// (the routes through an object change with it, before the routes on the device are
    /// looked at: a group keeps its route with a member fewer), IPv6 addresses with the link
    /// (keep_addr_on_down is off), then the routes through it ([`Router::flush_dev`]).
    fn close_links(&mut self, devs: &[IfIndex]) {
        for &d in devs {
            Arc::make_mut(&mut self.links).set_up(d, false);
        }
        for &d in devs {
            for x in std::iter::once(d).chain(self.links.peer(d)) {
                self.flush_objects_on(x);
            }
            Arc::make_mut(&mut self.v6.addrs).retain(|a| a.dev != d);
            self.flush_dev(d, false);
        }
    }

    fn set_link(&mut self, dev: IfIndex, up: bool) -> Result<(), ChangeError> {
        let link = self.links.by_index(dev).ok_or(Errno::ENODEV)?;
        if link.up == up {
            return Ok(());
        }
        let loopback = link.kind == LinkKind::Loopback;
        if !up {
            self.close_links(&[dev]);
            self.sync_derived();
            return Ok(());
        }
        Arc::make_mut(&mut self.links).set_up(dev, up);
        if loopback {
            // The kernel gives lo its addresses when it first comes up.
            if !self.v4.addrs.iter().any(|a| a.dev == dev) {
                Arc::make_mut(&mut self.v4.addrs).push(loopback_v4());
            }
            if !self.v6.addrs.iter().any(|a| a.dev == dev) {
                Arc::make_mut(&mut self.v6.addrs).push(loopback_v6());
            }
        }
        self.sync_derived();
        // addrconf configures a device once it is ready (up with carrier): this one, then its
        // veth peer if this brought the peer's carrier.
        for d in std::iter::once(dev).chain(self.links.peer(dev)) {
            if self.links.is_ready(d) && !self.links.by_index(d).is_some_and(|l| l.v6_configured) {
                Arc::make_mut(&mut self.links).set_v6_configured(d);
                self.sync_derived();
            }
        }
        Ok(())
    }

    /// `addr add`, or with `replace` `addr replace` and `addr change`.
    fn addr_add<A: RouterFamily>(
        &mut self,
        a: IfAddr<A>,
        replace: bool,
    ) -> Result<(), ChangeError> {
        let link = self.links.by_index(a.dev).ok_or(Errno::ENODEV)?;
        let newly_configured = A::FAMILY == Family::Inet6 && link.up && !link.v6_configured;
        if newly_configured {
            // addrconf_add_dev: an IPv6 address configures the device, before its checks.
            Arc::make_mut(&mut self.links).set_v6_configured(a.dev);
            self.sync_derived();
        }
        if let Err(e) = A::check_address(&a, self.links.by_index(a.dev).map(|l| &l.kind)) {
            // What addrconf set up stays, as in the kernel.
            return Err(ChangeError {
                partial: newly_configured,
                ..e
            });
        }
        let st = A::state_mut(self);
        if A::FAMILY == Family::Inet && a.addr == A::unspecified() {
            // `__inet_insert_ifa` drops an address 0.0.0.0 and reports success.
            return Ok(());
        }
        // IPv4 tells addresses apart by length too; IPv6 by the address alone.
        let there = st.addrs.iter().position(|o| {
            o.addr == a.addr && o.dev == a.dev && (A::FAMILY == Family::Inet6 || o.len == a.len)
        });
        if let (Some(at), true) = (there, replace) {
            let before = A::replace_address(st, at, &a);
            if !self.mirrored {
                let links = self.links.clone();
                A::address_replaced(A::state_mut(self), &before, at, &links);
            }
            self.sync_derived();
            return Ok(());
        }
        if there.is_some() {
            return Err(ChangeError::with(
                Errno::EEXIST,
                if A::FAMILY == Family::Inet {
                    "ipv4: Address already assigned"
                } else {
                    "ipv6: address already assigned"
                },
            ));
        }
        // `__inet_insert_ifa`: an address in a subnet the device already has (a secondary one)
        // takes the scope of the addresses there.
        if A::FAMILY == Family::Inet
            && st.addrs.iter().any(|o| {
                o.dev == a.dev && o.len == a.len && o.subnet() == a.subnet() && o.scope != a.scope
            })
        {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "ipv4: Invalid scope value",
            ));
        }
        if A::FAMILY == Family::Inet6 {
            let at = crate::link::ipv6_list_position(&st.addrs, &a);
            Arc::make_mut(&mut st.addrs).insert(at, a);
        } else {
            Arc::make_mut(&mut st.addrs).push(a);
        }
        self.sync_derived();
        Ok(())
    }

    fn route_change<A: RouterFamily>(
        &mut self,
        spec: &RouteSpec<A>,
        mode: InsertMode,
    ) -> Result<(), ChangeError> {
        let mirrored = self.mirrored;
        let st = A::state_mut(self);
        let mut gateways = std::mem::take(&mut st.gateways);
        if mirrored {
            // A mirror's router also changes through mirror events, which do not forget
            // gateway checks: it checks afresh.
            gateways.clear();
        }
        gateways.follow(&st.journal);
        // The checks fill in the spec's next hops: a copy, in the family's spare room.
        let mut hops = std::mem::take(&mut st.spare_hops);
        hops.clone_from(&spec.hops);
        let mut spec = spec.with_hops(hops);
        let prepared = A::prepare(self, &mut gateways, &mut spec);
        let st = A::state_mut(self);
        st.gateways = gateways;
        let r = prepared.and_then(|()| st.insert(&spec, mode));
        if r.is_ok() && A::FAMILY == Family::Inet && spec.kind == RouteType::Local {
            st.custom_local_routes = true;
        }
        st.spare_hops = spec.hops;
        st.spare_hops.clear();
        r
    }

    /// The last check of a route's next hop: its device is named (`missing` otherwise), exists
    /// and is up.
    fn check_hop_device<A: Address>(
        &self,
        hop: &NextHop<A>,
        missing: &'static str,
    ) -> Result<(), ChangeError> {
        let dev = hop
            .dev
            .ok_or_else(|| ChangeError::with(Errno::EINVAL, missing))?;
        let link = self.links.by_index(dev).ok_or(Errno::ENODEV)?;
        if !link.up {
            return Err(ChangeError::with(
                Errno::ENETDOWN,
                "Nexthop device is not up",
            ));
        }
        Ok(())
    }

    /// Forgets the remembered gateway checks of both families (see [`gateways`]): for every
    /// change that is not a route's, and a rollback.
    fn forget_gateways(&mut self) {
        self.v4.gateways.clear();
        self.v6.gateways.clear();
    }

    /// Is `addr` configured on any device (`inet_lookup_ifaddr_rcu`, addresses only; IPv6
    /// `ipv6_chk_addr` without a device)?
    pub fn is_local_address<A: RouterFamily>(&self, addr: A) -> bool {
        A::state(self).addrs.iter().any(|a| a.addr == addr)
    }

    /// `ip route get`: the kernel's answer to `q`, or its error.
    pub fn route_get<A: RouterFamily>(&self, q: &RouteQuery<A>) -> Result<RouteAnswer<A>, Errno> {
        if !Self::queries_protocol::<A>(q.ipproto) {
            return Err(Errno::EOPNOTSUPP);
        }
        A::route_get(self, q)
    }

    /// `rtm_getroute_parse_ip_proto`: route queries know TCP, UDP and the family's ICMP only
    /// (others are EOPNOTSUPP, "Unsupported ip proto").
    pub fn queries_protocol<A: RouterFamily>(ipproto: Option<u8>) -> bool {
        match ipproto {
            None | Some(6) | Some(17) => true,
            Some(p) => p == A::ICMP,
        }
    }

    /// The links (devices).
    pub fn links(&self) -> &Links {
        &self.links
    }

    /// One family's tables, rules, addresses, next-hop groups and FIBs, read-only.
    pub fn family<A: RouterFamily>(&self) -> &FamilyState<A> {
        A::state(self)
    }

    fn names(
        &self,
        flow_iif: Option<IfIndex>,
        flow_oif: Option<IfIndex>,
    ) -> (Option<&str>, Option<&str>) {
        (
            flow_iif.and_then(|i| self.links.name_of(i)),
            flow_oif.and_then(|i| self.links.name_of(i)),
        )
    }

    /// Every route of every table of a family, in table order.
    pub fn routes<A: RouterFamily>(&self) -> impl Iterator<Item = RouteSpec<A>> + '_ {
        self.routes_with(|t: &Rib<A>| t.iter())
    }

    /// The routes `pick` walks in each table of a family (a trie walk: `Rib::covered`,
    /// `Rib::covering`, ...), in table order, spelled out.
    pub fn routes_with<'s, A: RouterFamily, I>(
        &'s self,
        pick: impl Fn(&'s Rib<A>) -> I + 's,
    ) -> impl Iterator<Item = RouteSpec<A>> + 's
    where
        I: Iterator<Item = Route<A>> + 's,
    {
        let st = A::state(self);
        st.tables
            .values()
            .flat_map(move |t| pick(t).map(move |r| r.with_hops(st.nhs.get(r.hops).to_vec())))
    }
}

/// A route the kernel derives from an address (proto kernel), through `dev`.
fn kernel_route<A: Address>(
    table: TableId,
    dst: Prefix<A>,
    kind: RouteType,
    dev: IfIndex,
    metric: u32,
) -> RouteSpec<A> {
    RouteSpec {
        table,
        kind,
        metric,
        protocol: PROTO_KERNEL,
        ..RouteSpec::new(dst, vec![NextHop::dev(dev)])
    }
}

/// Route MTUs as the kernel stores them: 0 is no MTU, and more than 65520 is 65520
/// (`ip_mtu_from_fib_result`'s `IP_MAX_MTU`, the metric's clamp in `fib_convert_metrics`).
fn clamp_mtu<A: Address>(spec: &mut RouteSpec<A>) {
    spec.mtu = spec.mtu.filter(|&m| m != 0).map(|m| m.min(65520));
}

/// Removes `a` (with its secondaries, for a primary IPv4 address) and returns it as it was.
fn addr_del<A: RouterFamily>(
    st: &mut FamilyState<A>,
    a: &IfAddr<A>,
) -> Result<IfAddr<A>, ChangeError> {
    let i = st
        .addrs
        .iter()
        // Both families delete by address and length (`inet6_addr_del` checks `plen` too).
        .position(|o| o.addr == a.addr && o.dev == a.dev && o.len == a.len)
        .ok_or_else(|| {
            ChangeError::with(
                Errno::EADDRNOTAVAIL,
                if A::FAMILY == Family::Inet {
                    "ipv4: Address not found"
                } else {
                    "ipv6: address not found"
                },
            )
        })?;
    let gone = Arc::make_mut(&mut st.addrs).remove(i);
    // Removing a primary IPv4 address removes its secondaries too (promote_secondaries is off).
    let primary = !st.addrs[..i]
        .iter()
        .any(|o| o.dev == gone.dev && o.len == gone.len && o.subnet() == gone.subnet());
    if A::FAMILY == Family::Inet && primary {
        Arc::make_mut(&mut st.addrs)
            .retain(|o| !(o.dev == gone.dev && o.len == gone.len && o.subnet() == gone.subnet()));
    }
    Ok(gone)
}
