//! Parsing of iproute2 command lines (`link`, `addr`, `route`, `rule` objects).
//!
//! Keywords may be abbreviated as ip allows (`matches()`: any prefix of the keyword), checked in
//! ip's order so that the same abbreviation means the same thing. Every error names the token.
use crate::addr::{Address, Family};
use crate::error::Errno;
use crate::link::IfAddr;
use crate::nexthop::NextHop;
use crate::prefix::Prefix;
use crate::rib::{InsertMode, RouteSelector};
use crate::route::*;
use crate::router::{Change, RouteQuery, Router};
use crate::rules::{Rule, RuleAction, RuleAddr, RuleFields, RuleSelector};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A line that could not be understood. `message` is what iproute2 would say after "Error: ".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub errno: Errno,
    pub token: Option<String>,
    pub message: String,
    /// ip gives up on the whole batch (`invarg`, `get_prefix` and their kind call `exit`), even
    /// with `-force`. Unknown devices and objects, errors the kernel would report, and what
    /// fibre does not model fail only their line.
    pub fatal: bool,
    /// `message` is printed as it is, not as `Error: MESSAGE.`.
    pub plain: bool,
}

impl ParseError {
    fn new(token: &str, message: impl Into<String>) -> Self {
        ParseError {
            errno: Errno::EINVAL,
            token: Some(token.to_string()),
            message: message.into(),
            fatal: true,
            plain: false,
        }
    }
    fn bare(message: impl Into<String>) -> Self {
        ParseError {
            errno: Errno::EINVAL,
            token: None,
            message: message.into(),
            fatal: true,
            plain: false,
        }
    }
    fn device(name: &str) -> Self {
        ParseError {
            errno: Errno::ENODEV,
            token: Some(name.to_string()),
            message: format!("Cannot find device \"{name}\""),
            fatal: false,
            plain: true,
        }
    }
    /// An error of this line only (see [`ParseError::fatal`]).
    fn soft(mut self) -> Self {
        self.fatal = false;
        self
    }
}
impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}
impl std::error::Error for ParseError {}

type Result<T> = std::result::Result<T, ParseError>;

/// Which tables `route show` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFilter {
    All,
    Id(TableId),
}

/// What `route show` selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShowFilter {
    /// `None`: both families (with `table all`).
    pub family: Option<Family>,
    pub table: TableFilter,
    /// `root P` (routes inside P), `match P` (routes covering P), `exact P` / plain `P`.
    pub root: Option<IpPrefix>,
    pub matching: Option<IpPrefix>,
    pub exact: Option<IpPrefix>,
    /// `from P`: routes whose source prefix is exactly P (IPv4 routes have `0/0`).
    pub src: Option<IpPrefix>,
    pub kind: Option<RouteType>,
    /// `dev D`: single-path routes through D (ip filters on a top-level output device, which
    /// multipath routes lack), printed without `dev`.
    pub dev: Option<IfIndex>,
    /// `proto P`, printed without `proto`.
    pub protocol: Option<Protocol>,
}

/// A prefix of either family, for filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpPrefix {
    V4(Prefix<Ipv4Addr>),
    V6(Prefix<Ipv6Addr>),
}

/// A parsed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// A change to the router.
    Apply(Change),
    /// `route flush`: every route the filter selects goes.
    RouteFlush(ShowFilter),
    /// A query, and how many times ip prints its answer (`connected`).
    RouteGet(RouteQuery, usize),
    RouteShow(ShowFilter),
    RuleShow(Family),
    LinkShow,
    AddrShow(Option<Family>),
    /// An empty or comment-only line.
    Nothing,
}

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
fn matches(arg: &str, keyword: &str) -> bool {
    !arg.is_empty() && keyword.starts_with(arg)
}

/// A cursor over a line's tokens.
struct Args<'a> {
    toks: &'a [String],
    i: usize,
}

impl<'a> Args<'a> {
    fn next(&mut self) -> Option<&'a str> {
        let t = self.toks.get(self.i).map(|s| s.as_str());
        self.i += 1;
        t
    }
    fn peek(&self) -> Option<&'a str> {
        self.toks.get(self.i).map(|s| s.as_str())
    }
    /// The argument of keyword `kw`.
    fn value(&mut self, kw: &str) -> Result<&'a str> {
        self.next()
            .ok_or_else(|| ParseError::new(kw, format!("argument is missing for \"{kw}\"")))
    }
}

fn bad_arg(what: &str, tok: &str) -> ParseError {
    ParseError::new(tok, format!("argument \"{tok}\" is wrong: {what}"))
}

fn num<T: TryFrom<u32>>(what: &str, tok: &str) -> Result<T> {
    parse_u32(tok)
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| bad_arg(&format!("invalid {what}"), tok))
}

/// An address of either family. IPv4 accepts ip's short forms (`10`, `10.1`).
fn parse_ip(tok: &str) -> Option<IpAddr> {
    if let Ok(a) = tok.parse::<IpAddr>() {
        return Some(a);
    }
    let parts: Vec<&str> = tok.split('.').collect();
    if parts.len() < 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
    {
        let mut o = [0u8; 4];
        for (i, p) in parts.iter().enumerate() {
            o[i] = p.parse().ok()?;
        }
        return Some(IpAddr::V4(Ipv4Addr::from(o)));
    }
    None
}

fn addr_of<A: Address>(tok: &str) -> Result<A> {
    parse_ip(tok).and_then(A::from_ip).ok_or_else(|| {
        ParseError::new(
            tok,
            format!("invalid {} address \"{tok}\"", A::FAMILY.name()),
        )
    })
}

/// `default`, `all`, `ADDR` or `ADDR/LEN`, in a family or deciding it.
#[derive(Clone, Copy, Debug)]
enum AnyPrefix {
    Default,
    V4(Ipv4Addr, u8),
    V6(Ipv6Addr, u8),
}

fn parse_any_prefix(tok: &str) -> Result<AnyPrefix> {
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
        Some(l) => {
            let n = parse_u32(l)
                .filter(|n| *n <= width as u32)
                .ok_or_else(bad)?;
            n as u8
        }
    };
    Ok(match addr {
        IpAddr::V4(a) => AnyPrefix::V4(a, len),
        IpAddr::V6(a) => AnyPrefix::V6(a, len),
    })
}

impl AnyPrefix {
    fn family(&self) -> Option<Family> {
        match self {
            AnyPrefix::Default => None,
            AnyPrefix::V4(..) => Some(Family::Inet),
            AnyPrefix::V6(..) => Some(Family::Inet6),
        }
    }
    /// Narrows to family `A`; `strict` refuses host bits (the kernel does so for IPv4 routes).
    fn get<A: Address>(&self, tok: &str, strict: bool) -> Result<Prefix<A>> {
        let (ip, len): (IpAddr, u8) = match *self {
            AnyPrefix::Default => return Ok(Prefix::any()),
            AnyPrefix::V4(a, l) => (a.into(), l),
            AnyPrefix::V6(a, l) => (a.into(), l),
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

fn dev_index(router: &Router, name: &str) -> Result<IfIndex> {
    router
        .links
        .by_name(name)
        .map(|l| l.index)
        .ok_or_else(|| ParseError::device(name))
}

/// DS field values by name, as in iproute2's `rt_dsfield`.
pub const DSFIELD_NAMES: &[(u8, &str)] = &[
    (0x20, "CS1"),
    (0x40, "CS2"),
    (0x60, "CS3"),
    (0x80, "CS4"),
    (0xa0, "CS5"),
    (0xc0, "CS6"),
    (0xe0, "CS7"),
    (0x28, "AF11"),
    (0x30, "AF12"),
    (0x38, "AF13"),
    (0x48, "AF21"),
    (0x50, "AF22"),
    (0x58, "AF23"),
    (0x68, "AF31"),
    (0x70, "AF32"),
    (0x78, "AF33"),
    (0x88, "AF41"),
    (0x90, "AF42"),
    (0x98, "AF43"),
    (0xb8, "EF"),
];

fn parse_tos(tok: &str) -> Result<u8> {
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

fn parse_ipproto(tok: &str) -> Result<u8> {
    match tok {
        "tcp" => Ok(6),
        "udp" => Ok(17),
        "icmp" => Ok(1),
        "ipv6-icmp" | "icmpv6" => Ok(58),
        "sctp" => Ok(132),
        "dccp" => Ok(33),
        _ => num("ipproto", tok),
    }
}

fn parse_port_range(tok: &str) -> Result<(u16, u16)> {
    let (a, b) = tok.split_once('-').unwrap_or((tok, tok));
    let lo: u16 = num("port", a)?;
    let hi: u16 = num("port", b)?;
    if lo > hi {
        return Err(bad_arg("invalid port range", tok));
    }
    Ok((lo, hi))
}

/// Parses one batch line against the router's current state. `family` is the global `-4`/`-6`;
/// a line may also start with its own `-4`/`-6`.
pub fn parse_line(line: &str, family: Option<Family>, router: &Router) -> Result<Command> {
    let toks = tokenize(line)?;
    let mut args = Args { toks: &toks, i: 0 };
    let mut family = family;
    loop {
        match args.peek() {
            Some("-4") => family = Some(Family::Inet),
            Some("-6") => family = Some(Family::Inet6),
            Some("-j") | Some("-json") => {} // output mode is the batch's
            _ => break,
        }
        args.next();
    }
    let Some(object) = args.next() else {
        return Ok(Command::Nothing);
    };
    let verb = args.next().unwrap_or("show");
    if matches(object, "link") {
        parse_link(verb, &mut args, router)
    } else if matches(object, "address") {
        parse_addr(verb, &mut args, family, router)
    } else if matches(object, "route") {
        parse_route(verb, &mut args, family, router)
    } else if matches(object, "rule") {
        parse_rule(verb, &mut args, family, router)
    } else {
        Err(ParseError::new(
            object,
            format!("Object \"{object}\" is unknown, try \"ip help\""),
        )
        .soft())
    }
}

fn parse_link(verb: &str, args: &mut Args<'_>, router: &Router) -> Result<Command> {
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
            return Err(ParseError::bare(
                "Not enough information: \"type\" argument is required",
            ));
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
        let dev = dev.ok_or_else(|| {
            ParseError::bare("Not enough of information: \"dev\" argument is required")
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
        let dev = dev.ok_or_else(|| {
            ParseError::bare("Not enough information: \"dev\" argument is required")
        })?;
        return Ok(Command::Apply(Change::LinkDel {
            dev: dev_index(router, dev)?,
        }));
    }
    if matches(verb, "show") || matches(verb, "list") {
        return Ok(Command::LinkShow);
    }
    Err(ParseError::new(
        verb,
        format!("Command \"{verb}\" is unknown, try \"ip link help\""),
    ))
}

fn check_ifname(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() >= 16
        || name.contains('/')
        || name.chars().any(char::is_whitespace)
        || name == "."
        || name == ".."
    {
        return Err(ParseError::new(
            name,
            format!("\"{name}\" is not a valid ifname"),
        ));
    }
    Ok(())
}

fn parse_addr(
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

/// Route attributes as read, before the family is known.
#[derive(Default)]
struct RouteArgs<'a> {
    kind: Option<RouteType>,
    dst: Option<(AnyPrefix, &'a str)>,
    from: Option<(AnyPrefix, &'a str)>,
    tos: Option<u8>,
    table: Option<TableId>,
    metric: Option<u32>,
    protocol: Option<Protocol>,
    scope: Option<Scope>,
    prefsrc: Option<(IpAddr, &'a str)>,
    pref: Option<RouterPref>,
    mtu: Option<u32>,
    /// The single-path next hop, then each `nexthop` clause.
    hops: Vec<RawHop<'a>>,
    multipath: bool,
}

#[derive(Default, Clone)]
struct RawHop<'a> {
    via: Option<(IpAddr, &'a str)>,
    dev: Option<&'a str>,
    weight: Option<u16>,
    onlink: bool,
}

impl RawHop<'_> {
    fn is_empty(&self) -> bool {
        self.via.is_none() && self.dev.is_none() && self.weight.is_none() && !self.onlink
    }
}

fn parse_route_args<'a>(args: &mut Args<'a>, deleting: bool) -> Result<RouteArgs<'a>> {
    let mut r = RouteArgs {
        hops: vec![RawHop::default()],
        ..Default::default()
    };
    let mut cur = 0usize;
    while let Some(t) = args.next() {
        if t == "src" {
            let v = args.value(t)?;
            r.prefsrc = Some((
                parse_ip(v)
                    .ok_or_else(|| ParseError::new(v, format!("invalid source address \"{v}\"")))?,
                v,
            ));
        } else if matches(t, "via") {
            let mut v = args.value(t)?;
            if v == "inet" || v == "inet6" {
                v = args.value(t)?;
            }
            r.hops[cur].via = Some((
                parse_ip(v)
                    .ok_or_else(|| ParseError::new(v, format!("invalid gateway \"{v}\"")))?,
                v,
            ));
        } else if t == "from" {
            let v = args.value(t)?;
            r.from = Some((parse_any_prefix(v)?, v));
        } else if matches(t, "tos") || matches(t, "dsfield") {
            r.tos = Some(parse_tos(args.value(t)?)?);
        } else if matches(t, "metric") || matches(t, "priority") || t == "preference" {
            r.metric = Some(num("metric", args.value(t)?)?);
        } else if t == "mtu" {
            let mut v = args.value(t)?;
            if v == "lock" {
                v = args.value(t)?;
            }
            r.mtu = Some(num("mtu", v)?);
        } else if matches(t, "nexthop") {
            if !r.multipath {
                if !r.hops[0].is_empty() {
                    return Err(ParseError::new(
                        t,
                        "a single next hop cannot be combined with \"nexthop\"",
                    ));
                }
                r.hops.clear();
                r.multipath = true;
            }
            r.hops.push(RawHop::default());
            cur = r.hops.len() - 1;
        } else if t == "weight" {
            if !r.multipath {
                return Err(ParseError::new(
                    t,
                    "\"weight\" is only valid inside \"nexthop\"",
                ));
            }
            let w: u16 = num("weight", args.value(t)?)?;
            if !(1..=256).contains(&w) {
                return Err(bad_arg("\"weight\" must be 1..256", &w.to_string()));
            }
            r.hops[cur].weight = Some(w);
        } else if matches(t, "protocol") {
            let v = args.value(t)?;
            r.protocol = Some(
                protocol_from_name(v).ok_or_else(|| bad_arg("\"protocol\" value is invalid", v))?,
            );
        } else if matches(t, "table") {
            let v = args.value(t)?;
            let t = table_from_name(v).ok_or_else(|| bad_arg("\"table\" value is invalid", v))?;
            // `fib_new_table` / `fib6_new_table`: table 0 (`unspec`) is main.
            r.table = Some(if t == 0 { TABLE_MAIN } else { t });
        } else if t == "dev" || t == "oif" {
            r.hops[cur].dev = Some(args.value(t)?);
        } else if t == "pref" {
            let v = args.value(t)?;
            r.pref = Some(
                RouterPref::from_name(v).ok_or_else(|| bad_arg("\"pref\" value is invalid", v))?,
            );
        } else if t == "onlink" {
            r.hops[cur].onlink = true;
        } else if matches(t, "scope") {
            let v = args.value(t)?;
            r.scope =
                Some(scope_from_name(v).ok_or_else(|| bad_arg("invalid \"scope\" value", v))?);
        } else if matches(t, "expires")
            || t == "nhid"
            || t == "vrf"
            || matches(t, "realms")
            || t == "encap"
            || t == "as"
        {
            return Err(ParseError::new(t, format!("\"{t}\" is not supported by fibre")).soft());
        } else if [
            "advmss",
            "hoplimit",
            "initcwnd",
            "initrwnd",
            "rtt",
            "rttvar",
            "reordering",
            "window",
            "cwnd",
            "ssthresh",
            "features",
            "quickack",
            "congctl",
            "fastopen_no_cookie",
            "rto_min",
        ]
        .contains(&t)
        {
            return Err(ParseError::new(
                t,
                format!("route metric \"{t}\" is not supported by fibre"),
            )
            .soft());
        } else {
            // [to] [TYPE] PREFIX
            let mut v = t;
            if matches(v, "to") && args.peek().is_some() {
                v = args.value(t)?;
            }
            if !v.starts_with(|c: char| c.is_ascii_digit()) {
                if let Some(k) = RouteType::from_name(v) {
                    r.kind = Some(k);
                    v = args.value(v)?;
                }
            }
            if r.dst.is_some() {
                return Err(ParseError::new(
                    v,
                    format!("either \"to\" is duplicate, or \"{v}\" is a garbage"),
                ));
            }
            r.dst = Some((parse_any_prefix(v)?, v));
        }
    }
    if r.dst.is_none() && !deleting {
        return Err(ParseError::bare("destination prefix is required"));
    }
    Ok(r)
}

impl<'a> RouteArgs<'a> {
    /// The family: the global or line flag, else the first address given, else IPv4.
    fn family(&self, flag: Option<Family>) -> Result<Family> {
        let mut seen: Vec<(Family, &str)> = Vec::new();
        let ipfam = |a: &IpAddr| {
            if a.is_ipv4() {
                Family::Inet
            } else {
                Family::Inet6
            }
        };
        if let Some((p, t)) = &self.dst {
            if let Some(f) = p.family() {
                seen.push((f, t));
            }
        }
        if let Some((p, t)) = &self.from {
            if let Some(f) = p.family() {
                seen.push((f, t));
            }
        }
        for h in &self.hops {
            if let Some((a, t)) = &h.via {
                seen.push((ipfam(a), t));
            }
        }
        if let Some((a, t)) = &self.prefsrc {
            seen.push((ipfam(a), t));
        }
        if let (Some(want), Some((p, t))) = (flag, &self.dst) {
            if p.family().is_some_and(|f| f != want) {
                return Err(other_family(want, t));
            }
        }
        let family = flag
            .or_else(|| seen.first().map(|s| s.0))
            .unwrap_or(Family::Inet);
        if let Some((_, t)) = seen.iter().find(|(f, _)| *f != family) {
            // IPv4 routes via an IPv6 gateway (RTA_VIA) are not modelled.
            return Err(ParseError::new(t, format!("\"{t}\": address family mismatch")).soft());
        }
        Ok(family)
    }

    fn spec<A: Address>(
        &self,
        router: &Router,
        deleting: bool,
    ) -> Result<(RouteSpec<A>, Vec<NextHop<A>>, bool)> {
        let dst = match &self.dst {
            Some((p, t)) => p.get::<A>(t, A::FAMILY == Family::Inet)?,
            None => Prefix::any(),
        };
        let src = match &self.from {
            Some((p, t)) => p.get::<A>(t, false)?,
            None => Prefix::any(),
        };
        let mut hops = Vec::new();
        for h in &self.hops {
            if h.is_empty() && !self.multipath {
                continue;
            }
            let gateway = match &h.via {
                Some((a, t)) => Some(
                    A::from_ip(*a)
                        .ok_or_else(|| ParseError::new(t, "address family mismatch").soft())?,
                ),
                None => None,
            };
            let dev = match h.dev {
                Some(d) => Some(dev_index(router, d)?),
                None => None,
            };
            hops.push(NextHop {
                gateway,
                dev,
                weight: h.weight.unwrap_or(1),
                onlink: h.onlink,
            });
        }
        let kind = self.kind.unwrap_or(RouteType::Unicast);
        let table = self.table.unwrap_or(match kind {
            RouteType::Local | RouteType::Broadcast | RouteType::Nat | RouteType::Anycast => {
                TABLE_LOCAL
            }
            _ => TABLE_MAIN,
        });
        let has_gw = hops.iter().any(|h| h.gateway.is_some());
        let scope = self.scope.unwrap_or(if A::FAMILY == Family::Inet6 {
            SCOPE_UNIVERSE
        } else {
            match kind {
                RouteType::Local | RouteType::Nat => SCOPE_HOST,
                RouteType::Broadcast | RouteType::Multicast | RouteType::Anycast => SCOPE_LINK,
                RouteType::Unicast if deleting => SCOPE_NOWHERE,
                RouteType::Unicast if !has_gw && !self.multipath => SCOPE_LINK,
                _ => SCOPE_UNIVERSE,
            }
        });
        let prefsrc = match &self.prefsrc {
            Some((a, t)) => Some(
                A::from_ip(*a)
                    .ok_or_else(|| ParseError::new(t, "address family mismatch").soft())?,
            ),
            None => None,
        };
        let mut metric = self.metric.unwrap_or(0);
        if A::FAMILY == Family::Inet6 && metric == 0 && !deleting {
            metric = 1024; // IP6_RT_PRIO_USER
        }
        let spec = RouteSpec {
            table,
            dst,
            src,
            tos: self.tos.unwrap_or(0),
            metric,
            kind,
            protocol: self.protocol.unwrap_or(PROTO_BOOT),
            scope,
            prefsrc,
            pref: self.pref.unwrap_or_default(),
            mtu: self.mtu,
            hops: hops.clone(),
        };
        Ok((spec, hops, self.multipath))
    }

    fn selector<A: Address>(&self, router: &Router) -> Result<(TableId, RouteSelector<A>)> {
        let (spec, hops, multipath) = self.spec::<A>(router, true)?;
        let single = (!multipath).then(|| hops.first().copied()).flatten();
        Ok((
            spec.table,
            RouteSelector {
                dst: spec.dst,
                src: spec.src,
                tos: spec.tos,
                metric: self.metric.filter(|m| *m != 0),
                kind: self.kind,
                protocol: self.protocol,
                scope: self.scope,
                prefsrc: spec.prefsrc,
                hops: if multipath { hops } else { Vec::new() },
                dev: single.and_then(|h| h.dev),
                gateway: single.and_then(|h| h.gateway),
                leg: false,
            },
        ))
    }
}

fn parse_route(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    // In ip's order, so that abbreviations resolve as ip resolves them ("a" is add).
    let mode = if matches(verb, "add") {
        Some(InsertMode::Add)
    } else if matches(verb, "change") || verb == "chg" {
        Some(InsertMode::Change)
    } else if matches(verb, "replace") {
        Some(InsertMode::Replace)
    } else if matches(verb, "prepend") {
        Some(InsertMode::Prepend)
    } else if matches(verb, "append") {
        Some(InsertMode::Append)
    } else {
        None
    };
    if let Some(mode) = mode {
        let r = parse_route_args(args, false)?;
        return Ok(Command::Apply(match r.family(family)? {
            Family::Inet => Change::Route4(r.spec::<Ipv4Addr>(router, false)?.0, mode),
            Family::Inet6 => Change::Route6(r.spec::<Ipv6Addr>(router, false)?.0, mode),
        }));
    }
    if matches(verb, "delete") {
        let r = parse_route_args(args, false)?;
        return Ok(Command::Apply(match r.family(family)? {
            Family::Inet => {
                let (t, s) = r.selector::<Ipv4Addr>(router)?;
                Change::RouteDel4(t, s)
            }
            Family::Inet6 => {
                let (t, s) = r.selector::<Ipv6Addr>(router)?;
                Change::RouteDel6(t, s)
            }
        }));
    }
    if matches(verb, "get") {
        return parse_route_get(args, family, router);
    }
    if matches(verb, "show") || matches(verb, "list") || verb == "lst" {
        return Ok(Command::RouteShow(parse_show_filter(args, family, router)?));
    }
    if matches(verb, "flush") {
        if args.peek().is_none() {
            return Err(ParseError {
                plain: true,
                ..ParseError::bare("\"ip route flush\" requires arguments.").soft()
            });
        }
        return Ok(Command::RouteFlush(parse_show_filter(
            args, family, router,
        )?));
    }
    Err(ParseError::new(
        verb,
        format!("Command \"{verb}\" is unknown, try \"ip route help\""),
    ))
}

fn parse_show_filter(
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<ShowFilter> {
    let mut f = ShowFilter {
        family,
        table: TableFilter::Id(TABLE_MAIN),
        root: None,
        matching: None,
        exact: None,
        src: None,
        kind: None,
        dev: None,
        protocol: None,
    };
    let mut table_all = false;
    // With -4 or -6 a prefix of the other family ends ip (`get_prefix`).
    let explicit = family;
    let prefix_arg = |v: &str| -> Result<AnyPrefix> {
        let p = parse_any_prefix(v)?;
        let fam = match p {
            AnyPrefix::V4(..) => Some(Family::Inet),
            AnyPrefix::V6(..) => Some(Family::Inet6),
            AnyPrefix::Default => None,
        };
        match (explicit, fam) {
            (Some(want), Some(got)) if want != got => Err(other_family(want, v)),
            _ => Ok(p),
        }
    };
    let to_ip = |p: AnyPrefix, fam: Option<Family>| -> IpPrefix {
        match p {
            AnyPrefix::V4(a, l) => IpPrefix::V4(Prefix::new(a, l)),
            AnyPrefix::V6(a, l) => IpPrefix::V6(Prefix::new(a, l)),
            AnyPrefix::Default if fam == Some(Family::Inet6) => IpPrefix::V6(Prefix::any()),
            AnyPrefix::Default => IpPrefix::V4(Prefix::any()),
        }
    };
    while let Some(t) = args.next() {
        if matches(t, "table") {
            let v = args.value(t)?;
            // `all`, `unspec` and 0 list every table (and, without -4/-6, both families).
            if v == "all" || table_from_name(v) == Some(0) {
                f.table = TableFilter::All;
                table_all = true;
            } else if v == "cache" {
                return Err(ParseError::new(v, "the route cache is not modelled").soft());
            } else {
                f.table = TableFilter::Id(
                    table_from_name(v).ok_or_else(|| bad_arg("table id value is invalid", v))?,
                );
            }
        } else if t == "dev" || t == "oif" {
            f.dev = Some(dev_index(router, args.value(t)?)?);
        } else if matches(t, "protocol") {
            let v = args.value(t)?;
            f.protocol =
                Some(protocol_from_name(v).ok_or_else(|| bad_arg("invalid \"protocol\"", v))?);
        } else if t == "type" {
            let v = args.value(t)?;
            f.kind = Some(RouteType::from_name(v).ok_or_else(|| bad_arg("invalid \"type\"", v))?);
        } else if t == "root" {
            let v = args.value(t)?;
            f.root = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "match" {
            let v = args.value(t)?;
            f.matching = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "exact" || t == "to" {
            let v = args.value(t)?;
            f.exact = Some(to_ip(prefix_arg(v)?, f.family));
        } else if t == "from" {
            let v = args.value(t)?;
            f.src = Some(to_ip(prefix_arg(v)?, f.family));
        } else if let Some(k) = RouteType::from_name(t) {
            f.kind = Some(k);
        } else {
            f.exact = Some(to_ip(prefix_arg(t)?, f.family));
        }
    }
    // Without -4/-6 ip lists IPv4, or both families for `table all`; a prefix of the other
    // family then selects nothing (it does not choose the family).
    if f.family.is_none() && !table_all {
        f.family = Some(Family::Inet);
    }
    Ok(f)
}

fn parse_route_get(
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    let mut q = RouteQuery::default();
    let mut dst_tok = None;
    let mut connected = false;
    while let Some(t) = args.next() {
        if matches(t, "tos") || matches(t, "dsfield") {
            q.tos = parse_tos(args.value(t)?)?;
        } else if matches(t, "iif") {
            q.iif = Some(dev_index(router, args.value(t)?)?);
        } else if matches(t, "mark") {
            q.mark = num("mark", args.value(t)?)?;
        } else if matches(t, "oif") || t == "dev" {
            q.oif = Some(dev_index(router, args.value(t)?)?);
        } else if matches(t, "notify") || matches(t, "connected") {
            connected |= t.starts_with('c');
        } else if matches(t, "vrf") {
            return Err(ParseError::new(
                t,
                "VRFs are not supported (this kernel has no VRF devices)",
            )
            .soft());
        } else if matches(t, "uid") {
            q.uid = Some(num("uid", args.value(t)?)?);
        } else if matches(t, "fibmatch") {
            q.fibmatch = true;
        } else if t == "as" {
            return Err(ParseError::new(t, "\"as\" is not supported by fibre").soft());
        } else if t == "sport" {
            q.sport = Some(num("sport", args.value(t)?)?);
        } else if t == "dport" {
            q.dport = Some(num("dport", args.value(t)?)?);
        } else if t == "ipproto" {
            q.ipproto = Some(parse_ipproto(args.value(t)?)?);
        } else if t == "from" {
            let v = args.value(t)?;
            let a = match parse_any_prefix(v)? {
                AnyPrefix::V4(a, _) => IpAddr::V4(a),
                AnyPrefix::V6(a, _) => IpAddr::V6(a),
                AnyPrefix::Default => return Err(ParseError::new(v, "an address is expected")),
            };
            q.src = Some(a);
        } else {
            let mut v = t;
            if matches(v, "to") && args.peek().is_some() {
                v = args.value(t)?;
            }
            if dst_tok.is_some() {
                return Err(ParseError::new(
                    v,
                    format!("either \"to\" is duplicate, or \"{v}\" is a garbage"),
                ));
            }
            q.dst = Some(match parse_any_prefix(v)? {
                AnyPrefix::V4(a, _) => IpAddr::V4(a),
                AnyPrefix::V6(a, _) => IpAddr::V6(a),
                AnyPrefix::Default => return Err(ParseError::new(v, "an address is expected")),
            });
            dst_tok = Some(v);
        }
    }
    let dst = q.dst.ok_or_else(|| ParseError {
        // iproute_get prints it and returns: only this line fails.
        plain: true,
        ..ParseError::bare("need at least a destination address").soft()
    })?;
    let fam = Family::of(&dst);
    if let Some(want) = family.filter(|&f| f != fam) {
        return Err(other_family(want, dst_tok.unwrap_or("")));
    }
    if q.src.is_some_and(|s| Family::of(&s) != fam) {
        return Err(ParseError::bare("source and destination are of different families").soft());
    }
    // iproute2 6.1's `connected` asks again with the answer's source, but sends the first
    // request unchanged: without `from` it prints the same answer twice.
    let times = if connected && q.src.is_none() { 2 } else { 1 };
    Ok(Command::RouteGet(q, times))
}

/// With -4 or -6, an address of the other family ends ip (`get_prefix`'s exit).
fn other_family(want: Family, tok: &str) -> ParseError {
    let name = if want == Family::Inet {
        "inet"
    } else {
        "inet6"
    };
    ParseError::new(
        tok,
        format!("{name} prefix is expected rather than \"{tok}\""),
    )
}

fn parse_rule(
    verb: &str,
    args: &mut Args<'_>,
    family: Option<Family>,
    router: &Router,
) -> Result<Command> {
    // Without -4/-6 a rule is IPv4, whatever its addresses (`iprule_modify` sends AF_INET).
    let family = family.unwrap_or(Family::Inet);
    if matches(verb, "show") || matches(verb, "list") {
        return Ok(Command::RuleShow(family));
    }
    let add = matches(verb, "add");
    if !add && !matches(verb, "delete") {
        return Err(ParseError::new(
            verb,
            format!("Command \"{verb}\" is unknown, try \"ip rule help\""),
        ));
    }
    match family {
        Family::Inet => {
            let (rule, prio, given) = parse_rule_args::<Ipv4Addr>(args)?;
            Ok(Command::Apply(if add {
                let mut rule = rule;
                rule.priority = prio.unwrap_or_else(|| router.v4.rules.default_priority());
                Change::RuleAdd4(rule)
            } else {
                Change::RuleDel4(RuleSelector {
                    priority: prio,
                    rule: Some(rule),
                    given,
                })
            }))
        }
        Family::Inet6 => {
            let (rule, prio, given) = parse_rule_args::<Ipv6Addr>(args)?;
            Ok(Command::Apply(if add {
                let mut rule = rule;
                rule.priority = prio.unwrap_or_else(|| router.v6.rules.default_priority());
                Change::RuleAdd6(rule)
            } else {
                Change::RuleDel6(RuleSelector {
                    priority: prio,
                    rule: Some(rule),
                    given,
                })
            }))
        }
    }
}

fn parse_rule_args<A: Address>(args: &mut Args<'_>) -> Result<(Rule<A>, Option<u32>, RuleFields)> {
    let mut rule = Rule::<A>::lookup(0, TABLE_MAIN);
    let mut prio = None;
    let mut g = RuleFields::default();
    // As given, host bits included (the kernel keeps them). An address of the other family
    // reaches the kernel, which refuses its length (`fib_nl2rule`).
    let prefix = |v: &str, what: &str| -> Result<Option<RuleAddr<A>>> {
        let (addr, len) = match parse_any_prefix(v)? {
            AnyPrefix::Default => return Ok(None),
            AnyPrefix::V4(a, l) => (IpAddr::V4(a), l),
            AnyPrefix::V6(a, l) => (IpAddr::V6(a), l),
        };
        let addr = A::from_ip(addr)
            .ok_or_else(|| ParseError::new(v, format!("Invalid {what} address")).soft())?;
        // A length of 0 selects everything: the kernel ignores such a FRA_SRC / FRA_DST.
        Ok((len > 0).then_some(RuleAddr { addr, len }))
    };
    while let Some(t) = args.next() {
        if t == "not" {
            rule.invert = true;
            g.invert = true;
        } else if matches(t, "preference") || matches(t, "order") || matches(t, "priority") {
            prio = Some(num("preference", args.value(t)?)?);
        } else if t == "from" {
            rule.src = prefix(args.value(t)?, "source")?;
            g.src = true;
        } else if t == "to" {
            rule.dst = prefix(args.value(t)?, "destination")?;
            g.dst = true;
        } else if matches(t, "tos") || matches(t, "dsfield") {
            let v = args.value(t)?;
            rule.tos = parse_tos(v)?;
            if A::FAMILY == Family::Inet && rule.tos & !0x1e != 0 {
                return Err(ParseError {
                    errno: Errno::EINVAL,
                    token: Some(v.into()),
                    message: "Invalid tos".into(),
                    fatal: false,
                    plain: false,
                });
            }
            g.tos = true;
        } else if t == "fwmark" {
            let v = args.value(t)?;
            let (m, mask) = match v.split_once('/') {
                Some((m, k)) => (num::<u32>("fwmark", m)?, num::<u32>("fwmask", k)?),
                None => (num::<u32>("fwmark", v)?, u32::MAX),
            };
            rule.fwmark = Some((m, mask));
            g.fwmark = true;
        } else if matches(t, "realms")
            || matches(t, "suppress_ifgroup")
            || t == "l3mdev"
            || matches(t, "tun_id")
            || t == "dscp"
            || t == "flowlabel"
        {
            return Err(ParseError::new(t, format!("\"{t}\" is not supported by fibre")).soft());
        } else if t == "protocol" {
            let v = args.value(t)?;
            rule.protocol =
                protocol_from_name(v).ok_or_else(|| bad_arg("invalid \"protocol\"", v))?;
        } else if matches(t, "table") || matches(t, "lookup") {
            let v = args.value(t)?;
            rule.action = RuleAction::Lookup(
                table_from_name(v).ok_or_else(|| bad_arg("invalid table ID", v))?,
            );
            g.action = true;
        } else if matches(t, "suppress_prefixlength") {
            let v = args.value(t)?;
            rule.suppress_prefixlength = Some(num("suppress_prefixlength", v)?);
        } else if t == "dev" || matches(t, "iif") {
            rule.iif = Some(args.value(t)?.to_string());
            g.iif = true;
        } else if matches(t, "oif") {
            rule.oif = Some(args.value(t)?.to_string());
            g.oif = true;
        } else if t == "uidrange" {
            let v = args.value(t)?;
            let (a, b) = v
                .split_once('-')
                .ok_or_else(|| bad_arg("invalid UID range", v))?;
            let (a, b): (u32, u32) = (num("uid", a)?, num("uid", b)?);
            if a > b {
                // The kernel's check (`fib_nl2rule`), so only this line fails.
                return Err(ParseError::new(v, "Invalid uid range").soft());
            }
            rule.uidrange = Some((a, b));
            g.uidrange = true;
        } else if matches(t, "goto") {
            rule.action = RuleAction::Goto(num("goto target", args.value(t)?)?);
            g.action = true;
        } else if matches(t, "nop") {
            rule.action = RuleAction::Nop;
            g.action = true;
        } else if t == "ipproto" {
            rule.ipproto = Some(parse_ipproto(args.value(t)?)?);
            g.ipproto = true;
        } else if t == "sport" {
            rule.sport = Some(parse_port_range(args.value(t)?)?);
            g.sport = true;
        } else if t == "dport" {
            rule.dport = Some(parse_port_range(args.value(t)?)?);
            g.dport = true;
        } else {
            let action = match RouteType::from_name(t) {
                Some(RouteType::Blackhole) => RuleAction::Blackhole,
                Some(RouteType::Unreachable) => RuleAction::Unreachable,
                Some(RouteType::Prohibit) => RuleAction::Prohibit,
                Some(RouteType::Unicast) => rule.action,
                _ => {
                    return Err(ParseError::new(
                        t,
                        format!("Failed to parse rule type \"{t}\""),
                    ))
                }
            };
            rule.action = action;
            g.action = true;
        }
    }
    Ok((rule, prio, g))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router {
        let mut r = Router::new();
        r.apply(&[Change::LinkAddVeth {
            name: "veth0".into(),
            peer: "veth1".into(),
        }])
        .unwrap();
        r
    }

    #[test]
    fn tokenizer_handles_comments_and_quotes() {
        assert_eq!(
            tokenize("route add 10.0.0.0/8 dev \"veth0\" # note").unwrap(),
            ["route", "add", "10.0.0.0/8", "dev", "veth0"]
        );
        assert!(tokenize("  # only a comment").unwrap().is_empty());
        assert!(tokenize("x \"open").is_err());
    }

    #[test]
    fn route_lines_decide_their_family() {
        let r = router();
        let c = parse_line("route add 2001:db8::/32 dev veth0", None, &r).unwrap();
        assert!(
            matches!(c, Command::Apply(Change::Route6(ref s, InsertMode::Add)) if s.metric == 1024)
        );
        let c = parse_line("route add default via 192.0.2.1", None, &r).unwrap();
        assert!(matches!(c, Command::Apply(Change::Route4(..))));
        let c = parse_line("-6 route add blackhole default", None, &r).unwrap();
        assert!(
            matches!(c, Command::Apply(Change::Route6(ref s, _)) if s.kind == RouteType::Blackhole)
        );
        let c = parse_line("r a local 10.1.2.3 dev veth0", None, &r).unwrap();
        assert!(
            matches!(c, Command::Apply(Change::Route4(ref s, _)) if s.table == TABLE_LOCAL && s.scope == SCOPE_HOST)
        );
    }

    #[test]
    fn errors_name_the_token() {
        let r = router();
        let e = parse_line("route add 10.0.0.0/33 dev veth0", None, &r).unwrap_err();
        assert_eq!(e.token.as_deref(), Some("10.0.0.0/33"));
        let e = parse_line("route add 10.0.0.1/8 dev veth0", None, &r).unwrap_err();
        assert!(e.message.contains("Invalid prefix"), "{e}");
        let e = parse_line("route add 10.0.0.0/8 dev nosuch", None, &r).unwrap_err();
        assert_eq!(e.errno, Errno::ENODEV);
        assert_eq!(e.token.as_deref(), Some("nosuch"));
        let e = parse_line("route add 10.0.0.0/8 via 2001:db8::1", None, &r).unwrap_err();
        assert_eq!(e.token.as_deref(), Some("2001:db8::1"));
        let e = parse_line("frobnicate", None, &r).unwrap_err();
        assert!(e.message.contains("frobnicate"));
        let e = parse_line("rule add fwmark x lookup 100", None, &r).unwrap_err();
        assert_eq!(e.token.as_deref(), Some("x"));
    }

    #[test]
    fn rules_and_gets() {
        let r = router();
        let c = parse_line("rule add not from 10.0.0.0/8 fwmark 0x10/0xff iif veth0 sport 1000-2000 ipproto tcp pref 100 table 7", None, &r).unwrap();
        let Command::Apply(Change::RuleAdd4(rule)) = c else {
            panic!()
        };
        assert!(rule.invert);
        assert_eq!(rule.fwmark, Some((0x10, 0xff)));
        assert_eq!(rule.sport, Some((1000, 2000)));
        assert_eq!(rule.priority, 100);
        assert_eq!(rule.action, RuleAction::Lookup(7));
        let c = parse_line("rule add from all lookup 5", None, &r).unwrap();
        let Command::Apply(Change::RuleAdd4(rule)) = c else {
            panic!()
        };
        assert_eq!(rule.priority, 32765, "one below the second rule");
        let c = parse_line("route get 10.1.1.1 from 10.0.0.1 iif veth0 mark 7 tos 0x10 ipproto udp sport 5 dport 6 uid 9 fibmatch", None, &r).unwrap();
        let Command::RouteGet(q, _) = c else { panic!() };
        assert_eq!(
            (q.mark, q.tos, q.ipproto, q.sport, q.dport, q.uid, q.fibmatch),
            (7, 0x10, Some(17), Some(5), Some(6), Some(9), true)
        );
    }
}
