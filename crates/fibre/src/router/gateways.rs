//! Gateway checks remembered between route changes.
//!
//! Every route added through a gateway has the gateway looked up first (IPv4's `fib_check_nh`,
//! IPv6's `ip6_validate_gw`: the gateway must be reachable, and lends the route its device when
//! none is named). IPv6 remembers only the checks that walk (not link-local or onlink ones). A full view
//! loaded into a router names a handful of gateways a million times, and each check walks the
//! RIB (inside a change set the FIBs do not answer). The answer for a gateway can change only
//! when a route whose prefix contains the gateway is added or removed, or when rules, links,
//! addresses or next-hop objects change; so it is kept until one of those happens:
//!
//! - route edits are read from the family's journal (every edit of a change set is there,
//!   since rollback needs it) before each use and at commit, and drop the checks of the
//!   gateways their prefix contains;
//! - any other change through `Router::change`, and a rollback, forget everything
//!   ([`GatewayMemo::clear`]); a mirror's router, which also changes through mirror events,
//!   remembers nothing.
use super::journal::Journal;
use crate::addr::Address;
use crate::link::IfIndex;
use crate::route::{Scope, TableId};

/// Most entries kept: a full view has a few gateways; past this the memo starts over.
const MAX_ENTRIES: usize = 64;

/// What one gateway check was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatewayKey<A: Address> {
    /// The gateway (`via`).
    pub gw: A,
    /// The device named with it, if any.
    pub dev: Option<IfIndex>,
    /// The route's scope.
    pub scope: Scope,
    /// The route's table.
    pub table: TableId,
}

/// Passed gateway checks and the device each lends (see the module docs).
#[derive(Clone, Debug)]
pub struct GatewayMemo<A: Address> {
    entries: Vec<(GatewayKey<A>, Option<IfIndex>)>,
    /// The lowest and highest gateway remembered: an edit whose prefix lies wholly outside
    /// drops nothing, found without testing each entry (a load's edits, a million of them, are
    /// almost all outside the few gateways' span).
    span: Option<(A, A)>,
    /// Journal entries already applied.
    seen: usize,
}

impl<A: Address> Default for GatewayMemo<A> {
    fn default() -> Self {
        GatewayMemo {
            entries: Vec::new(),
            span: None,
            seen: 0,
        }
    }
}

impl<A: Address> GatewayMemo<A> {
    /// Forgets every check.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.span = None;
        self.seen = 0;
    }

    /// Applies the route edits of `journal` not seen yet: a check whose gateway an edited
    /// prefix contains is dropped.
    pub(crate) fn follow(&mut self, journal: &Journal<A>) {
        if self.seen > journal.len() {
            // The journal was emptied without this memo seeing it go: trust nothing.
            self.clear();
        }
        for (_, dst) in journal.destinations_from(self.seen) {
            let Some((low, high)) = self.span else {
                break;
            };
            if dst.last() < low || dst.addr() > high {
                continue;
            }
            self.entries.retain(|(k, _)| !dst.contains(k.gw));
            self.span = Self::span_of(&self.entries);
        }
        self.seen = journal.len();
    }

    /// The journal is being emptied (a commit): edits up to now were applied by `follow`.
    pub(crate) fn journal_cleared(&mut self) {
        self.seen = 0;
    }

    /// The device a passed check of `key` lent, if that check is remembered.
    fn get(&self, key: &GatewayKey<A>) -> Option<Option<IfIndex>> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|&(_, dev)| dev)
    }

    /// The device the check of `key` lends: remembered, or from `check` (then remembered if it
    /// passed).
    pub(crate) fn get_or_check<E>(
        &mut self,
        key: GatewayKey<A>,
        check: impl FnOnce() -> Result<Option<IfIndex>, E>,
    ) -> Result<Option<IfIndex>, E> {
        if let Some(dev) = self.get(&key) {
            return Ok(dev);
        }
        let dev = check()?;
        self.put(key, dev);
        Ok(dev)
    }

    /// Remembers a passed check.
    fn put(&mut self, key: GatewayKey<A>, dev: Option<IfIndex>) {
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.clear();
        }
        self.entries.push((key, dev));
        self.span = Self::span_of(&self.entries);
    }

    fn span_of(entries: &[(GatewayKey<A>, Option<IfIndex>)]) -> Option<(A, A)> {
        let low = entries.iter().map(|(k, _)| k.gw).min()?;
        let high = entries.iter().map(|(k, _)| k.gw).max()?;
        Some((low, high))
    }
}
