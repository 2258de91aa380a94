//! `ip link`: veth pairs, up and down, removal.
use super::*;

pub(super) fn parse_link(verb: &str, args: &mut Args<'_>, router: &Router) -> Result<Command> {
    if matches(verb, "add") {
        let mut name = None;
        let mut peer = None;
        let mut kind = None;
        while let Some(t) = args.next() {
            match t {
                "name" => name = Some(args.value(t)?.to_string()),
                "type" => {
                    let k = args.value(t)?;
                    if k != "veth" {
                        return Err(ParseError::new(
                            k,
                            format!("link type \"{k}\" is not supported (this kernel has veth)"),
                        )
                        .soft());
                    }
                    kind = Some(k);
                    // Type arguments: `peer [name] NAME`.
                    while let Some(p) = args.next() {
                        match p {
                            "peer" => {}
                            "name" => peer = Some(args.value(p)?.to_string()),
                            "address" | "addr" => {
                                args.value(p)?;
                            }
                            other if peer.is_none() => peer = Some(other.to_string()),
                            other => {
                                return Err(ParseError::new(
                                    other,
                                    format!("unknown veth argument \"{other}\""),
                                ))
                            }
                        }
                    }
                }
                "address" | "addr" | "mtu" | "txqueuelen" => {
                    args.value(t)?;
                }
                "dev" => name = Some(args.value(t)?.to_string()),
                other if name.is_none() => name = Some(other.to_string()),
                other => return Err(ParseError::new(other, format!("\"{other}\" is invalid"))),
            }
        }
        let name = name.ok_or_else(|| ParseError::bare("link add needs a name"))?;
        if kind.is_none() {
            // `iplink_modify` says so and returns: only this line fails.
            return Err(
                ParseError::plain("Not enough information: \"type\" argument is required").soft(),
            );
        }
        let peer = peer.ok_or_else(|| ParseError::bare("veth needs \"peer name NAME\""))?;
        check_ifname(&name)?;
        check_ifname(&peer)?;
        return Ok(Command::Apply(Change::LinkAddVeth { name, peer }));
    }
    if matches(verb, "set") {
        let mut dev = None;
        let mut up = None;
        while let Some(t) = args.next() {
            match t {
                "up" => up = Some(true),
                "down" => up = Some(false),
                "dev" => dev = Some(args.value(t)?),
                other if dev.is_none() => dev = Some(other),
                other => {
                    return Err(ParseError::new(
                        other,
                        format!("\"{other}\" is not supported by fibre's link set"),
                    )
                    .soft())
                }
            }
        }
        // ip's words, then `exit(-1)`.
        let dev = dev.ok_or_else(|| {
            ParseError::plain("Not enough information: \"dev\" argument is required.")
                .exit_minus_one()
        })?;
        let dev = dev_index(router, dev)?;
        let up = up.ok_or_else(|| ParseError::bare("link set needs up or down"))?;
        return Ok(Command::Apply(Change::LinkSet { dev, up }));
    }
    if matches(verb, "delete") {
        let mut dev = None;
        while let Some(t) = args.next() {
            match t {
                "dev" => dev = Some(args.value(t)?),
                "type" => {
                    args.value(t)?;
                }
                other => dev = Some(other),
            }
        }
        // ip's words, then `exit(-1)`.
        let dev = dev.ok_or_else(|| {
            ParseError::plain("Not enough information: \"dev\" argument is required.")
                .exit_minus_one()
        })?;
        return Ok(Command::Apply(Change::LinkDel {
            dev: dev_index(router, dev)?,
        }));
    }
    if matches(verb, "show") || matches(verb, "lst") || matches(verb, "list") {
        return Ok(Command::LinkShow);
    }
    Err(unknown_command(verb, "link"))
}

pub(super) fn check_ifname(name: &str) -> Result<()> {
    if !ip_valid_ifname(name) || name == "." || name == ".." {
        return Err(ParseError::new(
            name,
            format!("\"{name}\" is not a valid ifname"),
        ));
    }
    Ok(())
}

/// A device name as ip's `check_ifname` takes one (as the kernel's `dev_valid_name`, but for
/// `.` and `..`): 1 to 15 bytes, no slash and no blank (C's `isspace`).
pub(super) fn ip_valid_ifname(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 16
        && !name
            .bytes()
            .any(|b| b == b'/' || b.is_ascii_whitespace() || b == 0x0b)
}
