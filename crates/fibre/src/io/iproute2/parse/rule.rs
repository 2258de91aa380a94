//! `ip rule add|del|show`.
use super::*;

pub(super) fn parse_rule(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    // Without -4/-6 a rule is IPv4, whatever its addresses (`iprule_modify` sends AF_INET).
    let family = family.unwrap_or(Family::Inet);
    if matches(verb, "list") || matches(verb, "lst") || matches(verb, "show") {
        return Ok(Command::RuleShow(family));
    }
    let add = matches(verb, "add");
    if !add && !matches(verb, "delete") {
        return Err(unknown_command(verb, "rule"));
    }
    if args.peek().is_none() {
        // `iprule_modify` says so and returns: only this line fails.
        let what = if add { "add" } else { "del" };
        return Err(ParseError {
            plain: true,
            ..ParseError::bare(format!("\"ip rule {what}\" requires arguments.")).soft()
        });
    }
    with_family!(family, A => {
        let (mut rule, prio, given) = parse_rule_args::<A>(args)?;
        Ok(Command::Apply(if add {
            rule.priority =
                prio.unwrap_or_else(|| router.family::<A>().rules().default_priority());
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

pub(super) fn parse_rule_args<A: Address>(
    args: &mut Args<'_>,
) -> Result<(Rule<A>, Option<u32>, RuleFields)> {
    let mut rule = Rule::<A>::lookup(0, TABLE_MAIN);
    let mut prio = None;
    let mut g = RuleFields::default();
    // As given, host bits included (the kernel keeps them). An address of the other family
    // reaches the kernel, which refuses its length (`fib_nl2rule`).
    let prefix = |v: &str, what: &str| -> Result<Option<RuleAddr<A>>> {
        let (addr, len) = match parse_any_prefix(v)? {
            AnyPrefix::Default => return Ok(None),
            AnyPrefix::Addr(a, l) => (a, l),
        };
        let addr = A::from_ip(addr)
            .ok_or_else(|| ParseError::new(v, format!("Invalid {what} address")).soft())?;
        // A length of 0 selects everything: the kernel ignores such a FRA_SRC / FRA_DST.
        Ok((len > 0).then_some(RuleAddr { addr, len }))
    };
    while let Some(t) = args.next() {
        if t == "not" {
            rule.invert = true;
            g.invert = true;
        } else if matches(t, "preference") || matches(t, "order") || matches(t, "priority") {
            prio = Some(num("preference value is invalid\n", args.value(t)?)?);
        } else if t == "from" {
            rule.src = prefix(args.value(t)?, "source")?;
            g.src = true;
        } else if t == "to" {
            // `fib_nl2rule`'s words.
            rule.dst = prefix(args.value(t)?, "dst")?;
            g.dst = true;
        } else if matches(t, "tos") || matches(t, "dsfield") {
            let v = args.value(t)?;
            rule.tos = parse_tos(v, "TOS value is invalid\n")?;
            if A::FAMILY == Family::Inet && rule.tos & !0x1e != 0 {
                return Err(ParseError::new(v, "Invalid tos").soft());
            }
            g.tos = true;
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
        } else if matches(t, "realms")
            || matches(t, "suppress_ifgroup")
            || t == "l3mdev"
            || matches(t, "tun_id")
            || t == "dscp"
            || t == "flowlabel"
        {
            return Err(ParseError::new(t, format!("\"{t}\" is not supported by fibre")).soft());
        } else if t == "protocol" {
            let v = args.value(t)?;
            rule.protocol = protocol_from_name(v)
                .ok_or_else(|| bad_arg("\"protocol\" value is invalid\n", v))?;
        } else if matches(t, "table") || matches(t, "lookup") {
            let v = args.value(t)?;
            rule.action = RuleAction::Lookup(
                table_from_name(v).ok_or_else(|| bad_arg("invalid table ID\n", v))?,
            );
            g.action = true;
        } else if matches(t, "suppress_prefixlength") {
            let v = args.value(t)?;
            rule.suppress_prefixlength = Some(num("suppress_prefixlength value is invalid\n", v)?);
        } else if t == "dev" || matches(t, "iif") {
            rule.iif = Some(args.value(t)?.to_string());
            g.iif = true;
        } else if matches(t, "oif") {
            rule.oif = Some(args.value(t)?.to_string());
            g.oif = true;
        } else if t == "uidrange" {
            let v = args.value(t)?;
            let (a, b) = v
                .split_once('-')
                .ok_or_else(|| bad_arg("invalid UID range\n", v))?;
            // ip names the whole range whichever half it could not read.
            let message = "invalid UID range\n";
            let (a, b): (u32, u32) = (num_in(message, a, v)?, num_in(message, b, v)?);
            if a > b {
                // The kernel's check (`fib_nl2rule`), so only this line fails.
                return Err(ParseError::new(v, "Invalid uid range").soft());
            }
            rule.uidrange = Some((a, b));
            g.uidrange = true;
        } else if matches(t, "goto") {
            rule.action = RuleAction::Goto(num("invalid target\n", args.value(t)?)?);
            g.action = true;
        } else if matches(t, "nop") {
            rule.action = RuleAction::Nop;
            g.action = true;
        } else if t == "ipproto" {
            rule.ipproto = Some(parse_ipproto(args.value(t)?)?);
            g.ipproto = true;
        } else if t == "sport" {
            rule.sport = Some(parse_port_range(t, args.value(t)?)?);
            g.sport = true;
        } else if t == "dport" {
            rule.dport = Some(parse_port_range(t, args.value(t)?)?);
            g.dport = true;
        } else {
            let action = match RouteType::from_name(t) {
                Some(RouteType::Blackhole) => RuleAction::Blackhole,
                Some(RouteType::Unreachable) => RuleAction::Unreachable,
                Some(RouteType::Prohibit) => RuleAction::Prohibit,
                Some(RouteType::Unicast) => rule.action,
                _ => {
                    return Err(ParseError::new(
                        t,
                        format!("Failed to parse rule type \"{t}\""),
                    ))
                }
            };
            rule.action = action;
            g.action = true;
        }
    }
    Ok((rule, prio, g))
}
