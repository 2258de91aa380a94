//! `ip rule add|del|show`.
use super::*;

pub(super) fn parse_rule(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    // In `do_iprule`'s order, so `s` is show and `f` flush.
    if matches(verb, "list") || matches(verb, "lst") || matches(verb, "show") {
        return Ok(Command::RuleShow(parse_rule_filter(args, family)?));
    }
    let add = matches(verb, "add");
    if !add && !matches(verb, "delete") {
        if matches(verb, "flush") {
            return Ok(Command::RuleFlush(parse_rule_filter(args, family)?));
        }
        return Err(unknown_command(verb, "rule"));
    }
    // Without -4/-6 a rule is IPv4, whatever its addresses (`iprule_modify` sends AF_INET).
    let explicit = family.is_some();
    let family = family.unwrap_or(Family::Inet);
    if args.peek().is_none() {
        // `iprule_modify` says so and returns: only this line fails.
        let what = if add { "add" } else { "del" };
        return Err(ParseError::plain(format!("\"ip rule {what}\" requires arguments.")).soft());
    }
    with_family!(family, A => {
        let (mut rule, prio, given) = parse_rule_args::<A>(args, add, explicit)?;
        let default_priority = router.family::<A>().rules().default_priority();
        Ok(Command::Apply(if add {
            rule.priority = prio.unwrap_or(default_priority);
            FamilyChange::RuleAdd(rule).into()
        } else {
            FamilyChange::RuleDel(RuleSelector {
                priority: prio,
                rule: Some(rule),
                given,
            })
            .into()
        }))
    })
}

/// The words of `rule add` (`add`) or `rule del`: the rule, its priority if given, and which
/// fields a delete compares (as `rule_find`: those given and not 0). `explicit`: the family was
/// given (-4/-6), so ip reads the addresses in it (`get_prefix`), and one of the other family
/// ends the batch.
pub(super) fn parse_rule_args<A: Address>(
    args: &mut Args<'_>,
    add: bool,
    explicit: bool,
) -> Result<(Rule<A>, Option<u32>, RuleFields)> {
    let mut rule = Rule::<A>::lookup(0, TABLE_MAIN);
    let mut prio = None;
    let mut g = RuleFields::default();
    // As given, host bits included (the kernel keeps them). An address of the other family
    // reaches the kernel, which refuses its length (`fib_nl2rule`).
    let prefix = |v: &str, what: &str| -> Result<Option<RuleAddr<A>>> {
        let read = parse_any_prefix(v);
        if explicit
            && read
                .as_ref()
                .map_or(true, |p| p.family().is_some_and(|f| f != A::FAMILY))
        {
            return Err(other_family(A::FAMILY, v));
        }
        let (addr, len) = match read? {
            // A length of 0 selects everything: the kernel ignores such a FRA_SRC / FRA_DST,
            // whatever its family.
            AnyPrefix::Default | AnyPrefix::Addr(_, 0) => return Ok(None),
            AnyPrefix::Addr(a, l) => (a, l),
        };
        let addr = A::from_ip(addr)
            .ok_or_else(|| ParseError::new(v, format!("Invalid {what} address")).soft())?;
        Ok(Some(RuleAddr { addr, len }))
    };
    // The table and the action are apart in the kernel (`lookup 7 blackhole` keeps both);
    // fibre holds one of them (see the end).
    let mut table = None;
    let mut kind = None;
    // ip sends a goto's target (FRA_GOTO) whatever action a later word sets.
    let mut goto = None;
    // In `iprule_modify`'s order, which settles what an abbreviation means (`t` is tun_id,
    // `b` broadcast).
    while let Some(t) = args.next() {
        if t == "not" {
            rule.invert = true;
        } else if t == "from" {
            rule.src = prefix(args.value(t)?, "source")?;
            g.src = rule.src.is_some();
        } else if t == "to" {
            // `fib_nl2rule`'s words.
            rule.dst = prefix(args.value(t)?, "dst")?;
            g.dst = rule.dst.is_some();
        } else if matches(t, "preference") || matches(t, "order") || matches(t, "priority") {
            prio = Some(num("preference value is invalid\n", args.value(t)?)?);
        } else if t == "tos" || matches(t, "dsfield") {
            let v = args.value(t)?;
            rule.tos = parse_tos(v, "TOS value is invalid\n")?;
            g.tos = rule.tos != 0;
        } else if t == "fwmark" {
            let v = args.value(t)?;
            let (m, mask) = match v.split_once('/') {
                Some((m, k)) => (
                    num::<u32>("fwmark value is invalid\n", m)?,
                    num::<u32>("fwmask value is invalid\n", k)?,
                ),
                // A mark alone compares every bit, but for 0 (`fib_nl2rule`).
                None => {
                    let m = num::<u32>("fwmark value is invalid\n", v)?;
                    (m, if m == 0 { 0 } else { u32::MAX })
                }
            };
            // Mark and mask 0 are no selector: the kernel keeps nothing and shows nothing.
            rule.fwmark = (m, mask).ne(&(0, 0)).then_some((m, mask));
            g.fwmark = rule.fwmark.is_some();
        } else if matches(t, "suppress_prefixlength") || t == "sup_pl" {
            // Before suppress_ifgroup, so `s` is this.
            let v = args.value(t)?;
            rule.suppress_prefixlength = Some(num("suppress_prefixlength value is invalid\n", v)?);
            g.suppress_prefixlength = true;
        } else if matches(t, "realms")
            || matches(t, "tun_id")
            || matches(t, "suppress_ifgroup")
            || t == "sup_group"
            || t == "nat"
            || matches(t, "map-to")
        {
            let _ = args.value(t)?;
            return Err(ParseError::not_modelled(t));
        } else if matches(t, "protocol") {
            let v = args.value(t)?;
            rule.protocol = protocol_from_name(v)
                .ok_or_else(|| bad_arg("\"protocol\" value is invalid\n", v))?;
            g.protocol = rule.protocol != 0;
        } else if matches(t, "table") || t == "lookup" {
            let v = args.value(t)?;
            table = Some(table_from_name(v).ok_or_else(|| bad_arg("invalid table ID\n", v))?);
        } else if t == "dev" || t == "iif" {
            rule.iif = Some(ifname(
                args.value(t)?,
                "\"iif\"/\"dev\" not a valid ifname",
            )?);
            g.iif = true;
        } else if t == "oif" {
            rule.oif = Some(ifname(args.value(t)?, "\"oif\" not a valid ifname")?);
            g.oif = true;
        } else if t == "l3mdev" || t == "dscp" || t == "flowlabel" {
            return Err(ParseError::not_modelled(t));
        } else if t == "uidrange" {
            rule.uidrange = Some(read_uid_range(args.value(t)?)?);
            g.uidrange = true;
        } else if t == "ipproto" {
            // 0 is none: the kernel keeps no protocol and matches every one.
            rule.ipproto = Some(parse_ipproto(args.value(t)?)?).filter(|&p| p != 0);
            g.ipproto = rule.ipproto.is_some();
        } else if t == "sport" {
            rule.sport = Some(read_port_range(t, args.value(t)?)?);
            g.sport = true;
        } else if t == "dport" {
            rule.dport = Some(read_port_range(t, args.value(t)?)?);
            g.dport = true;
        } else {
            let t = if t == "type" { args.value(t)? } else { t };
            kind = Some(if matches(t, "goto") {
                let target = num("invalid target\n", args.value(t)?)?;
                goto = Some(target);
                RuleKind::Action(RuleAction::Goto(target))
            } else if matches(t, "nop") {
                RuleKind::Action(RuleAction::Nop)
            } else {
                rule_kind(t)?
            });
        }
    }
    g.action = kind.is_some();
    g.table = table.is_some_and(|t| t != 0);
    if goto.is_some() && !matches!(kind, Some(RuleKind::Action(RuleAction::Goto(_)))) {
        return Err(ParseError::bare("Unexpected goto").soft());
    }
    rule.action = match (kind, table) {
        (None | Some(RuleKind::Unicast), Some(t)) => RuleAction::Lookup(t),
        (None, None) => rule.action,
        (Some(RuleKind::Action(a)), None) => a,
        // A delete compares the action alone.
        (Some(RuleKind::Unicast), None) if !add => RuleAction::Lookup(0),
        (Some(RuleKind::Unicast), None) => {
            // `fib_newrule` looks such a rule up in a new empty table (`fib_empty_table`).
            return Err(ParseError::new(
                "unicast",
                "a lookup rule without a table (the kernel makes it a new empty table) is not modelled by fibre",
            )
            .soft());
        }
        (Some(RuleKind::Action(a)), Some(0)) => a,
        (Some(RuleKind::Action(_)), Some(_)) => {
            return Err(ParseError::new(
                "table",
                "a table beside a rule's other action (the kernel keeps both) is not modelled by fibre",
            )
            .soft());
        }
    };
    Ok((rule, prio, g))
}

/// What a rule's type word asks (`rtnl_rtntype_a2n`, whose number is the kernel's action).
enum RuleKind {
    /// `unicast` or 1: a lookup (`FR_ACT_TO_TBL`) in the table given.
    Unicast,
    /// Any other action fibre holds.
    Action(RuleAction),
}

/// A type word as `rtnl_rtntype_a2n` reads it, in its order (so `b` is broadcast, `bl`
/// blackhole), or its number; the number is the rule's action (`FR_ACT_*`).
fn rule_kind(t: &str) -> Result<RuleKind> {
    let number = if t == "local" {
        2
    } else if t == "nat" {
        10
    } else if matches(t, "broadcast") || t == "brd" {
        3
    } else if matches(t, "anycast") {
        4
    } else if matches(t, "multicast") {
        5
    } else if matches(t, "prohibit") {
        8
    } else if matches(t, "unreachable") {
        7
    } else if matches(t, "blackhole") {
        6
    } else if matches(t, "xresolve") {
        11
    } else if matches(t, "unicast") {
        1
    } else if t == "throw" {
        9
    } else {
        let n = strtoul(t.as_bytes());
        if n.read == 0 || n.read != t.len() || n.value > 255 {
            return Err(bad_arg("Failed to parse rule type", t));
        }
        n.value
    };
    Ok(match number {
        1 => RuleKind::Unicast,
        // FR_ACT_GOTO without a target.
        2 => return Err(ParseError::new(t, "Missing goto target for action goto").soft()),
        3 => RuleKind::Action(RuleAction::Nop),
        6 => RuleKind::Action(RuleAction::Blackhole),
        7 => RuleKind::Action(RuleAction::Unreachable),
        8 => RuleKind::Action(RuleAction::Prohibit),
        // 0 (none), 4, 5 and 9 to 255: actions the kernel keeps and answers EINVAL through.
        _ => return Err(ParseError::not_modelled(t)),
    })
}
