//! Values iproute2 reads by name or number: DS field (`tos`), IP protocols, port ranges (the
//! name tables are in [`crate::io::iproute2::names`]).
use super::*;

pub(super) fn parse_tos(tok: &str) -> Result<u8> {
    if let Some((v, _)) = DSFIELD_NAMES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(tok))
    {
        return Ok(*v);
    }
    // rtnl_dsfield_a2n reads hex whatever the prefix.
    let hex = tok.strip_prefix("0x").unwrap_or(tok);
    u8::from_str_radix(hex, 16).map_err(|_| bad_arg("TOS value is invalid", tok))
}

pub(super) fn parse_ipproto(tok: &str) -> Result<u8> {
    match tok {
        "tcp" => Ok(6),
        "udp" => Ok(17),
        "icmp" => Ok(1),
        "ipv6-icmp" | "icmpv6" => Ok(58),
        "sctp" => Ok(132),
        "dccp" => Ok(33),
        _ => ipproto_from_name(tok).map_or_else(|| num("ipproto", tok), Ok),
    }
}

pub(super) fn parse_port_range(tok: &str) -> Result<(u16, u16)> {
    let (a, b) = tok.split_once('-').unwrap_or((tok, tok));
    let lo: u16 = num("port", a)?;
    let hi: u16 = num("port", b)?;
    if lo > hi {
        return Err(bad_arg("invalid port range", tok));
    }
    Ok((lo, hi))
}
