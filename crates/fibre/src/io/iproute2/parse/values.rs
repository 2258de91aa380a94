//! Values iproute2 reads by name or number: DS field (`tos`), IP protocols, port ranges (the
//! name tables are in [`crate::io::iproute2::names`]).
use super::*;

/// A DS field by name or in hex; `message`: ip's words for a bad one where it is read.
pub(super) fn parse_tos(tok: &str, message: &str) -> Result<u8> {
    if let Some((v, _)) = DSFIELD_NAMES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(tok))
    {
        return Ok(*v);
    }
    // rtnl_dsfield_a2n reads hex whatever the prefix.
    let hex = tok.strip_prefix("0x").unwrap_or(tok);
    u8::from_str_radix(hex, 16).map_err(|_| bad_arg(message, tok))
}

pub(super) fn parse_ipproto(tok: &str) -> Result<u8> {
    match tok {
        "tcp" => Ok(6),
        "udp" => Ok(17),
        "icmp" => Ok(1),
        "ipv6-icmp" | "icmpv6" => Ok(58),
        "sctp" => Ok(132),
        "dccp" => Ok(33),
        _ => ipproto_from_name(tok).map_or_else(|| num("Invalid \"ipproto\" value\n", tok), Ok),
    }
}

/// A rule's `sport` or `dport` (`keyword`): a port or a range `LO-HI`.
pub(super) fn parse_port_range(keyword: &str, tok: &str) -> Result<(u16, u16)> {
    let (a, b) = tok.split_once('-').unwrap_or((tok, tok));
    // ip says "port range" for sport and "dport range" for dport, naming the whole token.
    let message = if keyword == "dport" {
        "invalid dport range\n"
    } else {
        "invalid port range\n"
    };
    let (lo, hi): (u16, u16) = (num_in(message, a, tok)?, num_in(message, b, tok)?);
    if lo > hi {
        // The kernel's check (`fib_nl2rule`), so only this line fails.
        return Err(ParseError::new(tok, format!("Invalid {keyword} range")).soft());
    }
    Ok((lo, hi))
}
