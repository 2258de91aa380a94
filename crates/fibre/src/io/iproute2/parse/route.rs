//! `ip route add|append|prepend|replace|change|del`: route attributes as read, then checked
//! into a route or a selector of its family.
use super::*;

/// Route attributes as read, before the family is known.
#[derive(Default)]
pub(super) struct RouteArgs<'a> {
    pub(super) kind: Option<RouteType>,
    pub(super) dst: Option<(AnyPrefix, &'a str)>,
    pub(super) from: Option<(AnyPrefix, &'a str)>,
    pub(super) tos: Option<u8>,
    pub(super) table: Option<TableId>,
    pub(super) metric: Option<u32>,
    pub(super) protocol: Option<Protocol>,
    pub(super) scope: Option<Scope>,
    pub(super) prefsrc: Option<(IpAddr, &'a str)>,
    pub(super) pref: Option<RouterPref>,
    pub(super) mtu: Option<u32>,
    /// `nhid ID`: the next-hop object.
    pub(super) nhid: Option<u32>,
    /// The single-path next hop, then each `nexthop` clause.
    pub(super) hops: Vec<RawHop<'a>>,
    pub(super) multipath: bool,
}

#[derive(Default, Clone)]
pub(super) struct RawHop<'a> {
    pub(super) via: Option<(IpAddr, &'a str)>,
    pub(super) dev: Option<&'a str>,
    pub(super) weight: Option<u16>,
    pub(super) onlink: bool,
}

impl RawHop<'_> {
    pub(super) fn is_empty(&self) -> bool {
        self.via.is_none() && self.dev.is_none() && self.weight.is_none() && !self.onlink
    }
}

pub(super) fn parse_route_args<'a>(args: &mut Args<'a>) -> Result<RouteArgs<'a>> {
    let mut r = RouteArgs {
        hops: vec![RawHop::default()],
        ..Default::default()
    };
    let mut cur = 0usize;
    while let Some(t) = args.next() {
        // After the first `nexthop` only next hops follow (`parse_nexthops`, `parse_one_nh`):
        // anything else ends ip's batch.
        if r.multipath
            && !["nexthop", "via", "dev", "weight", "onlink", "encap", "as"].contains(&t)
            && !matches(t, "realms")
        {
            return Err(ParseError {
                plain: true,
                ..ParseError::new(
                    t,
                    format!("Error: \"nexthop\" or end of line is expected instead of \"{t}\""),
                )
            });
        }
        if t == "src" {
            let v = args.value(t)?;
            r.prefsrc = Some((
                parse_ip(v)
                    .ok_or_else(|| ParseError::new(v, format!("invalid source address \"{v}\"")))?,
                v,
            ));
        } else if matches(t, "via") {
            let mut v = args.value(t)?;
            if v == "inet" || v == "inet6" {
                v = args.value(t)?;
            }
            r.hops[cur].via = Some((
                parse_ip(v)
                    .ok_or_else(|| ParseError::new(v, format!("invalid gateway \"{v}\"")))?,
                v,
            ));
        } else if t == "from" {
            let v = args.value(t)?;
            r.from = Some((parse_any_prefix(v)?, v));
        } else if matches(t, "tos") || matches(t, "dsfield") {
            r.tos = Some(parse_tos(args.value(t)?, "\"tos\" value is invalid\n")?);
        } else if matches(t, "metric") || matches(t, "priority") || t == "preference" {
            r.metric = Some(num("\"metric\" value is invalid\n", args.value(t)?)?);
        } else if t == "mtu" {
            let mut v = args.value(t)?;
            if v == "lock" {
                v = args.value(t)?;
            }
            r.mtu = Some(num("\"mtu\" value is invalid\n", v)?);
        } else if matches(t, "nexthop") {
            if !r.multipath {
                if !r.hops[0].is_empty() {
                    return Err(ParseError::new(
                        t,
                        "a single next hop cannot be combined with \"nexthop\"",
                    ));
                }
                r.hops.clear();
                r.multipath = true;
            }
            r.hops.push(RawHop::default());
            cur = r.hops.len() - 1;
        } else if t == "weight" {
            if !r.multipath {
                // ip reads a word it does not know here as a second destination.
                return Err(ParseError::new(
                    t,
                    "either \"to\" is duplicate, or \"weight\" is a garbage",
                ));
            }
            let v = args.value(t)?;
            let w: u16 = num("\"weight\" is invalid\n", v)?;
            if !(1..=256).contains(&w) {
                return Err(bad_arg("\"weight\" is invalid\n", v));
            }
            r.hops[cur].weight = Some(w);
        } else if matches(t, "protocol") {
            let v = args.value(t)?;
            r.protocol = Some(
                protocol_from_name(v)
                    .ok_or_else(|| bad_arg("\"protocol\" value is invalid\n", v))?,
            );
        } else if matches(t, "table") {
            let v = args.value(t)?;
            let t = table_from_name(v).ok_or_else(|| bad_arg("\"table\" value is invalid\n", v))?;
            // `fib_new_table` / `fib6_new_table`: table 0 (`unspec`) is main.
            r.table = Some(if t == 0 { TABLE_MAIN } else { t });
        } else if t == "dev" || t == "oif" {
            r.hops[cur].dev = Some(args.value(t)?);
        } else if t == "pref" {
            let v = args.value(t)?;
            r.pref = Some(
                RouterPref::from_name(v)
                    .ok_or_else(|| bad_arg("\"pref\" value is invalid\n", v))?,
            );
        } else if t == "onlink" {
            r.hops[cur].onlink = true;
        } else if matches(t, "scope") {
            let v = args.value(t)?;
            r.scope =
                Some(scope_from_name(v).ok_or_else(|| bad_arg("invalid \"scope\" value\n", v))?);
        } else if t == "nhid" {
            r.nhid = Some(num("\"id\" value is invalid\n", args.value(t)?)?);
        } else if matches(t, "expires")
            || t == "vrf"
            || matches(t, "realms")
            || t == "encap"
            || t == "as"
        {
            return Err(ParseError::new(t, format!("\"{t}\" is not supported by fibre")).soft());
        } else if [
            "advmss",
            "hoplimit",
            "initcwnd",
            "initrwnd",
            "rtt",
            "rttvar",
            "reordering",
            "window",
            "cwnd",
            "ssthresh",
            "features",
            "quickack",
            "congctl",
            "fastopen_no_cookie",
            "rto_min",
        ]
        .contains(&t)
        {
            return Err(ParseError::new(
                t,
                format!("route metric \"{t}\" is not supported by fibre"),
            )
            .soft());
        } else {
            // [to] [TYPE] PREFIX
            let mut v = t;
            if matches(v, "to") && args.peek().is_some() {
                v = args.value(t)?;
            }
            if !v.starts_with(|c: char| c.is_ascii_digit()) {
                if let Some(k) = RouteType::from_name(v) {
                    r.kind = Some(k);
                    v = args.value(v)?;
                }
            }
            if r.dst.is_some() {
                return Err(ParseError::new(
                    v,
                    format!("either \"to\" is duplicate, or \"{v}\" is a garbage"),
                ));
            }
            r.dst = Some((parse_any_prefix(v)?, v));
        }
    }
    if r.dst.is_none() {
        return Err(ParseError::bare("destination prefix is required"));
    }
    Ok(r)
}

impl<'a> RouteArgs<'a> {
    /// The family: the global or line flag, else the first address given, else IPv4.
    pub(super) fn family(&self, flag: Option<Family>) -> Result<Family> {
        let mut seen: Vec<(Family, &str)> = Vec::new();
        let ipfam = |a: &IpAddr| {
            if a.is_ipv4() {
                Family::Inet
            } else {
                Family::Inet6
            }
        };
        if let Some((p, t)) = &self.dst {
            if let Some(f) = p.family() {
                seen.push((f, t));
            }
        }
        if let Some((p, t)) = &self.from {
            if let Some(f) = p.family() {
                seen.push((f, t));
            }
        }
        for h in &self.hops {
            if let Some((a, t)) = &h.via {
                seen.push((ipfam(a), t));
            }
        }
        if let Some((a, t)) = &self.prefsrc {
            seen.push((ipfam(a), t));
        }
        if let (Some(want), Some((p, t))) = (flag, &self.dst) {
            if p.family().is_some_and(|f| f != want) {
                return Err(other_family(want, t));
            }
        }
        let family = flag
            .or_else(|| seen.first().map(|s| s.0))
            .unwrap_or(Family::Inet);
        if let Some((_, t)) = seen.iter().find(|(f, _)| *f != family) {
            // IPv4 routes via an IPv6 gateway (RTA_VIA) are not modelled.
            return Err(ParseError::new(t, format!("\"{t}\": address family mismatch")).soft());
        }
        Ok(family)
    }

    pub(super) fn spec<A: Address>(
        &self,
        router: &Router,
        deleting: bool,
    ) -> Result<(RouteSpec<A>, Vec<NextHop<A>>, bool)> {
        let dst = match &self.dst {
            Some((p, t)) => p.get::<A>(t, A::FAMILY == Family::Inet)?,
            None => Prefix::any(),
        };
        let src = match &self.from {
            Some((p, t)) => p.get::<A>(t, false)?,
            None => Prefix::any(),
        };
        let mut hops = Vec::new();
        for h in &self.hops {
            if h.is_empty() && !self.multipath {
                continue;
            }
            let gateway = match &h.via {
                Some((a, t)) => Some(
                    A::from_ip(*a)
                        .ok_or_else(|| ParseError::new(t, "address family mismatch").soft())?,
                ),
                None => None,
            };
            let dev = match h.dev {
                Some(d) => Some(dev_index(router, d)?),
                None => None,
            };
            hops.push(NextHop {
                gateway,
                dev,
                weight: h.weight.unwrap_or(1),
                onlink: h.onlink,
            });
        }
        let kind = self.kind.unwrap_or(RouteType::Unicast);
        let table = self.table.unwrap_or(match kind {
            RouteType::Local | RouteType::Broadcast | RouteType::Nat | RouteType::Anycast => {
                TABLE_LOCAL
            }
            _ => TABLE_MAIN,
        });
        let has_gw = hops.iter().any(|h| h.gateway.is_some());
        let scope = self.scope.unwrap_or(if A::FAMILY == Family::Inet6 {
            SCOPE_UNIVERSE
        } else {
            match kind {
                RouteType::Local | RouteType::Nat => SCOPE_HOST,
                RouteType::Broadcast | RouteType::Multicast | RouteType::Anycast => SCOPE_LINK,
                RouteType::Unicast if deleting => SCOPE_NOWHERE,
                RouteType::Unicast if !has_gw && !self.multipath && self.nhid.is_none() => {
                    SCOPE_LINK
                }
                _ => SCOPE_UNIVERSE,
            }
        });
        let prefsrc = match &self.prefsrc {
            Some((a, t)) => Some(
                A::from_ip(*a)
                    .ok_or_else(|| ParseError::new(t, "address family mismatch").soft())?,
            ),
            None => None,
        }
        // The kernel takes a source of all zeros for none (`fib_prefsrc` 0, `ipv6_addr_any`).
        .filter(|p| *p != A::unspecified());
        let mut metric = self.metric.unwrap_or(0);
        if A::FAMILY == Family::Inet6 && metric == 0 && !deleting {
            metric = 1024; // IP6_RT_PRIO_USER
        }
        let spec = RouteSpec {
            table,
            dst,
            src,
            tos: self.tos.unwrap_or(0),
            metric,
            kind,
            protocol: self.protocol.unwrap_or(PROTO_BOOT),
            scope,
            prefsrc,
            pref: self.pref.unwrap_or_default(),
            mtu: self.mtu,
            nhid: self.nhid.map(|id| NhObjectRef { id, group: false }),
            hops: hops.clone(),
        };
        Ok((spec, hops, self.multipath))
    }

    pub(super) fn selector<A: Address>(
        &self,
        router: &Router,
    ) -> Result<(TableId, RouteSelector<A>)> {
        let (spec, hops, multipath) = self.spec::<A>(router, true)?;
        let single = (!multipath).then(|| hops.first().copied()).flatten();
        Ok((
            spec.table,
            RouteSelector {
                dst: spec.dst,
                src: spec.src,
                tos: spec.tos,
                metric: self.metric.filter(|m| *m != 0),
                kind: self.kind,
                protocol: self.protocol,
                scope: self.scope,
                prefsrc: spec.prefsrc,
                hops: if multipath { hops } else { Vec::new() },
                dev: single.and_then(|h| h.dev),
                gateway: single.and_then(|h| h.gateway),
                nhid: self.nhid,
                leg: false,
            },
        ))
    }
}

pub(super) fn parse_route(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    // In ip's order, so that abbreviations resolve as ip resolves them ("a" is add).
    let mode = if matches(verb, "add") {
        Some(InsertMode::Add)
    } else if matches(verb, "change") || verb == "chg" {
        Some(InsertMode::Change)
    } else if matches(verb, "replace") {
        Some(InsertMode::Replace)
    } else if matches(verb, "prepend") {
        Some(InsertMode::Prepend)
    } else if matches(verb, "append") {
        Some(InsertMode::Append)
    } else {
        None
    };
    if let Some(mode) = mode {
        let r = parse_route_args(args)?;
        return Ok(Command::Apply(with_family!(r.family(family)?, A => {
            FamilyChange::<A>::Route(r.spec(router, false)?.0, mode).into()
        })));
    }
    if matches(verb, "delete") {
        let r = parse_route_args(args)?;
        return Ok(Command::Apply(with_family!(r.family(family)?, A => {
            let (t, s) = r.selector::<A>(router)?;
            FamilyChange::RouteDel(t, s).into()
        })));
    }
    if matches(verb, "get") {
        return parse_route_get(args, family, router);
    }
    if matches(verb, "show") || matches(verb, "list") || verb == "lst" {
        return Ok(Command::RouteShow(parse_show_filter(args, family, router)?));
    }
    if matches(verb, "flush") {
        if args.peek().is_none() {
            return Err(ParseError {
                plain: true,
                ..ParseError::bare("\"ip route flush\" requires arguments.").soft()
            });
        }
        return Ok(Command::RouteFlush(parse_show_filter(
            args, family, router,
        )?));
    }
    Err(ParseError::new(
        verb,
        format!("Command \"{verb}\" is unknown, try \"ip route help\""),
    ))
}
