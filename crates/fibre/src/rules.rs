//! Policy routing rules (`ip rule`), as net/core/fib_rules.c evaluates them.
//!
//! Rules are kept sorted by priority (a new rule goes after those of equal priority) and
//! evaluated in that order: the first rule whose selectors all match (or, with `not`, not all)
//! applies its action. `lookup` consults a table and goes on to the next rule when the table has
//! nothing, answers `throw`, or does not exist; `goto` jumps forward to the first rule of a
//! priority; the reject actions end the walk with their error.
use crate::addr::Address;
use crate::error::{ChangeError, Errno};
use crate::flow::Flow;
use crate::prefix::Prefix;
use crate::route::{TableId, PROTO_KERNEL, TABLE_DEFAULT, TABLE_LOCAL, TABLE_MAIN};

/// What a matching rule does (`fra_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub enum RuleAction {
    /// `lookup TABLE` (`FR_ACT_TO_TBL`): look the flow up in this table.
    Lookup(TableId),
    /// `goto PRIO` (`FR_ACT_GOTO`): go on at the first rule of this priority.
    Goto(u32),
    /// `nop` (`FR_ACT_NOP`): do nothing; the walk goes on.
    Nop,
    /// `blackhole` (`FR_ACT_BLACKHOLE`): end the walk with `EINVAL`.
    Blackhole,
    /// `unreachable` (`FR_ACT_UNREACHABLE`): end the walk with `ENETUNREACH`.
    Unreachable,
    /// `prohibit` (`FR_ACT_PROHIBIT`): end the walk with `EACCES`.
    Prohibit,
}

impl RuleAction {
    /// The error a reject action ends the walk with.
    pub fn reject_error(self) -> Option<Errno> {
        match self {
            RuleAction::Blackhole => Some(Errno::EINVAL),
            RuleAction::Unreachable => Some(Errno::ENETUNREACH),
            RuleAction::Prohibit => Some(Errno::EACCES),
            _ => None,
        }
    }
}

/// A rule's `from` or `to` as given. The kernel keeps the address unmasked (`ip rule` shows
/// `from 10.1.2.3/8`, and rules that differ in host bits only are different rules) and masks it
/// when it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct RuleAddr<A: Address> {
    /// The address as given, host bits kept.
    pub addr: A,
    /// The prefix length.
    pub len: u8,
}

impl<A: Address> RuleAddr<A> {
    /// The prefix it matches.
    pub fn prefix(&self) -> Prefix<A> {
        Prefix::new(self.addr, self.len)
    }
}

impl<A: Address> From<Prefix<A>> for RuleAddr<A> {
    fn from(p: Prefix<A>) -> Self {
        RuleAddr {
            addr: p.addr(),
            len: p.len(),
        }
    }
}

/// One rule. `None` selectors match everything.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct Rule<A: Address> {
    /// `priority` / `pref`: rules are evaluated in increasing order.
    pub priority: u32,
    /// `not`: the rule applies when its selectors do not all match.
    pub invert: bool,
    /// `from PREFIX`: the flow's source address.
    pub src: Option<RuleAddr<A>>,
    /// `to PREFIX`: the flow's destination address.
    pub dst: Option<RuleAddr<A>>,
    /// `iif NAME`: the input device, by name (it need not exist).
    pub iif: Option<String>,
    /// `oif NAME`: the output device, by name (it need not exist).
    pub oif: Option<String>,
    /// (mark, mask): matches when `(flow.mark ^ mark) & mask == 0`.
    pub fwmark: Option<(u32, u32)>,
    /// DS field selector (`tos` / `dsfield`); 0 matches all.
    pub tos: u8,
    /// `ipproto N`: the IP protocol number.
    pub ipproto: Option<u8>,
    /// `sport LO-HI`: inclusive source port range.
    pub sport: Option<(u16, u16)>,
    /// `dport LO-HI`: inclusive destination port range.
    pub dport: Option<(u16, u16)>,
    /// `uidrange LO-HI`: inclusive range of the socket owner's uid.
    pub uidrange: Option<(u32, u32)>,
    /// What the rule does when it applies.
    pub action: RuleAction,
    /// Results whose prefix length is <= this are discarded and the walk goes on. The
    /// kernel's `int` (-1 is none): 300 discards every result, a negative one none.
    pub suppress_prefixlength: Option<i32>,
    /// Who installed the rule (`protocol`, `FRA_PROTOCOL`); not a selector.
    pub protocol: u8,
}

impl<A: Address> Rule<A> {
    /// `ip rule add priority PRIORITY lookup TABLE`: matches every flow.
    pub fn lookup(priority: u32, table: TableId) -> Self {
        Rule {
            priority,
            invert: false,
            src: None,
            dst: None,
            iif: None,
            oif: None,
            fwmark: None,
            tos: 0,
            ipproto: None,
            sport: None,
            dport: None,
            uidrange: None,
            action: RuleAction::Lookup(table),
            suppress_prefixlength: None,
            protocol: 0,
        }
    }

    /// `fib_nl2rule`'s checks, in the order of the kernel this follows (6.18: the goto's last),
    /// of a rule to add or to delete at `priority`: a uid range has no invalid uid (-1) and
    /// does not run backward; a port range, source then destination, has no port 0 or 65535
    /// and does not run backward; a goto jumps forward. (The checks before them are of what a
    /// `Rule` cannot hold, a goto's target beside another action or a goto without one: the
    /// reader of ip's words refuses those.)
    pub fn check_fields(&self, priority: u32) -> Result<(), ChangeError> {
        let invalid = |what: &str| Err(ChangeError::with(Errno::EINVAL, what));
        if let Some((from, to)) = self.uidrange {
            if from > to || to == u32::MAX {
                return invalid("Invalid uid range");
            }
        }
        // `fib_rule_port_range_valid`.
        let valid = |&(from, to): &(u16, u16)| from != 0 && to != u16::MAX && from <= to;
        if self.sport.is_some_and(|r| !valid(&r)) {
            return invalid("Invalid sport range");
        }
        if self.dport.is_some_and(|r| !valid(&r)) {
            return invalid("Invalid dport range");
        }
        if matches!(self.action, RuleAction::Goto(target) if target <= priority) {
            return invalid("Backward goto not supported");
        }
        Ok(())
    }

    /// The family's checks of a new rule's TOS (`fib4_rule_configure`, `fib6_rule_configure`),
    /// after its fields' and its EEXIST: no ECN bits; IPv4 takes only the TOS bits (0x1e).
    pub fn check_tos(&self) -> Result<(), ChangeError> {
        if self.tos & 3 != 0 {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "Invalid dsfield (tos): ECN bits must be 0",
            ));
        }
        if A::FAMILY == crate::addr::Family::Inet && self.tos & !0x1e != 0 {
            return Err(ChangeError::with(Errno::EINVAL, "Invalid tos"));
        }
        Ok(())
    }

    /// The rules of a new namespace: IPv4 `0 local, 32766 main, 32767 default`; IPv6 without the
    /// last. The kernel makes them with protocol `kernel` (`fib_default_rule_add`), so a rule
    /// added as one of them is no copy (`rule_exists` compares the protocol), and `rule flush
    /// protocol kernel` deletes them.
    pub fn defaults() -> Vec<Rule<A>> {
        let mut v = vec![
            Rule::lookup(0, TABLE_LOCAL),
            Rule::lookup(32766, TABLE_MAIN),
        ];
        if A::FAMILY == crate::addr::Family::Inet {
            v.push(Rule::lookup(32767, TABLE_DEFAULT));
        }
        for r in &mut v {
            r.protocol = PROTO_KERNEL;
        }
        v
    }

    /// Do the selectors match `flow`? (`fib_rule_match` + the family's match.) `iif_name` and
    /// `oif_name` are the flow's devices by name, since rules name devices that may not exist.
    pub fn matches(
        &self,
        flow: &Flow<A>,
        iif_name: Option<&str>,
        oif_name: Option<&str>,
        has_src: bool,
    ) -> bool {
        let m = self.selectors_match(flow, iif_name, oif_name, has_src);
        m != self.invert
    }

    fn selectors_match(
        &self,
        flow: &Flow<A>,
        iif_name: Option<&str>,
        oif_name: Option<&str>,
        has_src: bool,
    ) -> bool {
        if let Some(dev) = &self.iif {
            if iif_name != Some(dev.as_str()) {
                return false;
            }
        }
        if let Some(dev) = &self.oif {
            if oif_name != Some(dev.as_str()) {
                return false;
            }
        }
        if let Some((mark, mask)) = self.fwmark {
            if (flow.mark ^ mark) & mask != 0 {
                return false;
            }
        }
        if let Some((lo, hi)) = self.uidrange {
            if flow.uid < lo || flow.uid > hi {
                return false;
            }
        }
        if let Some(p) = self.src.map(|a| a.prefix()) {
            // IPv6 rules with a source never match a flow without one (RT6_LOOKUP_F_HAS_SADDR);
            // IPv4 compares the unspecified address like any other.
            let usable = has_src || A::FAMILY == crate::addr::Family::Inet;
            if !(p.is_default() || usable && p.contains(flow.src.unwrap_or_else(A::unspecified))) {
                return false;
            }
        }
        if let Some(p) = self.dst.map(|a| a.prefix()) {
            if !p.contains(flow.dst) {
                return false;
            }
        }
        if self.tos != 0 {
            // IPv4 compares the legacy TOS bits only (`fib_dscp_masked_match`), IPv6 the DSCP.
            let flow_tos = if A::FAMILY == crate::addr::Family::Inet {
                flow.tos & 0x1c
            } else {
                flow.tos & 0xfc
            };
            if self.tos != flow_tos {
                return false;
            }
        }
        if let Some(p) = self.ipproto {
            if p != flow.ipproto {
                return false;
            }
        }
        if let Some((lo, hi)) = self.sport {
            if flow.sport < lo || flow.sport > hi {
                return false;
            }
        }
        if let Some((lo, hi)) = self.dport {
            if flow.dport < lo || flow.dport > hi {
                return false;
            }
        }
        true
    }
}

impl<A: Address> Rule<A> {
    /// Whether the kernel refuses this rule as a copy of `existing` (`rule_exists`, asked for
    /// `ip rule add`'s `NLM_F_EXCL`). Every field compares as the kernel stores it (a selector
    /// not given as its zero: `fwmark 0/0`, `ipproto 0`), but for three the family's
    /// `compare` (`fib4_rule_compare`, `fib6_rule_compare`) skips where this rule gives none:
    /// its source, destination and TOS. So `pref 5 lookup 9` is a copy of `pref 5 from
    /// 10.0.0.0/8 lookup 9`, not the other way round. `not` and a goto's target are not
    /// compared at all.
    pub fn is_taken_by(&self, existing: &Rule<A>) -> bool {
        let r = existing;
        let kind = |a: &RuleAction| match a {
            RuleAction::Goto(_) => RuleAction::Goto(0),
            other => *other,
        };
        let given = |a: &Option<RuleAddr<A>>| a.filter(|a| a.len > 0);
        let same_or_unasked = |mine: &Option<RuleAddr<A>>, theirs: &Option<RuleAddr<A>>| {
            given(mine).is_none_or(|m| given(theirs) == Some(m))
        };
        kind(&r.action) == kind(&self.action)
            && r.priority == self.priority
            && r.iif == self.iif
            && r.oif == self.oif
            && r.fwmark.unwrap_or((0, 0)) == self.fwmark.unwrap_or((0, 0))
            && r.suppress_prefixlength == self.suppress_prefixlength
            && r.uidrange == self.uidrange
            && r.ipproto.unwrap_or(0) == self.ipproto.unwrap_or(0)
            && r.protocol == self.protocol
            && r.sport.unwrap_or((0, 0)) == self.sport.unwrap_or((0, 0))
            && r.dport.unwrap_or((0, 0)) == self.dport.unwrap_or((0, 0))
            && same_or_unasked(&self.src, &r.src)
            && same_or_unasked(&self.dst, &r.dst)
            && (self.tos == 0 || r.tos == self.tos)
    }
}

/// A family's rule list, sorted by priority.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct RuleSet<A: Address> {
    rules: Vec<Rule<A>>,
    /// Set once a rule was added or deleted: from then on the kernel walks the rules instead of
    /// its fast path (and IPv4 keeps local and main apart), even if the defaults come back.
    pub customised: bool,
}

impl<A: Address> Default for RuleSet<A> {
    fn default() -> Self {
        RuleSet {
            rules: Rule::defaults(),
            customised: false,
        }
    }
}

impl<A: Address> RuleSet<A> {
    /// The rules in evaluation order.
    pub fn iter(&self) -> impl Iterator<Item = &Rule<A>> {
        self.rules.iter()
    }
    /// The rules in evaluation order, as a slice.
    pub fn as_slice(&self) -> &[Rule<A>] {
        &self.rules
    }
    /// Priority the kernel gives a rule added without one: one less than the second rule's
    /// (`fib_default_rule_pref`), or 0.
    pub fn default_priority(&self) -> u32 {
        match self.rules.get(1) {
            Some(r) if r.priority > 0 => r.priority - 1,
            _ => 0,
        }
    }
    /// `ip rule add` (`fib_nl_newrule`): the checks of [`Rule::check_fields`], then EEXIST for
    /// a rule already there ([`Rule::is_taken_by`]), then those of [`Rule::check_tos`].
    pub fn add(&mut self, rule: Rule<A>) -> Result<(), ChangeError> {
        rule.check_fields(rule.priority)?;
        if self.rules.iter().any(|r| rule.is_taken_by(r)) {
            return Err(Errno::EEXIST.into());
        }
        self.add_configured(rule)
    }
    /// The end of [`RuleSet::add`], after its EEXIST: the TOS's checks, then the rule goes in.
    /// For a rule whose table the kernel chooses in `configure` (`lookup 0`): its EEXIST
    /// compared table 0, which no rule has.
    pub fn add_configured(&mut self, rule: Rule<A>) -> Result<(), ChangeError> {
        rule.check_tos()?;
        self.insert_in_order(rule);
        Ok(())
    }
    /// Puts `rule` after the rules of lower or equal priority, as the kernel does; any rule
    /// change makes the set customised for good (`fib_has_custom_rules`).
    fn insert_in_order(&mut self, rule: Rule<A>) {
        let at = self
            .rules
            .iter()
            .position(|r| r.priority > rule.priority)
            .unwrap_or(self.rules.len());
        self.rules.insert(at, rule);
        self.customised = true;
    }
    /// The rules a kernel has, in its order, for a mirror; `customised` unless they are the
    /// default ones.
    #[cfg(feature = "netlink")]
    pub(crate) fn mirrored(rules: Vec<Rule<A>>) -> Self {
        let customised = !Self::are_defaults(&rules);
        RuleSet { rules, customised }
    }
    /// A rule a mirrored kernel added (`RTM_NEWRULE`), where the kernel put it: after the
    /// rules of lower or equal priority. One already there is left alone (a resync may replay it).
    /// Sets `customised` for good, as any rule change does in the kernel.
    #[cfg(feature = "netlink")]
    pub(crate) fn mirror_add(&mut self, rule: Rule<A>) {
        if !self.rules.contains(&rule) {
            self.insert_in_order(rule);
        }
        self.customised = true;
    }
    /// A rule a mirrored kernel deleted (`RTM_DELRULE`): the first equal one, if still there.
    #[cfg(feature = "netlink")]
    pub(crate) fn mirror_remove(&mut self, rule: &Rule<A>) {
        if let Some(i) = self.rules.iter().position(|r| r == rule) {
            self.rules.remove(i);
        }
        self.customised = true;
    }
    /// Whether the rules are as `add` keeps them (a snapshot's, which came from outside): in
    /// priority order, each `goto` forward, and not marked as the defaults unless they are.
    #[cfg(feature = "snapshot")]
    pub(crate) fn check(&self) -> Result<(), String> {
        // Lookups skip the rules while they are not customised (the kernel's fast path).
        if !self.customised && !Self::are_defaults(&self.rules) {
            return Err("rules other than the defaults, not marked customised".into());
        }
        if self.rules.windows(2).any(|w| w[0].priority > w[1].priority) {
            return Err("rules out of priority order".into());
        }
        if let Some(r) = self
            .rules
            .iter()
            .find(|r| matches!(r.action, RuleAction::Goto(t) if t <= r.priority))
        {
            return Err(format!("rule {} goes back", r.priority));
        }
        let too_long = |a: &Option<RuleAddr<A>>| a.is_some_and(|a| a.len > A::WIDTH);
        match self
            .rules
            .iter()
            .find(|r| too_long(&r.src) || too_long(&r.dst))
        {
            Some(r) => Err(format!(
                "rule {} has a prefix past the family's width",
                r.priority
            )),
            None => Ok(()),
        }
    }
    /// Whether `rules` are the kernel's default ones, whoever installed them (the kernel's own
    /// are proto kernel; the defaults here name none).
    #[cfg(any(feature = "netlink", feature = "snapshot"))]
    fn are_defaults(rules: &[Rule<A>]) -> bool {
        let plain = |r: &Rule<A>| Rule {
            protocol: 0,
            ..r.clone()
        };
        rules
            .iter()
            .map(plain)
            .eq(Rule::defaults().iter().map(plain))
    }

    /// `ip rule del` (`fib_nl_delrule`): the checks of [`Rule::check_fields`] (a goto's target
    /// against the priority given, else the one a new rule would take), then removes the first
    /// rule matching every attribute `wanted` says it has.
    pub fn delete(&mut self, wanted: &RuleSelector<A>) -> Result<Rule<A>, ChangeError> {
        if let Some(rule) = &wanted.rule {
            rule.check_fields(wanted.priority.unwrap_or(self.default_priority()))?;
        }
        let i = self
            .rules
            .iter()
            .position(|r| wanted.selects(r))
            .ok_or(Errno::ENOENT)?;
        self.customised = true;
        Ok(self.rules.remove(i))
    }

    /// Index of the rule a `goto` lands on: the first with exactly that priority.
    pub fn goto_target(&self, priority: u32) -> Option<usize> {
        self.rules.iter().position(|r| r.priority == priority)
    }
}

/// `ip rule del` names a rule by the attributes given; others are wildcards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSelector<A: Address> {
    /// `priority N`, if given.
    pub priority: Option<u32>,
    /// The other attributes, as parsed into a rule; `None` selects by priority alone.
    pub rule: Option<Rule<A>>,
    /// Which fields of `rule` were given (the rest match anything).
    pub given: RuleFields,
}

/// One flag per [`Rule`] field that a [`RuleSelector`] compares: set when the field was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleFields {
    /// `from` was given.
    pub src: bool,
    /// `to` was given.
    pub dst: bool,
    /// `iif` was given.
    pub iif: bool,
    /// `oif` was given.
    pub oif: bool,
    /// `fwmark` was given.
    pub fwmark: bool,
    /// `tos` / `dsfield` was given.
    pub tos: bool,
    /// `ipproto` was given.
    pub ipproto: bool,
    /// `sport` was given.
    pub sport: bool,
    /// `dport` was given.
    pub dport: bool,
    /// `uidrange` was given.
    pub uidrange: bool,
    /// An action was given (a type word, `goto`, `nop`): compared by its kind, a goto's target
    /// left out (`rule_find` compares `action`, not `target`).
    pub action: bool,
    /// A table other than 0 was given: compared with the rule's (0 for other actions than a
    /// lookup).
    pub table: bool,

    /// A `protocol` other than 0 was given (`rule_find` compares a protocol that is not 0).
    pub protocol: bool,
    /// `suppress_prefixlength` was given.
    pub suppress_prefixlength: bool,
}

impl<A: Address> RuleSelector<A> {
    /// What `rule flush` deletes rule `r` by: ip sends the rule back as the kernel dumped it,
    /// every field that is not 0 (and no priority 0), and `rule_find` takes the first rule
    /// that request selects, which may be another (`rule flush not` after `pref 5 iif X lookup
    /// 100` and `pref 5 not lookup 100` deletes the first: `not` is never compared).
    pub fn as_dumped(r: &Rule<A>) -> Self {
        let table = matches!(r.action, RuleAction::Lookup(t) if t != 0);
        RuleSelector {
            priority: (r.priority != 0).then_some(r.priority),
            rule: Some(r.clone()),
            given: RuleFields {
                src: r.src.is_some(),
                dst: r.dst.is_some(),
                iif: r.iif.is_some(),
                oif: r.oif.is_some(),
                fwmark: r.fwmark.is_some(),
                tos: r.tos != 0,
                ipproto: r.ipproto.is_some(),
                sport: r.sport.is_some(),
                dport: r.dport.is_some(),
                uidrange: r.uidrange.is_some(),
                action: true,
                table,
                protocol: r.protocol != 0,
                suppress_prefixlength: r.suppress_prefixlength.is_some(),
            },
        }
    }

    fn selects(&self, r: &Rule<A>) -> bool {
        if self.priority.is_some_and(|p| p != r.priority) {
            return false;
        }
        let Some(w) = &self.rule else { return true };
        let g = self.given;
        // As `rule_find`: a mark or a mask of 0 is not compared, nor is `not` (the kernel
        // compares no flags: `rule del not pref 5` deletes rule 5 without `not`).
        let ((wm, wk), (rm, rk)) = (w.fwmark.unwrap_or((0, 0)), r.fwmark.unwrap_or((0, 0)));
        let table = |a: RuleAction| match a {
            RuleAction::Lookup(t) => t,
            _ => 0,
        };
        (!g.src || w.src == r.src)
            && (!g.dst || w.dst == r.dst)
            && (!g.iif || w.iif == r.iif)
            && (!g.oif || w.oif == r.oif)
            && (!g.fwmark || ((wm == 0 || wm == rm) && (wk == 0 || wk == rk)))
            && (!g.tos || w.tos == r.tos)
            && (!g.ipproto || w.ipproto == r.ipproto)
            && (!g.sport || w.sport == r.sport)
            && (!g.dport || w.dport == r.dport)
            && (!g.uidrange || w.uidrange == r.uidrange)
            && (!g.action || std::mem::discriminant(&w.action) == std::mem::discriminant(&r.action))
            && (!g.table || table(w.action) == table(r.action))
            && (!g.protocol || w.protocol == r.protocol)
            && (!g.suppress_prefixlength || w.suppress_prefixlength == r.suppress_prefixlength)
    }
}

#[cfg(all(test, feature = "snapshot"))]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    /// Lookups skip rules that are not customised, so a snapshot's rules marked so must be
    /// the defaults.
    #[test]
    fn rules_marked_default_are_the_defaults() {
        let mut set = RuleSet::<Ipv6Addr>::default();
        assert_eq!(set.check(), Ok(()));
        set.rules.insert(1, Rule::lookup(5, 7));
        let e = set.check().unwrap_err();
        assert!(e.contains("not marked customised"), "{e}");
        set.customised = true;
        assert_eq!(set.check(), Ok(()));
    }
}

/// The kernel's checks hold for rules from the library as from ip's words (the live kernel's
/// answers to the same rules are lines of `tests/scenarios/bad-values.lines`).
#[cfg(test)]
mod checks {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn refused<A: Address>(set: &mut RuleSet<A>, rule: Rule<A>) -> Option<String> {
        let before = set.as_slice().to_vec();
        let e = set.add(rule).err()?;
        assert_eq!(
            set.as_slice(),
            &before[..],
            "a refused rule changes nothing"
        );
        Some(e.to_string())
    }

    #[test]
    fn rules_are_checked_in_the_kernels_order() {
        let mut v4 = RuleSet::<Ipv4Addr>::default();
        let rule = |f: fn(&mut Rule<Ipv4Addr>)| {
            let mut r = Rule::lookup(5, 9);
            f(&mut r);
            r
        };
        for (r, words) in [
            (rule(|r| r.tos = 2), "ECN bits must be 0"),
            (rule(|r| r.tos = 0x20), "Invalid tos"),
            (
                rule(|r| (r.tos, r.uidrange) = (2, Some((9, 5)))),
                "Invalid uid range",
            ),
            (
                rule(|r| r.uidrange = Some((0, u32::MAX))),
                "Invalid uid range",
            ),
            (
                rule(|r| (r.tos, r.sport) = (3, Some((0, 5)))),
                "Invalid sport range",
            ),
            (rule(|r| r.dport = Some((5, 65535))), "Invalid dport range"),
            (
                rule(|r| (r.action, r.sport) = (RuleAction::Goto(3), Some((9, 5)))),
                "Invalid sport range",
            ),
            (rule(|r| r.action = RuleAction::Goto(5)), "Backward goto"),
        ] {
            let e = refused(&mut v4, r.clone()).unwrap_or_else(|| panic!("{r:?} added"));
            assert!(e.contains(words), "{r:?}: {e}");
        }
        // IPv6 takes any DSCP, never the ECN bits.
        let mut v6 = RuleSet::<Ipv6Addr>::default();
        let mut r = Rule::lookup(5, 9);
        r.tos = 0x20;
        assert_eq!(refused(&mut v6, r.clone()), None);
        r.tos = 0x21;
        assert!(refused(&mut v6, r).is_some_and(|e| e.contains("ECN")));
        // A delete checks the fields, and a goto against the priority a new rule would take.
        let mut del = Rule::lookup(0, 0);
        del.action = RuleAction::Goto(9);
        let wanted = RuleSelector {
            priority: None,
            rule: Some(del),
            given: RuleFields::default(),
        };
        let e = v4.delete(&wanted).unwrap_err().to_string();
        assert!(e.contains("Backward goto"), "{e}");
    }
}
