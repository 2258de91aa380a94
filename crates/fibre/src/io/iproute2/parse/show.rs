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
        src: None,
        default_dst: false,
        default_src: false,
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
            AnyPrefix::Default => IpPrefix::zero(fam.unwrap_or(Family::Inet)),
        }
    };
    // Without -4/-6 ip reads `default` with no family, of length 0 (in the match slot it
    // selects the routes of length 0 in both families, in the root slot every route), and `all`
    // or `any` as no prefix at all (`get_prefix` with AF_UNSPEC, then `filter_nlmsg`); with -4
    // or -6 each is that family's 0/0.
    let family_less = |v: &str, p: &AnyPrefix| -> Option<bool> {
        (explicit.is_none() && matches!(p, AnyPrefix::Default)).then_some(v == "default")
    };
    // In the order ip tries its words (`iproute_list_flush_or_save`): abbreviations resolve
    // as there (`t` is table, `ro` root), and `tos`, `dev`, `via` and `src` are whole words.
    let unsupported = |t: &str, what: &str| ParseError::new(t, what.to_string()).soft();
    while let Some(t) = args.next() {
        if matches(t, "table") {
            let v = args.value(t)?;
            // `all`, `unspec` and 0 list every table (and, without -4/-6, both families).
            if v == "all" || table_from_name(v) == Some(0) {
                f.table = TableFilter::All;
                table_all = true;
            } else if v == "cache" {
                return Err(unsupported(v, "the route cache is not modelled"));
            } else {
                f.table = TableFilter::Id(
                    table_from_name(v).ok_or_else(|| bad_arg("table id value is invalid\n", v))?,
                );
            }
        } else if matches(t, "vrf") {
            vrf_table(router, args.value(t)?)?;
            // ip lists main without its local and broadcast routes: not modelled.
            return Err(unsupported(t, "vrf default is not modelled"));
        } else if matches(t, "cached") || matches(t, "cloned") {
            return Err(unsupported(t, "the route cache is not modelled"));
        } else if t == "tos" || matches(t, "dsfield") {
            f.tos = Some(parse_tos(args.value(t)?, "TOS value is invalid\n")?);
        } else if matches(t, "protocol") {
            f.protocol = protocol_selector(args.value(t)?)?;
        } else if matches(t, "scope") {
            let v = args.value(t)?;
            f.scope = match scope_from_name(v) {
                Some(s) => Some(s),
                None if v == "all" => None,
                None => return Err(bad_arg("invalid \"scope\"\n", v)),
            };
        } else if matches(t, "type") {
            let v = args.value(t)?;
            f.kind = Some(
                route_type_from_word(v)
                    .ok_or_else(|| bad_arg("node type value is invalid\n", v))?,
            );
        } else if t == "dev" || t == "oif" {
            f.dev = Some(dev_index(router, args.value(t)?)?);
        } else if t == "iif" || t == "mark" {
            return Err(ParseError::not_modelled(t));
        } else if matches(t, "metric") || matches(t, "priority") || t == "preference" {
            f.metric = Some(num("\"metric\" value is invalid\n", args.value(t)?)?);
        } else if t == "via" {
            let (named, v) = via_words(args, t)?;
            let p = prefix_arg(v)?;
            if let Some(want) = named.filter(|&n| p.family().is_some_and(|f| f != n)) {
                return Err(other_family(want, v));
            }
            // `default`, `all` and `any` are of length 0: no filter (`filter.rvia.bitlen`).
            f.via = p.family().map(|_| to_ip(p, f.family));
        } else if t == "src" {
            let v = args.value(t)?;
            let p = prefix_arg(v)?;
            f.prefsrc = p.family().map(|_| to_ip(p, f.family));
        } else if matches(t, "realms") {
            return Err(ParseError::not_modelled(t));
        } else if matches(t, "from") {
            let mut v = args.value(t)?;
            if matches(v, "root") || matches(v, "match") {
                return Err(unsupported(
                    v,
                    &format!("\"from {v}\" is not supported by fibre"),
                ));
            }
            if matches(v, "exact") {
                v = args.value(v)?;
            }
            let p = prefix_arg(v)?;
            let default = family_less(v, &p);
            f.default_src = default == Some(true);
            f.src = default.is_none().then(|| to_ip(p, f.family));
        } else {
            // [to] [root|match|exact] PREFIX
            let mut v = t;
            if matches(v, "to") {
                v = args.value(v)?;
            }
            let root = matches(v, "root");
            let matching = !root && matches(v, "match");
            if root || matching || matches(v, "exact") {
                v = args.value(v)?;
            }
            let p = prefix_arg(v)?;
            let default = family_less(v, &p);
            let p = default.is_none().then(|| to_ip(p, f.family));
            // ip's two slots (`iproute_list_flush_or_save`): `exact` fills both.
            if !matching {
                f.root = p;
            }
            if !root {
                f.matching = p;
                f.default_dst = default == Some(true);
            }
        }
    }
    // Without -4/-6 ip lists IPv4, or both families for `table all`; a prefix of the other
    // family then selects nothing (it does not choose the family).
    if f.family.is_none() && !table_all {
        f.family = Some(Family::Inet);
    }
    Ok(f)
}

/// `route get`'s words; `warnings` takes what ip prints on standard error as it reads them.
pub(super) fn parse_route_get(
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
    warnings: &mut Vec<String>,
) -> Result<Command> {
    let mut dst = None;
    let mut q = RouteQuery::to(());
    let mut src = None;
    let mut connected = false;
    // ip's family: -4/-6, else the first address read; one of the other family, or a word that
    // is none, ends the batch in its words (`get_prefix`).
    let mut fam = family;
    // `default`, `any` and `all` give no address here (length 0) and leave the family open.
    // With the address and its length, the family as it stands after the word.
    let mut read = |v: &str| -> Result<(Option<IpAddr>, u8, Option<Family>)> {
        let (a, len) = match (parse_any_prefix(v), fam) {
            (Ok(AnyPrefix::Addr(a, _)), Some(want)) if Family::of(&a) != want => {
                return Err(other_family(want, v))
            }
            (Ok(AnyPrefix::Addr(a, len)), _) => (a, len),
            (Ok(AnyPrefix::Default), _) => return Ok((None, 0, fam)),
            (Err(_), Some(want)) => return Err(other_family(want, v)),
            (Err(e), None) => return Err(e),
        };
        fam = Some(Family::of(&a));
        Ok((Some(a), len, fam))
    };
    // ip looks up `iif` and `oif` after its loop, the last of each given, and only once it has
    // a destination: a device that is not there fails the line after any word's error.
    let (mut idev, mut odev) = (None, None);
    // In the order ip tries its words (`iproute_get`), so that abbreviations resolve as there
    // (`f` is from, `sp` sport); `tos` and `to` are whole words.
    while let Some(t) = args.next() {
        if t == "tos" || matches(t, "dsfield") {
            q.tos = parse_tos(args.value(t)?, "TOS value is invalid\n")?;
        } else if matches(t, "from") {
            // As for the destination: `any` and `all` send no address, and an earlier one
            // stands; `default` sends zeros, which ask for no source.
            let v = args.value(t)?;
            let (a, _, _) = read(v)?;
            if a.is_some() || v == "default" {
                src = a;
            }
        } else if matches(t, "iif") {
            idev = Some(args.value(t)?);
        } else if matches(t, "mark") {
            q.mark = num("invalid mark value", args.value(t)?)?;
        } else if matches(t, "oif") || t == "dev" {
            odev = Some(args.value(t)?);
        } else if matches(t, "notify") || matches(t, "connected") {
            connected |= t.starts_with('c');
        } else if matches(t, "vrf") {
            return Err(no_vrf(args.value(t)?));
        } else if matches(t, "uid") {
            q.uid = Some(num("invalid UID\n", args.value(t)?)?);
        } else if matches(t, "fibmatch") {
            q.fibmatch = true;
        } else if t == "as" {
            return Err(ParseError::new(t, "\"as\" is not supported by fibre").soft());
        } else if matches(t, "sport") {
            q.sport = Some(num("invalid sport\n", args.value(t)?)?);
        } else if matches(t, "dport") {
            q.dport = Some(num("invalid dport\n", args.value(t)?)?);
        } else if matches(t, "ipproto") {
            q.ipproto = Some(parse_ipproto(args.value(t)?)?);
        } else {
            let mut v = t;
            if v == "to" {
                v = args.value(t)?;
            }
            // A second destination replaces the first, as in ip, but for `any` and `all`, which
            // send no address (`get_prefix` gives them no bytes, where `default` gets the
            // family's zeros once the family is known): an earlier one stands. Alone, each is
            // the zero address of the family the other addresses settle.
            let (a, len, settled) = read(v)?;
            // ip sends a host's length whatever the word's, with a warning once the family is
            // known (`iproute_get`): `default` is of length 0 then.
            if let Some(f) = settled {
                let host = if f == Family::Inet { 32 } else { 128 };
                if len != host {
                    let only = format!("only /{host} (or none) is supported.");
                    warnings.push(format!("Warning: /{len} as prefix is invalid, {only}"));
                }
            }
            if a.is_some() || v == "default" || dst.is_none() {
                dst = Some(a);
            }
        }
    }
    let dst = dst.ok_or_else(|| ParseError {
        // iproute_get prints it and returns: only this line fails.
        plain: true,
        ..ParseError::bare("need at least a destination address").soft()
    })?;
    q.iif = idev.map(|d| dev_index(router, d)).transpose()?;
    q.oif = odev.map(|d| dev_index(router, d)).transpose()?;
    let dst = dst.unwrap_or(IpPrefix::zero(fam.unwrap_or(Family::Inet)).addr);
    // iproute2 6.1's `connected` asks again with the answer's source, but sends the first
    // request unchanged: without `from` it prints the same answer twice.
    let times = if connected && src.is_none() { 2 } else { 1 };
    Ok(Command::RouteGet {
        query: q.with(dst, src),
        times,
    })
}

/// A listing's `protocol P` (`route show`, `rule flush`): P by name or number, or `all` (no
/// selector).
pub(super) fn protocol_selector(v: &str) -> Result<Option<u8>> {
    match protocol_from_name(v) {
        Some(p) => Ok(Some(p)),
        None if v == "all" => Ok(None),
        None => Err(bad_arg("invalid \"protocol\"\n", v)),
    }
}
