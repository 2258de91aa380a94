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
    while let Some(t) = args.next() {
        match t {
            "peer" | "remote" => {
                return Err(ParseError::new(t, "peer addresses are not supported by fibre").soft())
            }
            "broadcast" | "brd" => brd = Some(args.value(t)?),
            "anycast" | "label" | "scope" | "valid_lft" | "preferred_lft" | "proto" => {
                args.value(t)?;
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
    match p {
        AnyPrefix::V4(a, len) => {
            if family == Some(Family::Inet6) {
                return Err(ParseError::new(tok, "address family mismatch").soft());
            }
            let subnet = Prefix::new(a, len);
            let broadcast = match brd {
                None | Some("-") => None,
                Some("+") => (len < 31).then(|| subnet.last()),
                Some(b) => Some(addr_of::<Ipv4Addr>(b)?),
            };
            let ifa = IfAddr {
                addr: a,
                len,
                dev,
                broadcast,
                noprefixroute,
                metric,
            };
            Ok(Command::Apply(if add {
                Change::AddrAdd4(ifa)
            } else {
                Change::AddrDel4(ifa)
            }))
        }
        AnyPrefix::V6(a, len) => {
            if family == Some(Family::Inet) {
                return Err(ParseError::new(tok, "address family mismatch").soft());
            }
            let ifa = IfAddr {
                addr: a,
                len,
                dev,
                broadcast: None,
                noprefixroute,
                metric,
            };
            Ok(Command::Apply(if add {
                Change::AddrAdd6(ifa)
            } else {
                Change::AddrDel6(ifa)
            }))
        }
        AnyPrefix::Default => Err(ParseError::new(tok, "an address is expected")),
    }
}
