//! `ip route show|flush` filters and `ip route get` queries.
use super::*;

pub(super) fn parse_show_filter(
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<ShowFilter> {
    let mut f = ShowFilter {
        family,
        table: TableFilter::Id(TABLE_MAIN),
        root: None,
        matching: None,
        exact: None,
        src: None,
        kind: None,
        dev: None,
        protocol: None,
        via: None,
        prefsrc: None,
        scope: None,
        metric: None,
        tos: None,
    };
    let mut table_all = false;
    // With -4 or -6 a prefix of the other family ends ip (`get_prefix`).
    let explicit = family;
    let prefix_arg = |v: &str| -> Result<AnyPrefix> {
        let p = parse_any_prefix(v)?;
        match (explicit, p.family()) {
            (Some(want), Some(got)) if want != got => Err(other_family(want, v)),
            _ => Ok(p),
        }
    };
    let to_ip = |p: AnyPrefix, fam: Option<Family>| -> IpPrefix {
        match p {
            AnyPrefix::Addr(addr, len) => IpPrefix { addr, len },
            AnyPrefix::Default if fam == Some(Family::Inet6) => IpPrefix {
                addr: Ipv6Addr::UNSPECIFIED.into(),
                len: 0,
            },
            AnyPrefix::Default => IpPrefix {
                addr: Ipv4Addr::UNSPECIFIED.into(),
                len: 0,
            },
        }
    };
    while let Some(t) = args.next() {
        if matches(t, "table") {
            let v = args.value(t)?;
            // `all`, `unspec` and 0 list every table (and, without -4/-6, both families).
            if v == "all" || table_from_name(v) == Some(0) {
                f.table = TableFilter::All;
                table_all = true;
            } else if v == "cache" {
                return Err(ParseError::new(v, "the route cache is not modelled").soft());
            } else {
                f.table = TableFilter::Id(
                    table_from_name(v).ok_or_else(|| bad_arg("table id value is invalid\n", v))?,
                );
            }
        } else if t == "dev" || t == "oif" {
            f.dev = Some(dev_index(router, args.value(t)?)?);
        } else if matches(t, "protocol") {
            let v = args.value(t)?;
            f.protocol =
                Some(protocol_from_name(v).ok_or_else(|| bad_arg("invalid \"protocol\"\n", v))?);
        } else if matches(t, "scope") {
            let v = args.value(t)?;
            f.scope = match scope_from_name(v) {
                Some(s) => Some(s),
                None if v == "all" => None,
                None => return Err(bad_arg("invalid \"scope\"\n", v)),
            };
        } else if matches(t, "metric") || matches(t, "priority") || t == "preference" {
            f.metric = Some(num("\"metric\" value is invalid\n", args.value(t)?)?);
        } else if matches(t, "tos") || matches(t, "dsfield") {
            f.tos = Some(parse_tos(args.value(t)?, "TOS value is invalid\n")?);
        } else if matches(t, "realms") {
            return Err(ParseError::new(t, format!("\"{t}\" is not supported by fibre")).soft());
        } else if t == "via" {
            let mut v = args.value(t)?;
            // A named family is read and dropped: the address says it.
            if v == "inet" || v == "inet6" {
                v = args.value(t)?;
            }
            f.via = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "src" {
            let v = args.value(t)?;
            f.prefsrc = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "type" {
            let v = args.value(t)?;
            f.kind = Some(
                RouteType::from_name(v)
                    .ok_or_else(|| bad_arg("node type value is invalid\n", v))?,
            );
        } else if t == "root" {
            let v = args.value(t)?;
            f.root = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "match" {
            let v = args.value(t)?;
            f.matching = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "exact" || t == "to" {
            let v = args.value(t)?;
            f.exact = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "from" {
            let v = args.value(t)?;
            f.src = Some(to_ip(prefix_arg(v)?, f.family));
        } else if let Some(k) = RouteType::from_name(t) {
            f.kind = Some(k);
        } else {
            f.exact = Some(to_ip(prefix_arg(t)?, f.family));
        }
    }
    // Without -4/-6 ip lists IPv4, or both families for `table all`; a prefix of the other
    // family then selects nothing (it does not choose the family).
    if f.family.is_none() && !table_all {
        f.family = Some(Family::Inet);
    }
    Ok(f)
}

/// An address (not a prefix, not `default`).
fn address(v: &str) -> Result<IpAddr> {
    match parse_any_prefix(v)? {
        AnyPrefix::Addr(a, _) => Ok(a),
        AnyPrefix::Default => Err(ParseError::new(v, "an address is expected")),
    }
}

pub(super) fn parse_route_get(
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    let mut dst = None;
    let mut q = RouteQuery::to(());
    let mut src = None;
    let mut connected = false;
    while let Some(t) = args.next() {
        if matches(t, "tos") || matches(t, "dsfield") {
            q.tos = parse_tos(args.value(t)?, "TOS value is invalid\n")?;
        } else if matches(t, "iif") {
            q.iif = Some(dev_index(router, args.value(t)?)?);
        } else if matches(t, "mark") {
            q.mark = num("invalid mark value", args.value(t)?)?;
        } else if matches(t, "oif") || t == "dev" {
            q.oif = Some(dev_index(router, args.value(t)?)?);
        } else if matches(t, "notify") || matches(t, "connected") {
            connected |= t.starts_with('c');
        } else if matches(t, "vrf") {
            return Err(ParseError::new(
                t,
                "VRFs are not supported (this kernel has no VRF devices)",
            )
            .soft());
        } else if matches(t, "uid") {
            q.uid = Some(num("invalid UID\n", args.value(t)?)?);
        } else if matches(t, "fibmatch") {
            q.fibmatch = true;
        } else if t == "as" {
            return Err(ParseError::new(t, "\"as\" is not supported by fibre").soft());
        } else if t == "sport" {
            q.sport = Some(num("invalid sport\n", args.value(t)?)?);
        } else if t == "dport" {
            q.dport = Some(num("invalid dport\n", args.value(t)?)?);
        } else if t == "ipproto" {
            q.ipproto = Some(parse_ipproto(args.value(t)?)?);
        } else if t == "from" {
            src = Some(address(args.value(t)?)?);
        } else {
            let mut v = t;
            if matches(v, "to") && args.peek().is_some() {
                v = args.value(t)?;
            }
            if dst.is_some() {
                return Err(ParseError::new(
                    v,
                    format!("either \"to\" is duplicate, or \"{v}\" is a garbage"),
                ));
            }
            dst = Some((address(v)?, v));
        }
    }
    let (dst, dst_tok) = dst.ok_or_else(|| ParseError {
        // iproute_get prints it and returns: only this line fails.
        plain: true,
        ..ParseError::bare("need at least a destination address").soft()
    })?;
    let fam = Family::of(&dst);
    if let Some(want) = family.filter(|&f| f != fam) {
        return Err(other_family(want, dst_tok));
    }
    if src.is_some_and(|s| Family::of(&s) != fam) {
        return Err(ParseError::bare("source and destination are of different families").soft());
    }
    // iproute2 6.1's `connected` asks again with the answer's source, but sends the first
    // request unchanged: without `from` it prints the same answer twice.
    let times = if connected && src.is_none() { 2 } else { 1 };
    Ok(Command::RouteGet(q.with(dst, src), times))
}
