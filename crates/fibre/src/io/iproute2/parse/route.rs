//! `ip route add|append|prepend|replace|change|del`: route attributes as read, then checked
//! into a route or a selector of its family.
use super::*;
use crate::router::DEVICE_ONLY_LEG;

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
    /// The single-path next hop, or each `nexthop` clause.
    pub(super) hops: Vec<RawHop<'a>>,
    pub(super) multipath: bool,
    /// With `nexthop` clauses, the `via`, `dev` and `onlink` given before them.
    pub(super) top: RawHop<'a>,
    /// `top`'s device, looked up where ip looks it up (before the legs).
    pub(super) top_dev: Option<IfIndex>,
    /// The family as ip reads it: `-4`/`-6`, else the first address or prefix given (see
    /// `settle`); IPv4 when none is.
    pub(super) family: Option<Family>,
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

impl RouteArgs<'_> {
    /// An address or prefix (`what`) of family `f` read: the first decides the family, where
    /// `-4`/`-6` did not, and one of the other family ends ip's batch there (`get_addr`,
    /// `get_prefix`), in the order of the words.
    fn settle(&mut self, f: Family, what: &str, tok: &str) -> Result<()> {
        match self.family {
            None => self.family = Some(f),
            Some(want) if want != f => return Err(other_family_as(want, what, tok)),
            Some(_) => {}
        }
        Ok(())
    }
}

/// Reads a route's words as ip does, in their order: the family settled as addresses come,
/// the device before the `nexthop` legs looked up before them, each leg's device as it comes
/// (`iproute_modify`, `parse_one_nh`).
pub(super) fn parse_route_args<'a>(
    args: &mut Args<'a>,
    flag: Option<Family>,
    router: &Router,
) -> Result<RouteArgs<'a>> {
    let mut r = RouteArgs {
        hops: vec![RawHop::default()],
        family: flag,
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
                .exit_minus_one()
            });
        }
        if t == "src" {
            let v = args.value(t)?;
            let a = parse_ip(v).ok_or_else(|| address_expected(r.family, v))?;
            r.settle(Family::of(&a), "address", v)?;
            r.prefsrc = Some((a, v));
        } else if t == "via" {
            if !r.multipath && r.hops[cur].via.is_some() {
                return Err(bad_arg("use nexthop syntax to specify multiple via\n", t));
            }
            let (named, v) = via_words(args, t)?;
            let a = parse_ip(v).ok_or_else(|| address_expected(named.or(r.family), v))?;
            match named {
                Some(f) if f != Family::of(&a) => return Err(other_family_as(f, "address", v)),
                // A gateway whose family is named and is not the route's goes as `RTA_VIA`,
                // for the kernel to refuse or take (see `spec`).
                Some(f) if r.family.is_some_and(|want| want != f) => {}
                _ => r.settle(Family::of(&a), "address", v)?,
            }
            r.hops[cur].via = Some((a, v));
        } else if t == "from" {
            let v = args.value(t)?;
            let from = parse_any_prefix(v)?;
            if let Some(f) = from.family() {
                r.settle(f, "prefix", v)?;
            }
            r.from = Some((from, v));
        } else if t == "tos" || matches(t, "dsfield") {
            // `tos` whole, as ip takes it: `to` is the destination's word.
            r.tos = Some(parse_tos(args.value(t)?, "\"tos\" value is invalid\n")?);
        } else if matches(t, "metric") || matches(t, "priority") || t == "preference" {
            r.metric = Some(num("\"metric\" value is invalid\n", args.value(t)?)?);
        } else if t == "mtu" {
            let mut v = args.value(t)?;
            if v == "lock" {
                v = args.value(t)?;
            }
            r.mtu = Some(num("\"mtu\" value is invalid\n", v)?);
        } else if t == "nexthop" {
            if !r.multipath {
                // A `via`, `dev` or `onlink` before the legs is the request's own
                // (`RTA_GATEWAY`, `RTA_OIF`, `rtm_flags`: see `spec`); ip looks the device up
                // before it reads the legs.
                r.top = r.hops.pop().unwrap_or_default();
                r.top_dev = r.top.dev.map(|d| dev_index(router, d)).transpose()?;
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
                )
                .exit_minus_one());
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
            let d = args.value(t)?;
            if r.multipath && dev_index(router, d).is_err() {
                // A leg's device is looked up as the leg is read, and one not there ends ip's
                // batch (`parse_nexthops`).
                return Err(ParseError {
                    errno: Errno::ENODEV,
                    plain: true,
                    ..ParseError::new(
                        d,
                        format!("Cannot find device \"{d}\"\nError: cannot parse nexthop"),
                    )
                    .exit_minus_one()
                });
            }
            r.hops[cur].dev = Some(d);
        } else if matches(t, "pref") {
            let v = args.value(t)?;
            r.pref = Some(
                RouterPref::from_name(v)
                    .ok_or_else(|| bad_arg("\"pref\" value is invalid\n", v))?,
            );
        } else if t == "onlink" {
            r.hops[cur].onlink = true;
        } else if t == "scope" {
            let v = args.value(t)?;
            r.scope =
                Some(scope_from_name(v).ok_or_else(|| bad_arg("invalid \"scope\" value\n", v))?);
        } else if t == "nhid" {
            r.nhid = Some(num("\"id\" value is invalid\n", args.value(t)?)?);
        } else if t == "vrf" {
            r.table = Some(vrf_table(router, args.value(t)?)?);
        } else if t == "expires" || matches(t, "realms") || t == "encap" || t == "as" {
            return Err(ParseError::not_modelled(t));
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
                if let Some(k) = route_type_from_word(v) {
                    r.kind = Some(k);
                    v = args.value(v)?;
                }
            }
            if r.dst.is_some() {
                return Err(ParseError::new(
                    v,
                    format!("either \"to\" is duplicate, or \"{v}\" is a garbage"),
                )
                .exit_minus_one());
            }
            let dst = parse_any_prefix(v)?;
            if let Some(f) = dst.family() {
                r.settle(f, "prefix", v)?;
            }
            r.dst = Some((dst, v));
        }
    }
    if r.dst.is_none() {
        return Err(ParseError::bare("destination prefix is required"));
    }
    Ok(r)
}

impl<'a> RouteArgs<'a> {
    /// The family (see `settle`).
    pub(super) fn family(&self) -> Family {
        self.family.unwrap_or(Family::Inet)
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
        // A gateway of the other family, whose family was named (see `parse_route_args`): ip
        // sends it as `RTA_VIA`, once it has found every device. The request's own (before
        // the legs) too.
        let mut via_other_family = (self.top.via)
            .filter(|(a, _)| A::from_ip(*a).is_none())
            .map(|(_, t)| t);
        // An IPv6 leg takes the request's gateway, device and onlink where it has none
        // (`ip6_route_multipath_add` starts each leg from the request's config); IPv4 holds
        // them to its first leg below (`fib_get_nhs`), and a deletion to the route's first
        // (`selector`).
        let legs = self.hops.iter().map(|h| match A::FAMILY {
            Family::Inet6 if self.multipath => RawHop {
                via: h.via.or(self.top.via),
                dev: h.dev.or(self.top.dev),
                onlink: h.onlink || self.top.onlink,
                ..*h
            },
            _ => h.clone(),
        });
        for h in legs {
            if h.is_empty() && !self.multipath {
                continue;
            }
            let gateway = match &h.via {
                Some((a, t)) => {
                    let gateway = A::from_ip(*a);
                    // In an IPv6 leg, `ip6_route_multipath_add` reads `RTA_GATEWAY` alone: the
                    // leg is one without a gateway.
                    if gateway.is_none() && !(A::FAMILY == Family::Inet6 && self.multipath) {
                        via_other_family = via_other_family.or(Some(*t));
                    }
                    gateway
                }
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
        if A::FAMILY == Family::Inet && self.multipath && !deleting && self.nhid.is_none() {
            let first = self.hops.first();
            if self
                .top_dev
                .is_some_and(|d| hops.first().and_then(|h| h.dev) != Some(d))
            {
                return Err(ParseError::bare("Nexthop device index does not match RTA_OIF").soft());
            }
            let first_via = first.and_then(|h| h.via).map(|(a, _)| a);
            if self.top.via.is_some_and(|(a, _)| first_via != Some(a)) {
                return Err(ParseError::bare(
                    "Nexthop gateway does not match RTA_GATEWAY or RTA_VIA",
                )
                .soft());
            }
        }
        if let Some(t) = via_other_family {
            return Err(if A::FAMILY == Family::Inet {
                ParseError::new(
                    t,
                    "an IPv4 route via an IPv6 gateway (RFC 5549) is not modelled by fibre",
                )
            } else {
                // `rtm_to_fib6_config`.
                ParseError::bare("IPv6 does not support RTA_VIA attribute")
            }
            .soft());
        }
        let kind = self.kind.unwrap_or(RouteType::Unicast);
        // The kernel refuses an IPv6 multipath leg without a gateway, after the checks of tos
        // and nhid: the router does for routes of several legs, where a route of one is told
        // apart from a plain one only here.
        if A::FAMILY == Family::Inet6
            && self.multipath
            && !deleting
            && hops.len() == 1
            && hops[0].gateway.is_none()
            && self.nhid.is_none()
            && self.tos.unwrap_or(0) == 0
        {
            return Err(ParseError::bare(DEVICE_ONLY_LEG).soft());
        }
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
            // Of the route's family: `parse_route_args` settled it.
            Some((a, t)) => {
                Some(A::from_ip(*a).ok_or_else(|| other_family_as(A::FAMILY, "address", t))?)
            }
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
        // An IPv4 deletion that gives a gateway or device before its legs matches them with
        // the route's first next hop, not its legs (`fib_nh_match`).
        let top = A::FAMILY == Family::Inet
            && multipath
            && (self.top.dev.is_some() || self.top.via.is_some());
        let single = if top {
            Some(NextHop {
                gateway: self.top.via.and_then(|(a, _)| A::from_ip(a)),
                dev: self.top_dev,
                weight: 1,
                onlink: false,
            })
        } else {
            (!multipath).then(|| hops.first().copied()).flatten()
        };
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
                hops: if multipath && !top { hops } else { Vec::new() },
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
    warnings: &mut Vec<String>,
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
        let r = parse_route_args(args, family, router)?;
        return Ok(Command::Apply(with_family!(r.family(), A => {
            FamilyChange::<A>::Route(r.spec(router, false)?.0, mode).into()
        })));
    }
    if matches(verb, "delete") {
        let r = parse_route_args(args, family, router)?;
        return Ok(Command::Apply(with_family!(r.family(), A => {
            let (t, s) = r.selector::<A>(router)?;
            FamilyChange::RouteDel(t, s).into()
        })));
    }
    if matches(verb, "get") {
        return parse_route_get(args, family, router, warnings);
    }
    if matches(verb, "list") || matches(verb, "show") || matches(verb, "lst") {
        return Ok(Command::RouteShow(parse_show_filter(args, family, router)?));
    }
    if matches(verb, "flush") {
        if args.peek().is_none() {
            return Err(ParseError::plain("\"ip route flush\" requires arguments.").soft());
        }
        return Ok(Command::RouteFlush(parse_show_filter(
            args, family, router,
        )?));
    }
    Err(unknown_command(verb, "route"))
}
