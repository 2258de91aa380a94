//! `ip addr`: addresses of either family on a device.
use super::*;

pub(super) fn parse_addr(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    if matches(verb, "show") || matches(verb, "list") {
        return Ok(Command::AddrShow(family));
    }
    let add = matches(verb, "add") || verb == "replace" || verb == "change";
    if !add && !matches(verb, "delete") {
        return Err(ParseError::new(
            verb,
            format!("Command \"{verb}\" is unknown, try \"ip addr help\""),
        ));
    }
    let mut local: Option<(AnyPrefix, &str)> = None;
    let mut dev = None;
    let mut brd: Option<&str> = None;
    let mut metric = None;
    let mut noprefixroute = false;
    let mut scope = None;
    while let Some(t) = args.next() {
        match t {
            "peer" | "remote" => {
                return Err(ParseError::new(t, "peer addresses are not supported by fibre").soft())
            }
            "broadcast" | "brd" => brd = Some(args.value(t)?),
            "anycast" | "label" | "valid_lft" | "preferred_lft" | "proto" => {
                args.value(t)?;
            }
            "scope" => {
                let v = args.value(t)?;
                scope = Some(scope_from_name(v).ok_or_else(|| bad_arg("invalid scope value.", v))?);
            }
            "metric" | "priority" => metric = Some(num::<u32>("metric", args.value(t)?)?),
            "noprefixroute" => noprefixroute = true,
            "nodad" | "home" | "mngtmpaddr" | "optimistic" | "noautojoin" | "autojoin" => {}
            "dev" => dev = Some(args.value(t)?),
            "local" => {
                let v = args.value(t)?;
                local = Some((parse_any_prefix(v)?, v));
            }
            other if local.is_none() => local = Some((parse_any_prefix(other)?, other)),
            other => {
                return Err(ParseError::new(
                    other,
                    format!("\"{other}\" is unknown or duplicate"),
                ))
            }
        }
    }
    let (p, tok) = local
        .ok_or_else(|| ParseError::bare("Not enough information: \"local\" address is required"))?;
    let dev_name = dev
        .ok_or_else(|| ParseError::bare("Not enough information: \"dev\" argument is required"))?;
    let dev = dev_index(router, dev_name)?;
    let AnyPrefix::Addr(ip, len) = p else {
        return Err(ParseError::new(tok, "an address is expected"));
    };
    let fam = Family::of(&ip);
    if family.is_some_and(|f| f != fam) {
        return Err(ParseError::new(tok, "address family mismatch").soft());
    }
    // ip gives 127/8 host scope and other IPv4 addresses global scope (`default_scope`); the
    // kernel takes an IPv6 address's scope from the address, whatever ip sends.
    let scope = match ip {
        IpAddr::V4(a) => scope.unwrap_or(if a.is_loopback() {
            SCOPE_HOST
        } else {
            SCOPE_UNIVERSE
        }),
        IpAddr::V6(a) => crate::link::ipv6_scope(a),
    };
    with_family!(fam, A => {
        let addr = A::from_ip(ip).expect("of the family");
        // Only IPv4 addresses have a broadcast address (ip sends none for IPv6).
        let broadcast = match brd.filter(|_| fam == Family::Inet) {
            None | Some("-") => None,
            Some("+") => (len < 31).then(|| Prefix::new(addr, len).last()),
            Some(b) => Some(addr_of::<A>(b)?),
        };
        let ifa = IfAddr {
            addr,
            len,
            dev,
            broadcast,
            noprefixroute,
            metric,
            scope,
        };
        Ok(Command::Apply(if add {
            FamilyChange::AddrAdd(ifa).into()
        } else {
            FamilyChange::AddrDel(ifa).into()
        }))
    })
}
