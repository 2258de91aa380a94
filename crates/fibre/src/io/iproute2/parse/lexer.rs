//! The lexical layer: ip's `makeargs` tokenizer, keyword abbreviation, numbers, addresses
//! and prefixes of either family, device names.
use super::*;

/// Splits a line as ip's `makeargs` does: on blanks, with double quotes grouping, `#` starting a
/// comment.
pub fn tokenize(line: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in line.chars() {
        if quoted {
            if c == '"' {
                quoted = false;
            } else {
                cur.push(c);
            }
            continue;
        }
        match c {
            '#' => break,
            '"' => {
                quoted = true;
                in_word = true;
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quoted {
        return Err(ParseError::bare("unterminated quoted string"));
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// ip's `matches(arg, keyword)`: `arg` is a non-empty prefix of `keyword`.
pub(super) fn matches(arg: &str, keyword: &str) -> bool {
    !arg.is_empty() && keyword.starts_with(arg)
}

/// A cursor over a line's tokens.
pub(super) struct Args<'a> {
    pub(super) toks: &'a [String],
    pub(super) i: usize,
}

impl<'a> Args<'a> {
    pub(super) fn next(&mut self) -> Option<&'a str> {
        let t = self.toks.get(self.i).map(|s| s.as_str());
        self.i += 1;
        t
    }
    pub(super) fn peek(&self) -> Option<&'a str> {
        self.toks.get(self.i).map(|s| s.as_str())
    }
    /// The argument of keyword `kw`; where the line ends first, ip's `NEXT_ARG` exits with
    /// `incomplete_command`'s words.
    pub(super) fn value(&mut self, kw: &str) -> Result<&'a str> {
        self.next().ok_or_else(|| {
            ParseError {
                plain: true,
                ..ParseError::new(kw, "Command line is not complete. Try option \"help\"")
            }
            .exit_minus_one()
        })
    }
}

/// A gateway's words after `via`: a family's name (`inet`, `inet6`: ip's `read_family`) if one
/// is given, and the address's word.
pub(super) fn via_words<'a>(args: &mut Args<'a>, kw: &str) -> Result<(Option<Family>, &'a str)> {
    let v = args.value(kw)?;
    let named = match v {
        "inet" => Family::Inet,
        "inet6" => Family::Inet6,
        _ => return Ok((None, v)),
    };
    Ok((Some(named), args.value(kw)?))
}

/// ip's `invarg`: `what` as ip words it, printed as it is (some of ip's end in a period or a
/// newline of their own, and ip adds neither).
pub(super) fn bad_arg(what: &str, tok: &str) -> ParseError {
    ParseError {
        plain: true,
        ..ParseError::new(tok, format!("Error: argument \"{tok}\" is wrong: {what}"))
    }
    .exit_minus_one()
}

/// A number as ip reads it (`get_u32` with base 0), or ip's `invarg` with `message`, its words
/// for that field (each field has its own, some ending in a newline of their own).
pub(super) fn num<T: TryFrom<u32>>(message: &str, tok: &str) -> Result<T> {
    num_in(message, tok, tok)
}

/// [`num`] for `part` of a token, where ip names `shown` (the whole range, or what it left of
/// a token it cut while reading it).
pub(super) fn num_in<T: TryFrom<u32>>(message: &str, part: &str, shown: &str) -> Result<T> {
    parse_u32(part)
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| bad_arg(message, shown))
}

/// An address of either family, as ip's `get_addr_1` reads one: a word with a colon is IPv6,
/// any other IPv4 as `get_addr_ipv4` reads it (short forms, `10.1`; octal and hex parts, `010`
/// and `0x0a`: see [`ipv4_as_ip_reads`]).
pub(super) fn parse_ip(tok: &str) -> Option<IpAddr> {
    if tok.contains(':') {
        return tok.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    ipv4_as_ip_reads(tok).map(IpAddr::V4)
}

pub(super) fn addr_of<A: Address>(tok: &str) -> Result<A> {
    parse_ip(tok).and_then(A::from_ip).ok_or_else(|| {
        ParseError::new(
            tok,
            format!("invalid {} address \"{tok}\"", A::FAMILY.name()),
        )
    })
}

/// `default`, `all`, `ADDR` or `ADDR/LEN`, in a family or deciding it.
#[derive(Clone, Copy, Debug)]
pub(super) enum AnyPrefix {
    Default,
    Addr(IpAddr, u8),
}

pub(super) fn parse_any_prefix(tok: &str) -> Result<AnyPrefix> {
    if tok == "default" || tok == "all" || tok == "any" {
        return Ok(AnyPrefix::Default);
    }
    let bad = || {
        ParseError::new(
            tok,
            format!("any valid prefix is expected rather than \"{tok}\""),
        )
    };
    let (a, l) = match tok.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (tok, None),
    };
    let addr = parse_ip(a).ok_or_else(bad)?;
    let width = if addr.is_ipv4() { 32 } else { 128 };
    let len = match l {
        None => width,
        // A number or a dotted netmask (`/255.255.255.0`), for either family as ip reads it.
        Some(l) => {
            let n = prefix_len_as_ip_reads(l)
                .filter(|n| *n <= width as u32)
                .ok_or_else(bad)?;
            n as u8
        }
    };
    Ok(AnyPrefix::Addr(addr, len))
}

impl AnyPrefix {
    pub(super) fn family(&self) -> Option<Family> {
        match self {
            AnyPrefix::Default => None,
            AnyPrefix::Addr(a, _) => Some(Family::of(a)),
        }
    }
    /// Narrows to family `A`; `strict` refuses host bits (the kernel does so for IPv4 routes).
    pub(super) fn get<A: Address>(&self, tok: &str, strict: bool) -> Result<Prefix<A>> {
        let AnyPrefix::Addr(ip, len) = *self else {
            return Ok(Prefix::any());
        };
        let a = A::from_ip(ip).ok_or_else(|| {
            ParseError::new(
                tok,
                format!("\"{tok}\" is not an {} prefix", A::FAMILY.name()),
            )
        })?;
        if strict {
            Prefix::new_strict(a, len).ok_or_else(|| {
                ParseError::new(tok, "Invalid prefix for given prefix length").soft()
            })
        } else {
            Ok(Prefix::new(a, len))
        }
    }
}

pub(super) fn dev_index(router: &Router, name: &str) -> Result<IfIndex> {
    router
        .links()
        .by_name(name)
        .map(|l| l.index)
        .ok_or_else(|| ParseError::device(name))
}

/// With -4 or -6, a prefix (`what`: "prefix") or address ("address") of the other family
/// ends ip (`get_prefix`'s and `get_addr`'s exit).
pub(super) fn other_family_as(want: Family, what: &str, tok: &str) -> ParseError {
    let name = if want == Family::Inet {
        "inet"
    } else {
        "inet6"
    };
    ParseError::new(
        tok,
        format!("{name} {what} is expected rather than \"{tok}\""),
    )
}

/// ip's answer to a verb its object does not have, which ends the batch (`exit(-1)`): `object`
/// as ip names it in its help (`address`, `route`).
pub(super) fn unknown_command(verb: &str, object: &str) -> ParseError {
    ParseError {
        plain: true,
        ..ParseError::new(
            verb,
            format!("Command \"{verb}\" is unknown, try \"ip {object} help\"."),
        )
    }
    .exit_minus_one()
}

/// ip's `duparg`: `key` given a second time, `arg` the word that says so.
pub(super) fn duplicate(key: &str, arg: &str) -> ParseError {
    ParseError::new(
        arg,
        format!("duplicate \"{key}\": \"{arg}\" is the second value"),
    )
    .exit_minus_one()
}

/// The family of address `tok` where ip reads it with `get_addr` in the family known so far
/// (which it then settles): an address of the other family, or none, ends the batch.
pub(super) fn family_of_address(family: Option<Family>, tok: &str) -> Result<Family> {
    match parse_ip(tok).map(|a| Family::of(&a)) {
        Some(f) if family.is_none_or(|want| want == f) => Ok(f),
        _ => Err(address_expected(family, tok)),
    }
}

/// `vrf NAME`: fibre models no VRF devices, so NAME is never one, and ip ends the batch
/// (`ipvrf_get_table`, `name_is_vrf`: `invarg("Invalid VRF\n")`).
pub(super) fn no_vrf(name: &str) -> ParseError {
    bad_arg("Invalid VRF\n", name)
}

/// The table of `vrf NAME` in `route add`, `show` and `flush` (`ipvrf_get_table`): `default`
/// is main where no device has that name; any other name is no VRF ([`no_vrf`]).
pub(super) fn vrf_table(router: &Router, name: &str) -> Result<TableId> {
    if name == "default" && router.links().by_name(name).is_none() {
        Ok(TABLE_MAIN)
    } else {
        Err(no_vrf(name))
    }
}

/// An address ip cannot read in the family known so far (`get_addr`'s exit): "any valid"
/// before the family is known.
pub(super) fn address_expected(family: Option<Family>, tok: &str) -> ParseError {
    match family {
        Some(f) => other_family_as(f, "address", tok),
        None => ParseError::new(
            tok,
            format!("any valid address is expected rather than \"{tok}\""),
        ),
    }
}

/// With -4 or -6, a prefix of the other family ends ip (`get_prefix`'s exit).
pub(super) fn other_family(want: Family, tok: &str) -> ParseError {
    other_family_as(want, "prefix", tok)
}
