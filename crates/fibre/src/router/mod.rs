//! The router: links and addresses, the tables of both families, policy rules, and the lookup
//! that puts them together as `ip route get` does.
//!
//! Changes go through [`Router::begin`] / [`Router::commit`] / [`Router::rollback`] (or
//! [`Router::apply`], which wraps them): a change set either lands whole or leaves everything as
//! it was. Route lists record their old contents before each edit; next-hop releases wait for the
//! commit; the small parts (links, addresses, rules) are copied at `begin`.
use crate::addr::{Address, Family};
use crate::error::{ChangeError, Errno};
use crate::fib::FibFamily;
use crate::flow::Flow;
use crate::link::{loopback_v4, loopback_v6, IfAddr, LinkKind, Links};
use crate::nexthop::{NextHop, NhTable};
use crate::prefix::Prefix;
use crate::rib::ipv6::siblings;
use crate::rib::{
    InsertMode, KernelSemantics, LinkState, Rib, RouteSelector, SavedList, TableLookup,
};
use crate::route::*;
use crate::rules::{Rule, RuleAction, RuleSelector, RuleSet};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub mod fibs;
mod ipv4;
mod ipv6;

use family::Kernel;
use fibs::Fibs;

/// Everything one family keeps. Outside the router it is a read-only view
/// ([`Router::family`]): every change goes through a change set.
#[derive(Clone, Debug)]
pub struct FamilyState<A: KernelSemantics + FibFamily> {
    tables: BTreeMap<TableId, Rib<A>>,
    nhs: NhTable<A>,
    rules: RuleSet<A>,
    addrs: Vec<IfAddr<A>>,
    /// Routes currently derived from addresses and link state (proto kernel).
    derived: Vec<RouteSpec<A>>,
    /// IPv4: a user added a `local` route (the kernel then checks sources the slow way).
    custom_local_routes: bool,
    journal: Vec<(TableId, SavedList<A>)>,
    /// The compiled FIBs of the tables, following the RIB at each commit.
    fibs: Fibs<A>,
}

impl<A: KernelSemantics + FibFamily> Default for FamilyState<A> {
    fn default() -> Self {
        let mut tables = BTreeMap::new();
        tables.insert(TABLE_LOCAL, Rib::new(TABLE_LOCAL));
        tables.insert(TABLE_MAIN, Rib::new(TABLE_MAIN));
        FamilyState {
            tables,
            nhs: NhTable::new(),
            rules: RuleSet::default(),
            addrs: Vec::new(),
            derived: Vec::new(),
            custom_local_routes: false,
            journal: Vec::new(),
            fibs: Fibs {
                links_changed: true,
                ..Fibs::default()
            },
        }
    }
}

impl<A: RouterFamily> FamilyState<A> {
    /// Table `id`, if the family has it.
    pub fn table(&self, id: TableId) -> Option<&Rib<A>> {
        self.tables.get(&id)
    }
    /// The family's tables, by id.
    pub fn tables(&self) -> impl Iterator<Item = &Rib<A>> {
        self.tables.values()
    }
    /// Route count over all tables.
    pub fn route_count(&self) -> usize {
        self.tables.values().map(|t| t.len()).sum()
    }
    /// The policy rules, in priority order.
    pub fn rules(&self) -> &RuleSet<A> {
        &self.rules
    }
    /// The addresses on the family's devices, in the order they were added.
    pub fn addrs(&self) -> &[IfAddr<A>] {
        &self.addrs
    }
    /// The shared next-hop groups the routes refer to.
    pub fn nexthops(&self) -> &NhTable<A> {
        &self.nhs
    }
    fn table_mut(&mut self, id: TableId) -> &mut Rib<A> {
        self.tables.entry(id).or_insert_with(|| Rib::new(id))
    }

    /// Interns, inserts, and releases what the insert displaced.
    fn insert(&mut self, spec: &RouteSpec<A>, mode: InsertMode) -> Result<(), ChangeError> {
        let nh = self.nhs.intern(&spec.hops);
        let route = spec.with_nh(nh);
        let mut saved = Vec::new();
        let r = self
            .tables
            .entry(spec.table)
            .or_insert_with(|| Rib::new(spec.table))
            .insert(route, mode, &mut self.nhs, &mut saved);
        self.journal
            .extend(saved.into_iter().map(|s| (spec.table, s)));
        match r {
            Ok(displaced) => {
                for d in displaced {
                    self.nhs.release(d.nh);
                }
                Ok(())
            }
            Err(e) => {
                self.nhs.release(nh);
                Err(e)
            }
        }
    }

    fn delete(&mut self, table: TableId, sel: &RouteSelector<A>) -> Result<(), Errno> {
        let Some(rib) = self.tables.get_mut(&table) else {
            return Err(Errno::ESRCH);
        };
        let mut saved = Vec::new();
        let r = rib.delete(sel, &self.nhs, &mut saved);
        self.journal.extend(saved.into_iter().map(|s| (table, s)));
        for gone in r? {
            self.nhs.release(gone.nh);
        }
        Ok(())
    }

    fn remove_where(&mut self, mut doomed: impl FnMut(&Route<A>, &[NextHop<A>]) -> bool) {
        let nhs = &self.nhs;
        let mut removed = Vec::new();
        for (id, rib) in self.tables.iter_mut() {
            let mut saved = Vec::new();
            removed.extend(rib.remove_where(|r| doomed(r, nhs.get(r.nh)), &mut saved));
            self.journal.extend(saved.into_iter().map(|s| (*id, s)));
        }
        for r in removed {
            self.nhs.release(r.nh);
        }
    }

    /// Brings the proto-kernel routes in line with addresses and link state: removes the derived
    /// routes that no longer follow, adds the new ones (after existing equal routes, as the kernel's
    /// `fib_magic` appends; an identical existing route is left alone).
    fn sync_derived(&mut self, links: &Links) {
        let want = A::derive(links, &self.addrs);
        let old = std::mem::take(&mut self.derived);
        for spec in old.iter().filter(|s| !want.contains(s)) {
            let sel = RouteSelector::exact(spec);
            let _ = self.delete(spec.table, &sel);
        }
        for spec in want.iter().filter(|s| !old.contains(s)) {
            let _ = self.insert(spec, InsertMode::Append);
        }
        self.derived = want;
    }

    /// One table's answer, for the rule walk.
    fn lookup_table<'a>(
        &'a self,
        id: TableId,
        flow: &Flow<A>,
        links: &dyn LinkState,
    ) -> TableLookup<'a, A> {
        if let Some(answer) = self.fib_lookup_table(id, flow, links) {
            return answer;
        }
        self.tables
            .get(&id)
            .map_or(TableLookup::None, |t| t.lookup(flow, &self.nhs, links))
    }

    /// `fib_rules_lookup`: the first rule that matches and decides.
    fn walk_rules<'a>(
        &'a self,
        flow: &Flow<A>,
        names: &FlowNames<'_>,
        links: &dyn LinkState,
    ) -> Result<Matched<'a, A>, Errno> {
        let rules = self.rules.as_slice();
        let mut i = 0;
        while i < rules.len() {
            let rule = &rules[i];
            if !rule.matches(flow, names.iif, names.oif, flow.src.is_some()) {
                i += 1;
                continue;
            }
            match rule.action {
                RuleAction::Goto(target) => match self.rules.goto_target(target) {
                    Some(j) if j > i => i = j,
                    _ => i += 1, // an unresolved goto is passed over
                },
                RuleAction::Nop => i += 1,
                RuleAction::Lookup(table) => match self.lookup_table(table, flow, links) {
                    TableLookup::Match { route, hop, list } => {
                        if rule
                            .suppress_prefixlength
                            .is_some_and(|n| route.dst.len() <= n)
                        {
                            i += 1;
                        } else {
                            return Ok(Matched {
                                table,
                                route,
                                hop,
                                list,
                            });
                        }
                    }
                    TableLookup::Reject {
                        errno: Errno::EAGAIN,
                        ..
                    }
                    | TableLookup::None => i += 1,
                    TableLookup::Reject { errno, .. } => return Err(errno),
                },
                reject => return Err(reject.reject_error().expect("reject action")),
            }
        }
        Err(Errno::ENETUNREACH)
    }
}

/// Device names of a flow, for rules (which name devices that may not exist).
struct FlowNames<'a> {
    iif: Option<&'a str>,
    oif: Option<&'a str>,
}

/// A route that a lookup chose, and where.
#[derive(Clone, Copy, Debug)]
pub struct Matched<'a, A: Address> {
    /// The table the lookup reports (IPv4's merged local+main reports main).
    pub table: TableId,
    /// The route chosen.
    pub route: &'a Route<A>,
    /// Index of the chosen next hop in the route's group.
    pub hop: usize,
    /// The list `route` is in.
    pub list: &'a [Route<A>],
}

/// What `ip route get` asks: a destination of family `A` and what else the query names.
///
/// `RouteQuery<IpAddr>` is a query whose family is not chosen yet (as text gives it);
/// [`RouteQuery::narrow`] makes it one of a family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteQuery<A> {
    /// The destination.
    pub dst: A,
    /// `from`: the source address (of the packet, for `iif`; the socket's, otherwise).
    pub src: Option<A>,
    /// `iif`: the packet arrives on this device (the input path) instead of being sent from
    /// this host (the output path).
    pub iif: Option<IfIndex>,
    /// `oif`: the socket is bound to this device.
    pub oif: Option<IfIndex>,
    /// `mark`: the firewall mark, for rules.
    pub mark: u32,
    /// `tos` (`dsfield`).
    pub tos: u8,
    /// `ipproto`; `None` asks as the kernel does without it (IPv4 as UDP, IPv6 as 0).
    pub ipproto: Option<u8>,
    /// `sport`.
    pub sport: Option<u16>,
    /// `dport`.
    pub dport: Option<u16>,
    /// `uid`: the socket's owner, for `uidrange` rules.
    pub uid: Option<u32>,
    /// `fibmatch`: answer with the matched route instead of the resolved path.
    pub fibmatch: bool,
}

impl<A> RouteQuery<A> {
    /// A query for `dst` that names nothing else.
    pub fn to(dst: A) -> Self {
        RouteQuery {
            dst,
            src: None,
            iif: None,
            oif: None,
            mark: 0,
            tos: 0,
            ipproto: None,
            sport: None,
            dport: None,
            uid: None,
            fibmatch: false,
        }
    }

    /// The same query for another destination and source (of another type: a query parsed
    /// before its family is known is a `RouteQuery<()>` until its addresses are).
    pub fn with<B>(self, dst: B, src: Option<B>) -> RouteQuery<B> {
        RouteQuery {
            dst,
            src,
            iif: self.iif,
            oif: self.oif,
            mark: self.mark,
            tos: self.tos,
            ipproto: self.ipproto,
            sport: self.sport,
            dport: self.dport,
            uid: self.uid,
            fibmatch: self.fibmatch,
        }
    }
}

impl RouteQuery<IpAddr> {
    /// The query as one of family `A`: `None` where its destination or source is of the
    /// other family.
    pub fn narrow<A: Address>(&self) -> Option<RouteQuery<A>> {
        let src = match self.src {
            None => None,
            Some(s) => Some(A::from_ip(s)?),
        };
        Some(self.clone().with(A::from_ip(self.dst)?, src))
    }
}

/// The flags of a resolved IPv4 route (`RTCF_*`), as `ip route get` prints them after `cache`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheFlags {
    /// Delivered here (`RTCF_LOCAL`).
    pub local: bool,
    /// `RTCF_MULTICAST`.
    pub multicast: bool,
    /// `RTCF_BROADCAST`.
    pub broadcast: bool,
    /// Forwarded back out of its input device to a source on that link (`RTCF_DOREDIRECT`).
    pub redirect: bool,
}

impl CacheFlags {
    /// The names ip prints, in ip's order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.local, "local"),
            (self.multicast, "mc"),
            (self.broadcast, "brd"),
            (self.redirect, "redirect"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

/// The answer to `route get`: the matched route (`fibmatch`) and how it resolves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteAnswer<A: Address> {
    /// The route that matched, with its next hops spelled out; for IPv6 ECMP the siblings' next
    /// hops, the chosen one first. `None` where the kernel answers without a FIB entry (it
    /// assumes the destination on-link, or multicast, broadcast and 0.0.0.0 shortcuts): then
    /// `fibmatch` fails with EHOSTUNREACH.
    pub route: Option<RouteSpec<A>>,
    /// The type of the resolved route: the matched route's, except that IPv4 answers to
    /// 255.255.255.255 are broadcast and to 224/4 multicast whatever route carried them.
    pub kind: RouteType,
    /// IPv4: the resolved route's flags.
    pub cache: CacheFlags,
    /// The flow's firewall mark (IPv4 answers print it).
    pub mark: u32,
    /// The queried destination and the resolved path.
    pub dst: A,
    /// The source address the query gave (`from`).
    pub src: Option<A>,
    /// The gateway of the chosen next hop (`via`); `None` for a directly reachable destination.
    pub gateway: Option<A>,
    /// The output device (`dev`).
    pub dev: Option<IfIndex>,
    /// The source address reported (`src` in `ip route get` output): the route's `prefsrc`, or
    /// one selected from the host's addresses.
    pub prefsrc: Option<A>,
    /// The input device, for input-path queries (`iif`).
    pub iif: Option<IfIndex>,
}

/// The address families the router keeps, IPv4 and IPv6: what generic code over the router
/// names (`router.route_get::<A>(..)`, `router.family::<A>()`). The trait is sealed; what
/// differs between the kernel's IPv4 and IPv6 is behind it, in `router::ipv4` and
/// `router::ipv6`.
pub trait RouterFamily: family::Kernel {}
impl RouterFamily for Ipv4Addr {}
impl RouterFamily for Ipv6Addr {}

mod family {
    use super::*;

    /// The router's family-specific parts (sealed: the module is private, so neither the
    /// trait nor its mutable access to a [`Router`] can be reached from outside).
    pub trait Kernel: KernelSemantics + crate::fib::FibFamily {
        /// The protocol number of the family's ICMP, which route queries accept.
        const ICMP: u8;
        fn state(r: &Router) -> &FamilyState<Self>;
        fn state_mut(r: &mut Router) -> &mut FamilyState<Self>;
        /// A change of this family as a router change.
        fn wrap(c: FamilyChange<Self>) -> Change;
        /// The routes the kernel derives from addresses and link state.
        fn derive(links: &Links, addrs: &[IfAddr<Self>]) -> Vec<RouteSpec<Self>>;
        /// Policy lookup with the kernel's fast path when rules were never touched.
        fn policy_lookup<'a>(
            st: &'a FamilyState<Self>,
            flow: &Flow<Self>,
            iif: Option<&str>,
            oif: Option<&str>,
            links: &dyn LinkState,
        ) -> Result<Matched<'a, Self>, Errno>;
        /// Refuses an address the kernel does not put on a device of this kind.
        fn check_address(a: &IfAddr<Self>, kind: Option<&LinkKind>) -> Result<(), ChangeError>;
        /// The whole `ip route get` for this family (`ipproto` already checked).
        fn route_get(r: &Router, q: &RouteQuery<Self>) -> Result<RouteAnswer<Self>, Errno>;
        /// Checks and completes a route before insert (gateway reachability, device state).
        fn prepare(r: &Router, spec: &mut RouteSpec<Self>) -> Result<(), ChangeError>;
        /// The next hops a match reports: IPv4 the route's group; IPv6 the ECMP siblings, the
        /// matched one first (the kernel's circular sibling list).
        fn matched_hops(st: &FamilyState<Self>, m: &Matched<'_, Self>) -> Vec<NextHop<Self>>;
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
    }
}

/// Links plus "is it up", for lookups.
impl LinkState for Links {
    fn is_up(&self, dev: IfIndex) -> bool {
        Links::is_up(self, dev)
    }
}

/// A change the router applies: to links, or to the state of one family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// `link add NAME type veth peer name PEER`
    LinkAddVeth {
        /// The new device's name.
        name: String,
        /// The peer's name.
        peer: String,
    },
    /// `link set NAME up|down`
    LinkSet {
        /// The device.
        dev: IfIndex,
        /// `up` (true) or `down` (false).
        up: bool,
    },
    /// `link del NAME`
    LinkDel {
        /// The device (its veth peer goes with it).
        dev: IfIndex,
    },
    /// A change to IPv4 addresses, routes or rules.
    Inet(FamilyChange<Ipv4Addr>),
    /// A change to IPv6 addresses, routes or rules.
    Inet6(FamilyChange<Ipv6Addr>),
}

/// A change to one family's addresses, routes or rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FamilyChange<A: Address> {
    /// `addr add`
    AddrAdd(IfAddr<A>),
    /// `addr del`
    AddrDel(IfAddr<A>),
    /// `route add|replace|append|prepend|change`, as the mode says.
    Route(RouteSpec<A>, InsertMode),
    /// `route del`: the routes of a table that the selector selects.
    RouteDel(TableId, RouteSelector<A>),
    /// `rule add`
    RuleAdd(Rule<A>),
    /// `rule del`
    RuleDel(RuleSelector<A>),
}

impl<A: RouterFamily> From<FamilyChange<A>> for Change {
    fn from(c: FamilyChange<A>) -> Change {
        A::wrap(c)
    }
}

/// The small parts of a family, copied when a change set opens.
#[derive(Clone, Debug)]
struct FamilySnapshot<A: RouterFamily> {
    rules: RuleSet<A>,
    addrs: Vec<IfAddr<A>>,
    derived: Vec<RouteSpec<A>>,
    custom_local_routes: bool,
    tables: Vec<TableId>,
}

impl<A: RouterFamily> FamilySnapshot<A> {
    fn take(s: &FamilyState<A>) -> Self {
        FamilySnapshot {
            rules: s.rules.clone(),
            addrs: s.addrs.clone(),
            derived: s.derived.clone(),
            custom_local_routes: s.custom_local_routes,
            tables: s.tables.keys().copied().collect(),
        }
    }

    /// Undoes the journal (route lists), then puts the small parts back.
    fn restore(self, s: &mut FamilyState<A>) {
        for (table, saved) in std::mem::take(&mut s.journal).into_iter().rev() {
            s.table_mut(table).restore(saved);
        }
        s.tables.retain(|id, _| self.tables.contains(id));
        s.nhs.rollback();
        s.rules = self.rules;
        s.addrs = self.addrs;
        s.derived = self.derived;
        s.custom_local_routes = self.custom_local_routes;
    }
}

#[derive(Clone, Debug)]
struct Snapshot {
    links: Links,
    v4: FamilySnapshot<Ipv4Addr>,
    v6: FamilySnapshot<Ipv6Addr>,
}

/// A network namespace's routing state.
///
/// Sealed: [`Router::links`] and [`Router::family`] are read-only views, and every change
/// goes through a change set ([`Router::apply`], [`Router::change`], or
/// [`Router::begin`]…[`Router::commit`]), so the FIBs and next-hop groups always follow.
#[derive(Clone, Debug, Default)]
pub struct Router {
    links: Links,
    v4: FamilyState<Ipv4Addr>,
    v6: FamilyState<Ipv6Addr>,
    snapshot: Option<Box<Snapshot>>,
}

impl Router {
    /// A router with only `lo` (down), the default rules and empty local and main tables, as
    /// a new network namespace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns the FIB path off (every lookup walks the RIB) or back on: the reference that the
    /// FIB path is tested against.
    pub fn set_fibs_enabled(&mut self, on: bool) {
        self.v4.fibs.disabled = !on;
        self.v6.fibs.disabled = !on;
    }

    /// Opens a change set.
    pub fn begin(&mut self) {
        assert!(self.snapshot.is_none(), "change sets do not nest");
        self.snapshot = Some(Box::new(Snapshot {
            links: self.links.clone(),
            v4: FamilySnapshot::take(&self.v4),
            v6: FamilySnapshot::take(&self.v6),
        }));
        self.v4.nhs.begin();
        self.v6.nhs.begin();
    }
    /// Keeps every change since [`Router::begin`]; the FIBs follow (one publication each).
    pub fn commit(&mut self) {
        if self.snapshot.take().is_some() {
            self.v4.follow_commit(&self.links);
            self.v6.follow_commit(&self.links);
            self.v4.journal.clear();
            self.v6.journal.clear();
            self.v4.nhs.commit();
            self.v6.nhs.commit();
        }
    }
    /// Undoes every change since [`Router::begin`].
    pub fn rollback(&mut self) {
        if let Some(s) = self.snapshot.take() {
            let s = *s;
            self.links = s.links;
            s.v4.restore(&mut self.v4);
            s.v6.restore(&mut self.v6);
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
            self.begin();
            let r = self.change(c);
            match &r {
                Err(e) if !e.partial => self.rollback(),
                _ => self.commit(),
            }
            return r;
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
                self.links.add_veth(name, peer);
            }
            Change::LinkSet { dev, up } => self.set_link(*dev, *up)?,
            Change::LinkDel { dev } => {
                let l = self.links.by_index(*dev).ok_or(Errno::ENODEV)?;
                if l.kind == LinkKind::Loopback {
                    return Err(Errno::EOPNOTSUPP.into());
                }
                for d in self.links.remove(*dev) {
                    self.v4.addrs.retain(|a| a.dev != d);
                    self.v6.addrs.retain(|a| a.dev != d);
                    self.flush_dev(d, true);
                }
                self.sync_derived();
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
            FamilyChange::AddrAdd(a) => self.addr_add(a.clone())?,
            FamilyChange::AddrDel(a) => {
                let before = A::state(self).addrs.clone();
                addr_del(A::state_mut(self), a)?;
                self.sync_derived();
                A::addresses_gone(self, &before);
            }
            FamilyChange::Route(spec, mode) => self.route_change(spec.clone(), *mode)?,
            FamilyChange::RouteDel(t, sel) => A::route_del(A::state_mut(self), *t, sel)?,
            FamilyChange::RuleAdd(r) if r.action == RuleAction::Lookup(0) => {
                let st = A::state_mut(self);
                let id = A::unspecified_table(st)?;
                st.rules.add(Rule {
                    action: RuleAction::Lookup(id),
                    ..r.clone()
                })?;
                st.table_mut(id);
            }
            FamilyChange::RuleAdd(r) => A::state_mut(self).rules.add(r.clone())?,
            FamilyChange::RuleDel(s) => drop(A::state_mut(self).rules.delete(s)?),
        }
        Ok(())
    }

    fn sync_derived(&mut self) {
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
    ///   is on a live device, and go together once none is.
    fn flush_dev(&mut self, dev: IfIndex, removed: bool) {
        let links = &self.links;
        // A leg is dead once its device is this one or another device that is down.
        fn dead<A: Address>(h: &NextHop<A>, dev: IfIndex, links: &Links) -> bool {
            h.dev == Some(dev) || !h.dev.is_some_and(|d| links.is_up(d))
        }
        self.v4.remove_where(|r, hops| {
            hops.iter().any(|h| h.dev == Some(dev))
                && (removed || (hops.iter().all(|h| dead(h, dev, links)) && r.scope < SCOPE_HOST))
        });
        if removed {
            self.v6
                .remove_where(|_, hops| hops.iter().any(|h| h.dev == Some(dev)));
            return;
        }
        // Siblings whose every leg is dead, found per list before anything is removed.
        let st = &self.v6;
        let mut doomed = std::collections::HashSet::new();
        for rib in st.tables.values() {
            for (_, _, entry) in rib.entries() {
                for list in entry.lists() {
                    for (i, r) in list.iter().enumerate() {
                        let on_dev = st.nhs.get(r.nh).iter().any(|h| h.dev == Some(dev));
                        if !on_dev {
                            continue;
                        }
                        let sibs = siblings(list, i, &st.nhs);
                        let all_dead = sibs
                            .iter()
                            .all(|s| st.nhs.get(s.nh).iter().all(|h| dead(h, dev, links)));
                        if sibs.len() == 1 || all_dead {
                            doomed.extend(
                                sibs.iter().map(|s| (s.table, s.dst, s.src, s.metric, s.nh)),
                            );
                        }
                    }
                }
            }
        }
        self.v6
            .remove_where(|r, _| doomed.contains(&(r.table, r.dst, r.src, r.metric, r.nh)));
    }

    fn set_link(&mut self, dev: IfIndex, up: bool) -> Result<(), ChangeError> {
        let link = self.links.by_index(dev).ok_or(Errno::ENODEV)?;
        if link.up == up {
            return Ok(());
        }
        let loopback = link.kind == LinkKind::Loopback;
        self.links.set_up(dev, up);
        if !up {
            // IPv6 addresses go with the link (keep_addr_on_down is off).
            self.v6.addrs.retain(|a| a.dev != dev);
            self.flush_dev(dev, false);
            self.sync_derived();
            return Ok(());
        }
        if loopback {
            // The kernel gives lo its addresses when it first comes up.
            if !self.v4.addrs.iter().any(|a| a.dev == dev) {
                self.v4.addrs.push(loopback_v4());
            }
            if !self.v6.addrs.iter().any(|a| a.dev == dev) {
                self.v6.addrs.push(loopback_v6());
            }
        }
        self.sync_derived();
        // addrconf configures a device once it is ready (up with carrier): this one, then its
        // veth peer if this brought the peer's carrier.
        for d in std::iter::once(dev).chain(self.links.peer(dev)) {
            if self.links.is_ready(d) && !self.links.by_index(d).is_some_and(|l| l.v6_configured) {
                self.links.set_v6_configured(d);
                self.sync_derived();
            }
        }
        Ok(())
    }

    fn addr_add<A: RouterFamily>(&mut self, a: IfAddr<A>) -> Result<(), ChangeError> {
        let link = self.links.by_index(a.dev).ok_or(Errno::ENODEV)?;
        let newly_configured = A::FAMILY == Family::Inet6 && link.up && !link.v6_configured;
        if newly_configured {
            // addrconf_add_dev: an IPv6 address configures the device, before its checks.
            self.links.set_v6_configured(a.dev);
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
        if st.addrs.iter().any(|o| {
            o.addr == a.addr && o.dev == a.dev && (A::FAMILY == Family::Inet6 || o.len == a.len)
        }) {
            return Err(ChangeError::with(
                Errno::EEXIST,
                if A::FAMILY == Family::Inet {
                    "ipv4: Address already assigned"
                } else {
                    "ipv6: address already assigned"
                },
            ));
        }
        st.addrs.push(a);
        self.sync_derived();
        Ok(())
    }

    fn route_change<A: RouterFamily>(
        &mut self,
        mut spec: RouteSpec<A>,
        mode: InsertMode,
    ) -> Result<(), ChangeError> {
        A::prepare(self, &mut spec)?;
        let st = A::state_mut(self);
        st.insert(&spec, mode)?;
        if A::FAMILY == Family::Inet && spec.kind == RouteType::Local {
            st.custom_local_routes = true;
        }
        Ok(())
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

    /// Is `addr` configured on any device (`__ip_dev_find` / `ipv6_chk_addr`)?
    pub fn is_local_address<A: RouterFamily>(&self, addr: A) -> bool {
        A::state(self).addrs.iter().any(|a| a.addr == addr)
    }

    /// `ip route get`: the kernel's answer to `q`, or its error.
    pub fn route_get<A: RouterFamily>(&self, q: &RouteQuery<A>) -> Result<RouteAnswer<A>, Errno> {
        // `rtm_getroute_parse_ip_proto`: route queries know TCP, UDP and the family's ICMP only.
        match q.ipproto {
            None | Some(6) | Some(17) => {}
            Some(p) if p == A::ICMP => {}
            Some(_) => return Err(Errno::EOPNOTSUPP),
        }
        A::route_get(self, q)
    }

    /// The links (devices).
    pub fn links(&self) -> &Links {
        &self.links
    }

    /// One family's tables, rules, addresses, next-hop groups and FIBs, read-only.
    pub fn family<A: RouterFamily>(&self) -> &FamilyState<A> {
        A::state(self)
    }

    /// A first address of `dev` usable as source toward `toward` (prefsrc when the route has none).
    fn select_source<A: RouterFamily>(&self, dev: Option<IfIndex>, toward: A) -> Option<A> {
        let addrs = &A::state(self).addrs;
        let on_dev = || addrs.iter().filter(move |a| Some(a.dev) == dev);
        on_dev()
            .find(|a| a.subnet().contains(toward))
            .or_else(|| on_dev().next())
            .or_else(|| addrs.iter().find(|a| a.dev != LOOPBACK_IFINDEX))
            .map(|a| a.addr)
    }

    /// `inet_select_addr(dev, 0, HOST)`: the first address of `dev`.
    fn select_source_on<A: RouterFamily>(&self, dev: IfIndex) -> Option<A> {
        A::state(self)
            .addrs
            .iter()
            .find(|a| a.dev == dev)
            .map(|a| a.addr)
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

    /// The answer for a matched route: spelled-out route (with IPv6 siblings) and the path.
    fn answer<A: RouterFamily>(
        &self,
        m: &Matched<'_, A>,
        dst: A,
        src: Option<A>,
        iif: Option<IfIndex>,
    ) -> RouteAnswer<A> {
        let st = A::state(self);
        let hops = A::matched_hops(st, m);
        let hop = hops
            .get(if A::FAMILY == Family::Inet6 { 0 } else { m.hop })
            .copied();
        // The table a lookup reports is the one it searched: IPv4's merged local+main is main.
        let spec = RouteSpec {
            table: m.table,
            ..RouteSpec::of(m.route, &hops)
        };
        let dev = hop.and_then(|h| h.dev);
        let gateway = hop.and_then(|h| h.gateway);
        let prefsrc = m.route.prefsrc.or_else(|| {
            if m.route.kind.is_reject() {
                None
            } else {
                self.select_source(dev, gateway.unwrap_or(dst))
            }
        });
        RouteAnswer {
            kind: m.route.kind,
            cache: CacheFlags::default(),
            mark: 0,
            route: Some(spec),
            dst,
            src,
            gateway,
            dev,
            prefsrc,
            iif,
        }
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
        I: Iterator<Item = &'s Route<A>> + 's,
    {
        let st = A::state(self);
        st.tables
            .values()
            .flat_map(move |t| pick(t).map(move |r| RouteSpec::of(r, st.nhs.get(r.nh))))
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

fn addr_del<A: RouterFamily>(st: &mut FamilyState<A>, a: &IfAddr<A>) -> Result<(), ChangeError> {
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
    let gone = st.addrs.remove(i);
    // Removing a primary IPv4 address removes its secondaries too (promote_secondaries is off).
    let primary = !st.addrs[..i]
        .iter()
        .any(|o| o.dev == gone.dev && o.len == gone.len && o.subnet() == gone.subnet());
    if A::FAMILY == Family::Inet && primary {
        st.addrs
            .retain(|o| !(o.dev == gone.dev && o.len == gone.len && o.subnet() == gone.subnet()));
    }
    Ok(())
}
