//! `ip nexthop add|replace|del|show|get|flush`: next-hop objects.
use super::*;
use crate::nexthop::{GroupMember, NhObject, NhObjectKind};

/// What `nexthop show` and `nexthop flush` select (the kernel's `nh_dump_filtered`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NexthopFilter {
    /// `-4` / `-6`: single next hops and blackholes of that family; never groups.
    pub family: Option<Family>,
    /// `id ID` (and `get id ID`): that object alone; an unknown id is an error.
    pub id: Option<u32>,
    /// `dev DEV`: single next hops on DEV (`lo` has the blackholes); never groups.
    pub dev: Option<IfIndex>,
    /// `groups`: groups only.
    pub groups: bool,
    /// `protocol P`.
    pub protocol: Option<Protocol>,
}

/// `ID[,WEIGHT]/...`.
fn parse_group(tok: &str) -> Result<Vec<GroupMember>> {
    tok.split('/')
        .map(|m| {
            let (id, weight) = match m.split_once(',') {
                Some((i, w)) => (i, Some(w)),
                None => (m, None),
            };
            // ip cuts the token at each member's separators as it reads it, so it names what
            // is left before the first one, whichever member it could not read.
            let shown = tok.split(['/', ',']).next().unwrap_or(tok);
            let id = num_in("\"group\" value is invalid\n", id, shown)?;
            let weight = match weight {
                None => 1,
                Some(w) => match w.parse::<u16>() {
                    Ok(w) if (1..=256).contains(&w) => w,
                    _ => return Err(bad_arg("\"weight\" is invalid\n", w)),
                },
            };
            Ok(GroupMember { id, weight })
        })
        .collect()
}

/// A gateway in the family of the line: ip ends on an address of the other one.
fn gateway_in(family: Family, tok: &str) -> Result<IpAddr> {
    match parse_ip(tok) {
        Some(a) if Family::of(&a) == family => Ok(a),
        _ => Err(other_family_as(family, "address", tok)),
    }
}

fn parse_add(
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
    replace: bool,
) -> Result<Command> {
    let mut id = 0u32;
    let mut via: Option<(IpAddr, &str)> = None;
    let mut dev = None;
    let mut onlink = false;
    let mut blackhole = false;
    let mut group = None;
    let mut protocol = PROTO_UNSPEC;
    // The object's family as ip sets it while it reads the words (`ipnh_modify`): -4/-6,
    // else the first gateway's, or IPv4 once `dev` or `blackhole` is read. A gateway is read
    // in it.
    let mut read_in = family;
    while let Some(t) = args.next() {
        if t == "id" {
            id = num("invalid id value", args.value(t)?)?;
        } else if matches(t, "via") {
            // A family named before the address is the one ip reads it in (`read_family`).
            let (named, v) = via_words(args, t)?;
            let a = match named.or(read_in) {
                Some(f) => gateway_in(f, v)?,
                None => parse_ip(v).ok_or_else(|| address_expected(None, v))?,
            };
            match read_in {
                Some(f) if f != Family::of(&a) => {
                    return Err(bad_arg("address family mismatch\n", v));
                }
                _ => read_in = Some(Family::of(&a)),
            }
            via = Some((a, v));
        } else if t == "dev" {
            dev = Some(dev_index(router, args.value(t)?)?);
            read_in = read_in.or(Some(Family::Inet));
        } else if t == "onlink" {
            onlink = true;
        } else if t == "blackhole" {
            blackhole = true;
            read_in = read_in.or(Some(Family::Inet));
        } else if t == "group" {
            group = Some(parse_group(args.value(t)?)?);
        } else if t == "type" {
            let v = args.value(t)?;
            if v != "mpath" {
                return Err(ParseError::new(
                    v,
                    format!("next-hop groups of type \"{v}\" are not modelled by fibre"),
                )
                .soft());
            }
        } else if matches(t, "protocol") {
            let v = args.value(t)?;
            protocol = protocol_from_name(v)
                .ok_or_else(|| bad_arg("\"protocol\" value is invalid\n", v))?;
        } else if t == "fdb" || t == "encap" || t == "vrf" || t == "hw_stats" {
            return Err(ParseError::not_modelled(t));
        } else {
            // ip's `invarg("", word)`.
            return Err(bad_arg("", t));
        }
    }
    // `rtm_to_nh_config`'s checks of a blackhole, which holds no device or gateway (a group
    // is checked first, by the router).
    if blackhole && group.is_none() {
        if via.is_some() || dev.is_some() {
            let e = "Blackhole attribute can not be used with gateway, oif, encap or fdb";
            return Err(ParseError::bare(e).soft());
        }
        if onlink {
            // The kernel checks the blackhole as a hop on `lo` without a gateway.
            let e = "Invalid flags for nexthop - PERVASIVE and ONLINK can not be set";
            return Err(ParseError::bare(e).soft());
        }
    }
    if group.is_some() && read_in.is_some() {
        // ip sends -4/-6 (or what `dev`, `via` or `blackhole` set) as the group's family,
        // which the kernel refuses.
        return Err(ParseError::bare("Invalid family for group").soft());
    }
    // ip's family: -4/-6, else the gateway's; a group is of its members' family, which the
    // router knows; a device or a blackhole alone is IPv4.
    let fam = family
        .or(via.map(|(a, _)| Family::of(&a)))
        .or_else(|| {
            group
                .as_ref()
                .and_then(|g| g.iter().find_map(|m| router.object_family(m.id)))
        })
        .unwrap_or(Family::Inet);
    Ok(Command::Apply(with_family!(fam, A => {
        let kind = if let Some(members) = group {
            NhObjectKind::Group(members)
        } else if blackhole {
            NhObjectKind::Blackhole
        } else {
            NhObjectKind::Hop {
                hop: NextHop {
                    gateway: via.map(|(a, _)| A::from_ip(a).expect("of the family")),
                    dev,
                    weight: 1,
                    onlink,
                },
                scope: SCOPE_UNIVERSE,
            }
        };
        FamilyChange::NexthopAdd(NhObject::<A> { id, protocol, kind }, replace).into()
    })))
}

fn parse_filter(
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<NexthopFilter> {
    let mut f = NexthopFilter {
        family,
        ..Default::default()
    };
    while let Some(t) = args.next() {
        if t == "id" {
            f.id = Some(num("invalid id value", args.value(t)?)?);
        } else if t == "dev" {
            f.dev = Some(dev_index(router, args.value(t)?)?);
        } else if t == "groups" {
            f.groups = true;
        } else if matches(t, "protocol") {
            f.protocol = Some(num("invalid protocol value", args.value(t)?)?);
        } else {
            // ip's `invarg("", word)`.
            return Err(bad_arg("", t));
        }
    }
    Ok(f)
}

/// `id ID`, which `del` and `get` need.
fn required_id(args: &mut Args<'_>, verb: &str) -> Result<u32> {
    match (args.next(), args.peek()) {
        (Some("id"), Some(_)) => {
            let v = args.value("id")?;
            let id = num("invalid id value", v)?;
            if id == 0 && verb == "get" {
                return Err(ParseError::new(v, "an id other than 0 is required"));
            }
            Ok(id)
        }
        (Some(t), _) => Err(ParseError::new(
            t,
            format!("\"{t}\" is unknown; \"id ID\" is required"),
        )),
        (None, _) => Err(ParseError::bare("\"id ID\" is required")),
    }
}

pub(super) fn parse_nexthop(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    if matches(verb, "add") {
        return parse_add(args, family, router, false);
    }
    if matches(verb, "replace") {
        return parse_add(args, family, router, true);
    }
    if matches(verb, "delete") {
        let id = required_id(args, "del")?;
        let fam = router.object_family(id).unwrap_or(Family::Inet);
        return Ok(Command::Apply(with_family!(fam, A => {
            FamilyChange::<A>::NexthopDel(id).into()
        })));
    }
    if matches(verb, "list") || matches(verb, "show") || matches(verb, "lst") {
        return Ok(Command::NexthopShow(parse_filter(args, family, router)?));
    }
    if matches(verb, "get") {
        let id = required_id(args, "get")?;
        return Ok(Command::NexthopShow(NexthopFilter {
            id: Some(id),
            ..Default::default()
        }));
    }
    if matches(verb, "flush") {
        return Ok(Command::NexthopFlush(parse_filter(args, family, router)?));
    }
    Err(unknown_command(verb, "nexthop"))
}
