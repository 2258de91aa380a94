//! `ip addr`: addresses of either family on a device.
use super::*;

/// `ip addr`'s verbs; `warnings` takes what ip prints on standard error as it reads the words
/// (its flags' warnings).
pub(super) fn parse_addr(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
    warnings: &mut Vec<String>,
) -> Result<Command> {
    if matches(verb, "list") || matches(verb, "show") || matches(verb, "lst") {
        return Ok(Command::AddrShow(family));
    }
    // `replace` and `change` ask the kernel to update an address that is there (NLM_F_REPLACE)
    // and add one that is not (both kernels add without NLM_F_CREATE).
    let replace = verb == "replace" || verb == "change";
    let add = matches(verb, "add") || replace;
    if !add && !matches(verb, "delete") {
        return Err(unknown_command(verb, "address"));
    }
    // ip's family: -4/-6, else the first address read (a broadcast or anycast address too); an
    // address of the other family ends the batch (`get_addr`, `get_prefix`).
    let mut family = family;
    let mut local: Option<(AnyPrefix, &str)> = None;
    let mut dev = None;
    let mut brd: Option<&str> = None;
    let mut anycast = false;
    let mut metric = None;
    let mut noprefixroute = false;
    let mut scope = None;
    let (mut valid_lft, mut preferred_lft) = (None, None);
    // In the order ip tries its words (`ipaddr_modify`), so that abbreviations resolve as there
    // (`b` is broadcast, `pref` and `prefe` a metric, `preferr` preferred_lft).
    while let Some(t) = args.next() {
        if t == "peer" || t == "remote" {
            return Err(ParseError::new(t, "peer addresses are not supported by fibre").soft());
        } else if matches(t, "broadcast") || t == "brd" {
            let v = args.value(t)?;
            if brd.is_some() {
                return Err(duplicate("broadcast", v));
            }
            if v != "+" && v != "-" {
                family = Some(family_of_address(family, v)?);
            }
            brd = Some(v);
        } else if t == "anycast" {
            let v = args.value(t)?;
            if anycast {
                return Err(duplicate("anycast", v));
            }
            family = Some(family_of_address(family, v)?);
            anycast = true;
        } else if t == "scope" {
            let v = args.value(t)?;
            scope = Some(scope_from_name(v).ok_or_else(|| bad_arg("invalid scope value.", v))?);
        } else if t == "dev" {
            dev = Some(args.value(t)?);
        } else if t == "label" {
            args.value(t)?;
        } else if matches(t, "metric") || matches(t, "priority") || matches(t, "preference") {
            metric = Some(num::<u32>("\"metric\" value is invalid\n", args.value(t)?)?)
        } else if matches(t, "valid_lft") {
            valid_lft = Some(lifetime("valid_lft", t, valid_lft, args)?);
        } else if matches(t, "preferred_lft") {
            preferred_lft = Some(lifetime("preferred_lft", t, preferred_lft, args)?);
        } else if let Some(&(name, readonly, v6only)) = ADDR_FLAGS.iter().find(|f| f.0 == t) {
            // ip's flags by their whole names (`ifa_flag_data`); fibre models `noprefixroute`.
            if readonly {
                warnings.push(format!(
                    "Warning: {name} option is not mutable from userspace"
                ));
            } else if v6only && family != Some(Family::Inet6) {
                warnings.push(format!(
                    "Warning: {name} option can be set only for IPv6 addresses"
                ));
            } else if name == "noprefixroute" {
                noprefixroute = true;
            }
        } else {
            let v = if t == "local" { args.value(t)? } else { t };
            if local.is_some() {
                return Err(ParseError::new(
                    v,
                    format!("either \"local\" is duplicate, or \"{v}\" is a garbage"),
                )
                .exit_minus_one());
            }
            let p = match (parse_any_prefix(v), family) {
                (Err(_), Some(want)) => return Err(other_family(want, v)),
                (p, _) => p?,
            };
            match (p.family(), family) {
                (Some(f), Some(want)) if f != want => return Err(other_family(want, v)),
                (Some(f), None) => family = Some(f),
                _ => {}
            }
            local = Some((p, v));
        }
    }
    // ip says so and returns: only this line fails.
    let dev_name = dev.ok_or_else(|| {
        ParseError::plain("Not enough information: \"dev\" argument is required.").soft()
    })?;
    let (p, tok) = local
        .ok_or_else(|| ParseError::bare("Not enough information: \"local\" address is required"))?;
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
        let plain = |m: &str| ParseError::plain(m).soft();
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
    // `addr del A` of IPv4 without a length: ip warns and sends no IFA_ADDRESS, so the kernel
    // deletes the first address A on the device whatever its length (`inet_rtm_deladdr`).
    let wildcard = !add && fam == Family::Inet && !tok.contains('/');
    if wildcard {
        warnings.extend([
            "Warning: Executing wildcard deletion to stay compatible with old scripts.".into(),
            format!(
                "         Explicitly specify the prefix length ({tok}/32) to avoid this warning."
            ),
            "         This special behaviour is likely to disappear in further releases,".into(),
            "         fix your scripts!".into(),
        ]);
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
        let len = match wildcard {
            true => crate::link::ipv4_list_order(router.family::<A>().addrs(), dev)
                .into_iter()
                .find(|o| o.addr == addr)
                .map_or(len, |o| o.len),
            false => len,
        };
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
fn lifetime(keyword: &str, word: &str, before: Option<u32>, args: &mut Args<'_>) -> Result<u32> {
    if before.is_some() {
        return Err(duplicate(keyword, word));
    }
    let value = args.value(word)?;
    if value == "forever" {
        return Ok(u32::MAX);
    }
    parse_u32(value).ok_or_else(|| bad_arg(&format!("{keyword} value"), value))
}

/// ip's address flags by name (`ifa_flag_data`): whether the kernel alone sets it (ip warns and
/// sends nothing), and whether it is IPv6's only (ip warns unless the family is IPv6 so far).
const ADDR_FLAGS: &[(&str, bool, bool)] = &[
    ("secondary", true, false),
    ("temporary", true, false),
    ("nodad", false, true),
    ("optimistic", false, true),
    ("dadfailed", true, true),
    ("home", false, true),
    ("deprecated", true, true),
    ("tentative", true, true),
    ("permanent", true, true),
    ("mngtmpaddr", false, true),
    ("noprefixroute", false, false),
    ("autojoin", false, false),
    ("stable-privacy", true, true),
];
