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
    // `replace` and `change` ask the kernel to update an address that is there (NLM_F_REPLACE)
    // and add one that is not (both kernels add without NLM_F_CREATE).
    let replace = verb == "replace" || verb == "change";
    let add = matches(verb, "add") || replace;
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
    let (mut valid_lft, mut preferred_lft) = (None, None);
    while let Some(t) = args.next() {
        match t {
            "peer" | "remote" => {
                return Err(ParseError::new(t, "peer addresses are not supported by fibre").soft())
            }
            "broadcast" | "brd" => brd = Some(args.value(t)?),
            "anycast" | "label" | "proto" => {
                args.value(t)?;
            }
            "valid_lft" => valid_lft = Some(lifetime(t, valid_lft, args)?),
            "preferred_lft" => preferred_lft = Some(lifetime(t, preferred_lft, args)?),
            "scope" => {
                let v = args.value(t)?;
                scope = Some(scope_from_name(v).ok_or_else(|| bad_arg("invalid scope value.", v))?);
            }
            "metric" | "priority" => {
                metric = Some(num::<u32>("\"metric\" value is invalid\n", args.value(t)?)?)
            }
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
    // ip's own checks, once either lifetime is given and the device is known (`ipaddr_modify`);
    // both default to forever. A preferred lifetime of 0 deprecates the address at once; a
    // finite one is kept as forever (fibre has no clock; a mirror follows the kernel's word
    // when it runs out).
    if valid_lft.is_some() || preferred_lft.is_some() {
        let (valid, preferred) = (
            valid_lft.unwrap_or(u32::MAX),
            preferred_lft.unwrap_or(u32::MAX),
        );
        let plain = |m: &str| ParseError {
            plain: true,
            ..ParseError::bare(m).soft()
        };
        if valid == 0 {
            return Err(plain("valid_lft is zero"));
        }
        if valid < preferred {
            return Err(plain("preferred_lft is greater than valid_lft"));
        }
        // An address that expires is not permanent, and the kernel's prefix routes follow
        // that (`IFA_F_PERMANENT`: taken back, kept or let expire by other rules, shown with
        // `expires`): not modelled, so refused rather than answered otherwise.
        if valid != u32::MAX {
            return Err(ParseError::new(tok, "a finite valid_lft is not modelled by fibre").soft());
        }
    }
    let deprecated = preferred_lft == Some(0);
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
            deprecated,
        };
        Ok(Command::Apply(if replace {
            FamilyChange::AddrReplace(ifa).into()
        } else if add {
            FamilyChange::AddrAdd(ifa).into()
        } else {
            FamilyChange::AddrDel(ifa).into()
        }))
    })
}

/// A lifetime in seconds, or `forever` (`set_lifetime`); a second one is ip's `duparg`, before
/// its value is read.
fn lifetime(keyword: &str, before: Option<u32>, args: &mut Args<'_>) -> Result<u32> {
    if before.is_some() {
        return Err(ParseError::new(
            keyword,
            format!("duplicate \"{keyword}\": \"{keyword}\" is the second value"),
        ));
    }
    let value = args.value(keyword)?;
    if value == "forever" {
        return Ok(u32::MAX);
    }
    parse_u32(value).ok_or_else(|| bad_arg(&format!("{keyword} value"), value))
}
