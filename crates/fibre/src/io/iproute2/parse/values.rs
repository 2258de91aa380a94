//! Values iproute2 reads by name or number: DS field (`tos`), IP protocols, port ranges (the
//! name tables are in [`crate::io::iproute2::names`]).
use super::*;

/// A DS field as `rtnl_dsfield_a2n` reads one: by its name in `rt_dsfield` as written there
/// (`default` is 0), else in hex as `strtoul` base 16 reads it (`0x` allowed, a sign too:
/// `-0` is 0); `message`: ip's words for a bad one where it is read.
pub(super) fn parse_tos(tok: &str, message: &str) -> Result<u8> {
    if tok == "default" {
        return Ok(0);
    }
    if let Some((v, _)) = DSFIELD_NAMES.iter().find(|(_, n)| *n == tok) {
        return Ok(*v);
    }
    let n = strtoul_in(tok.as_bytes(), 16);
    if n.read == 0 || n.read != tok.len() || n.value > 255 {
        return Err(bad_arg(message, tok));
    }
    Ok(n.value as u8)
}

/// An IP protocol as `inet_proto_a2n` reads one: a decimal number up to 255 (`get_u8` base
/// 10), else a name or alias of `/etc/protocols`. fibre knows the common names without the
/// file too.
pub(super) fn parse_ipproto(tok: &str) -> Result<u8> {
    let n = strtoul_in(tok.as_bytes(), 10);
    if n.read > 0 && n.read == tok.len() && n.value <= 255 {
        return Ok(n.value as u8);
    }
    ipproto_from_name(tok)
        .or(match tok {
            "tcp" => Some(6),
            "udp" => Some(17),
            "icmp" => Some(1),
            "ipv6-icmp" => Some(58),
            "sctp" => Some(132),
            "dccp" => Some(33),
            _ => None,
        })
        .ok_or_else(|| bad_arg("Invalid \"ipproto\" value\n", tok))
}

/// A port or a range `LO-HI` as ip reads one (`sscanf("%hu-%hu")`, see [`scan_range`]): a
/// single port where no second number follows (`5-` and `5-x` are 5), each cut to 16 bits
/// (70000 is 4464).
pub(super) fn read_port_range(keyword: &str, tok: &str) -> Result<(u16, u16)> {
    match scan_range(tok) {
        (1, lo, _) => Ok((lo as u16, lo as u16)),
        (2, lo, hi) => Ok((lo as u16, hi as u16)),
        // ip says "port range" for sport and "dport range" for dport.
        _ if keyword == "dport" => Err(bad_arg("invalid dport range\n", tok)),
        _ => Err(bad_arg("invalid port range\n", tok)),
    }
}

/// A `uidrange LO-HI` as ip reads one (`sscanf("%u-%u")`, see [`scan_range`]).
pub(super) fn read_uid_range(tok: &str) -> Result<(u32, u32)> {
    match scan_range(tok) {
        (2, lo, hi) => Ok((lo as u32, hi as u32)),
        _ => Err(bad_arg("invalid UID range\n", tok)),
    }
}
