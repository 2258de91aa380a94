//! Parsing of iproute2 command lines (`link`, `addr`, `route`, `rule`, `nexthop` objects).
//!
//! Keywords may be abbreviated as ip allows (`matches()`: any prefix of the keyword), checked in
//! ip's order so that the same abbreviation means the same thing. Every error names the token.
//!
//! One module per object (`link`, `addr`, `route` with `show`, `rule`, `nexthop`) over a shared lexical
//! layer (`lexer`) and iproute2's values (`values`, with the name tables of `super::names`).
use crate::addr::{Address, Family};
use crate::error::Errno;
use crate::link::IfAddr;
use crate::nexthop::{NextHop, NhObjectRef};
use crate::prefix::Prefix;
use crate::rib::{InsertMode, RouteSelector};
use crate::route::*;
use crate::router::{Change, FamilyChange, RouteQuery, Router};
use crate::rules::{Rule, RuleAction, RuleAddr, RuleFields, RuleSelector};
use crate::with_family;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

mod addr;
mod lexer;
mod link;
mod nexthop;
mod route;
mod rule;
mod rule_filter;
mod show;
mod values;

use super::names::*;
use addr::*;
pub use lexer::tokenize;
use lexer::*;
use link::*;
pub use nexthop::NexthopFilter;
use nexthop::*;
use route::*;
use rule::*;
pub use rule_filter::RuleFilter;
use rule_filter::*;
use show::*;
use values::*;

/// A line that could not be understood. `message` is what iproute2 would say after "Error: ".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The errno the line fails with: `EINVAL`, or `ENODEV` for an unknown device.
    pub errno: Errno,
    /// The token that could not be read, when the error is about one.
    pub token: Option<String>,
    /// What ip says (wrapped as `Error: MESSAGE.` unless `plain`).
    pub message: String,
    /// ip gives up on the whole batch (`invarg`, `get_prefix` and their kind call `exit`), even
    /// with `-force`. Unknown devices and objects, errors the kernel would report, and what
    /// fibre does not model fail only their line.
    pub fatal: bool,
    /// The exit status ip ends with where the error is `fatal`: 255 after `invarg` and its
    /// kind (`incomplete_command`, `duparg`, an unknown verb: `exit(-1)`), 1 after
    /// `get_prefix` and `get_addr` (`exit(1)`).
    pub status: u8,
    /// `message` is printed as it is, not as `Error: MESSAGE.`.
    pub plain: bool,
    /// What ip printed on standard error while it read the line, before it met the error
    /// (`route get`'s warnings of a destination's length).
    pub warnings: Vec<String>,
}

impl ParseError {
    fn new(token: &str, message: impl Into<String>) -> Self {
        ParseError {
            errno: Errno::EINVAL,
            token: Some(token.to_string()),
            message: message.into(),
            fatal: true,
            status: 1,
            plain: false,
            warnings: Vec::new(),
        }
    }
    fn bare(message: impl Into<String>) -> Self {
        ParseError {
            token: None,
            ..ParseError::new("", message)
        }
    }
    /// ip's own words, printed as they are (not as the kernel's `Error: ...`).
    fn plain(message: impl Into<String>) -> Self {
        ParseError {
            plain: true,
            ..ParseError::bare(message)
        }
    }
    /// What fibre does not model, named by its word `t`: only the line fails.
    fn not_modelled(t: &str) -> Self {
        ParseError::new(t, format!("\"{t}\" is not supported by fibre")).soft()
    }
    fn device(name: &str) -> Self {
        ParseError {
            errno: Errno::ENODEV,
            fatal: false,
            plain: true,
            ..ParseError::new(name, format!("Cannot find device \"{name}\""))
        }
    }
    /// ip's `exit(-1)`, status 255 (see [`ParseError::status`]).
    fn exit_minus_one(mut self) -> Self {
        self.status = 255;
        self
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
    /// `table all` (or `unspec`, `0`): every table.
    All,
    /// One table (`table main` when none is given).
    Id(TableId),
}

/// What `route show` selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShowFilter {
    /// `None`: both families (with `table all`).
    pub family: Option<Family>,
    /// `table T`.
    pub table: TableFilter,
    /// ip's root slot (`filter.rdst`): routes whose destination lies inside it. `root P` and
    /// `exact P` (or `to P`, a plain `P`) set it; the last word wins.
    pub root: Option<IpPrefix>,
    /// ip's match slot (`filter.mdst`): routes whose destination covers it. `match P` and
    /// `exact P` set it (so `exact P` selects P alone); the last word wins.
    pub matching: Option<IpPrefix>,
    /// `from P`: routes whose source prefix is exactly P (IPv4 routes have `0/0`).
    pub src: Option<IpPrefix>,
    /// The match slot holds `default` read without -4/-6: routes of length 0 in either family
    /// (ip reads `default` with no family; `all` and `any` then empty the slot).
    pub default_dst: bool,
    /// `from default` without -4/-6: routes without a source prefix, in either family.
    pub default_src: bool,
    /// `type T` or a bare type name: routes of that type.
    pub kind: Option<RouteType>,
    /// `dev D`: single-path routes through D (ip filters on a top-level output device, which
    /// multipath routes lack), printed without `dev`.
    pub dev: Option<IfIndex>,
    /// `proto P`, printed without `proto`.
    pub protocol: Option<Protocol>,
    /// `via P`: routes whose top-level gateway is in P (routes without one, multipath ones
    /// among them, have the zero address there), printed without `via` when P is one address.
    /// A prefix of length 0 selects every route.
    pub via: Option<IpPrefix>,
    /// `src P`: routes whose preferred source is in P (none is the zero address), printed
    /// without `src` when P is one address; length 0 selects every route.
    pub prefsrc: Option<IpPrefix>,
    /// `scope S` (not `all`), printed without `scope`.
    pub scope: Option<Scope>,
    /// `metric N`, printed without `metric`.
    pub metric: Option<u32>,
    /// `tos T`, printed without `tos`.
    pub tos: Option<u8>,
}

/// A prefix of either family, for filters: `addr/len` as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpPrefix {
    /// The address as given, host bits kept.
    pub addr: IpAddr,
    /// The prefix length.
    pub len: u8,
}

impl IpPrefix {
    /// The prefix in family `A` (host bits cleared), or `None` if it is of the other family.
    pub fn narrow<A: Address>(&self) -> Option<Prefix<A>> {
        Some(Prefix::new(A::from_ip(self.addr)?, self.len))
    }
    /// Family `family`'s 0/0.
    pub fn zero(family: Family) -> IpPrefix {
        let addr = match family {
            Family::Inet => Ipv4Addr::UNSPECIFIED.into(),
            Family::Inet6 => Ipv6Addr::UNSPECIFIED.into(),
        };
        IpPrefix { addr, len: 0 }
    }
}

/// A parsed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// A change to the router.
    Apply(Change),
    /// `route flush`: every route the filter selects goes.
    RouteFlush(ShowFilter),
    /// `route get`.
    RouteGet {
        /// The question.
        query: RouteQuery<IpAddr>,
        /// How many times ip prints the answer (`connected`).
        times: usize,
    },
    /// `route show` / `route list`: print the routes the filter selects.
    RouteShow(ShowFilter),
    /// `rule show`: print the rules of one family that the filter selects.
    RuleShow(RuleFilter),
    /// `rule flush`: delete them, but for those of priority 0.
    RuleFlush(RuleFilter),
    /// `link show`: print every device.
    LinkShow,
    /// `addr show`: print the addresses of one family, or of both for `None`.
    AddrShow(Option<Family>),
    /// `nexthop show` / `nexthop get`: print the next-hop objects the filter selects.
    NexthopShow(NexthopFilter),
    /// `nexthop flush`: delete them (groups first) and say how many went.
    NexthopFlush(NexthopFilter),
    /// An empty or comment-only line.
    Nothing,
}

/// A line read: its command, and what ip prints on standard error as it reads the line (the
/// warnings of `route get`'s destination length, of `addr`'s flags), before it runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadLine {
    /// What the line asks.
    pub command: Command,
    /// ip's warnings, in its order, one line each.
    pub warnings: Vec<String>,
}

/// Parses one batch line against the router's current state. `family` is the global `-4`/`-6`;
/// a line may also start with its own `-4`/`-6`. ip's warnings are left out: see [`read_line`].
pub fn parse_line(line: &str, family: Option<Family>, router: &Router) -> Result<Command> {
    read_line(line, family, router).map(|l| l.command)
}

/// [`parse_line`] with ip's warnings: those of a line that fails too (in its error's
/// [`ParseError::warnings`]), since ip prints them before it meets a later word's error.
pub fn read_line(line: &str, family: Option<Family>, router: &Router) -> Result<ReadLine> {
    let mut warnings = Vec::new();
    match command_of(line, family, router, &mut warnings) {
        Ok(command) => Ok(ReadLine { command, warnings }),
        Err(e) => Err(ParseError { warnings, ..e }),
    }
}

fn command_of(
    line: &str,
    family: Option<Family>,
    router: &Router,
    warnings: &mut Vec<String>,
) -> Result<Command> {
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
        parse_addr(verb, &mut args, family, router, warnings)
    } else if matches(object, "route") {
        parse_route(verb, &mut args, family, router, warnings)
    } else if matches(object, "rule") {
        parse_rule(verb, &mut args, family, router)
    } else if object.len() >= 3 && matches(object, "nexthop") {
        parse_nexthop(verb, &mut args, family, router)
    } else {
        // `do_cmd` says so and returns: only this line fails.
        Err(ParseError {
            plain: true,
            ..ParseError::new(
                object,
                format!("Object \"{object}\" is unknown, try \"ip help\"."),
            )
            .soft()
        })
    }
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

    /// ip sends a finite valid lifetime; fibre refuses it for this line only, naming it (the
    /// prefix routes of an address that expires are not modelled). A finite preferred one,
    /// and 0 (deprecated), are taken.
    #[test]
    fn a_finite_valid_lifetime_is_refused_as_not_modelled() {
        let r = router();
        let e =
            parse_line("addr add 2001:db8::1/64 dev veth0 valid_lft 600", None, &r).unwrap_err();
        assert!(!e.fatal && e.message.contains("valid_lft"), "{e:?}");
        for ok in ["valid_lft forever preferred_lft 30", "preferred_lft 0"] {
            let line = format!("addr add 2001:db8::1/64 dev veth0 {ok}");
            assert!(parse_line(&line, None, &r).is_ok(), "{line}");
        }
    }

    #[test]
    fn route_lines_decide_their_family() {
        let r = router();
        let c = parse_line("route add 2001:db8::/32 dev veth0", None, &r).unwrap();
        assert!(
            matches!(c, Command::Apply(Change::Inet6(FamilyChange::Route(ref s, InsertMode::Add))) if s.metric == 1024)
        );
        let c = parse_line("route add default via 192.0.2.1", None, &r).unwrap();
        assert!(matches!(
            c,
            Command::Apply(Change::Inet(FamilyChange::Route(..)))
        ));
        let c = parse_line("-6 route add blackhole default", None, &r).unwrap();
        assert!(
            matches!(c, Command::Apply(Change::Inet6(FamilyChange::Route(ref s, _))) if s.kind == RouteType::Blackhole)
        );
        let c = parse_line("r a local 10.1.2.3 dev veth0", None, &r).unwrap();
        assert!(
            matches!(c, Command::Apply(Change::Inet(FamilyChange::Route(ref s, _))) if s.table == TABLE_LOCAL && s.scope == SCOPE_HOST)
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

    /// With -4 or -6, ip reads a rule's prefixes in that family (`get_prefix`): one of the
    /// other family ends the batch, exit status 1; without, the kernel refuses it (this line
    /// only). An `invarg` ends it with status 255.
    #[test]
    fn rule_prefixes_of_the_other_family_end_the_batch_where_the_family_is_given() {
        let r = router();
        let line = "rule add pref 5 from 2001:db8::/32 lookup 5";
        let e = parse_line(line, Some(Family::Inet), &r).unwrap_err();
        assert!(e.fatal && e.status == 1, "{e:?}");
        assert_eq!(
            e.message,
            "inet prefix is expected rather than \"2001:db8::/32\""
        );
        let e = parse_line(line, None, &r).unwrap_err();
        assert!(!e.fatal && e.message == "Invalid source address", "{e:?}");
        let e = parse_line("rule add pref 5 to 10.0.0.0/8", Some(Family::Inet6), &r).unwrap_err();
        assert!(e.fatal && e.message.starts_with("inet6 prefix"), "{e:?}");
        let e = parse_line("rule add pref junk", None, &r).unwrap_err();
        assert!(e.fatal && e.status == 255, "{e:?}");
    }

    #[test]
    fn rules_and_gets() {
        let r = router();
        let c = parse_line("rule add not from 10.0.0.0/8 fwmark 0x10/0xff iif veth0 sport 1000-2000 ipproto tcp pref 100 table 7", None, &r).unwrap();
        let Command::Apply(Change::Inet(FamilyChange::RuleAdd(rule))) = c else {
            panic!()
        };
        assert!(rule.invert);
        assert_eq!(rule.fwmark, Some((0x10, 0xff)));
        assert_eq!(rule.sport, Some((1000, 2000)));
        assert_eq!(rule.priority, 100);
        assert_eq!(rule.action, RuleAction::Lookup(7));
        let c = parse_line("rule add from all lookup 5", None, &r).unwrap();
        let Command::Apply(Change::Inet(FamilyChange::RuleAdd(rule))) = c else {
            panic!()
        };
        assert_eq!(rule.priority, 32765, "one below the second rule");
        let c = parse_line("route get 10.1.1.1 from 10.0.0.1 iif veth0 mark 7 tos 0x10 ipproto udp sport 5 dport 6 uid 9 fibmatch", None, &r).unwrap();
        let Command::RouteGet { query: q, .. } = c else {
            panic!()
        };
        assert_eq!(
            (q.mark, q.tos, q.ipproto, q.sport, q.dport, q.uid, q.fibmatch),
            (7, 0x10, Some(17), Some(5), Some(6), Some(9), true)
        );
    }
}
