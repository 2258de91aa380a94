//! `ip rule show|flush [SELECTORS]`: which rules a listing or a flush takes, as ip's
//! `iprule_list_flush_or_save` reads the words and `filter_nlmsg` compares them with what the
//! kernel dumps of each rule. A field the kernel leaves out of its dump reads as 0 there, so
//! a selector of 0 (`fwmark 0`, `ipproto 0`, `table 0`) selects every rule.
use super::*;

/// The selectors of `rule show` or `rule flush`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleFilter {
    /// The family listed: IPv4 unless `-6` (ip asks the kernel for one family's rules).
    pub family: Family,
    /// `pref N`: that priority.
    pub priority: Option<u32>,
    /// `not`: inverted rules only.
    pub invert: bool,
    /// `from P`: rules whose source is P or inside it (as long or longer, the same first
    /// bits); a length of 0 (`from all`) selects every rule.
    pub src: Option<(IpAddr, u8)>,
    /// `to P`, or a prefix alone: the same for the destination.
    pub dst: Option<(IpAddr, u8)>,
    /// `tos T`: that DS field, 0 included.
    pub tos: Option<u8>,
    /// `fwmark M[/K]`: the rule's mark is M, where M is not 0; its mask is K, where K is not 0.
    pub fwmark: (u32, u32),
    /// `iif NAME` / `dev NAME`: that input device name.
    pub iif: Option<String>,
    /// `oif NAME`: that output device name.
    pub oif: Option<String>,
    /// `l3mdev`: rules of an L3 master device (fibre holds none).
    pub l3mdev: bool,
    /// `uidrange LO-HI`: that range.
    pub uidrange: Option<(u32, u32)>,
    /// `ipproto N`: that protocol, where not 0.
    pub ipproto: u8,
    /// `sport LO[-HI]`: that range, where LO is not 0.
    pub sport: (u16, u16),
    /// `dport LO[-HI]`: that range, where LO is not 0.
    pub dport: (u16, u16),
    /// `tun_id N`: rules of that tunnel id, where not 0 (fibre holds none).
    pub tun_id: u64,
    /// `table T` / `lookup T`: rules looking up T, where not 0 (a rule with another action
    /// has table 0).
    pub table: TableId,
    /// `protocol P` (not `all`): rules installed by P. Only `flush` compares it (ip 6.1's
    /// listing does not).
    pub protocol: Option<u8>,
}

/// Reads the selectors after `rule show` or `rule flush`, in ip's order: a word ip does not
/// know is a destination prefix, so `rule show nosuch` ends the batch as ip does.
pub(super) fn parse_rule_filter(args: &mut Args<'_>, family: Option<Family>) -> Result<RuleFilter> {
    let family = family.unwrap_or(Family::Inet);
    let mut f = RuleFilter {
        family,
        priority: None,
        invert: false,
        src: None,
        dst: None,
        tos: None,
        fwmark: (0, 0),
        iif: None,
        oif: None,
        l3mdev: false,
        uidrange: None,
        ipproto: 0,
        sport: (0, 0),
        dport: (0, 0),
        tun_id: 0,
        table: 0,
        protocol: None,
    };
    // `get_prefix` in the listed family; `default`, `all` and `any` have length 0.
    let prefix = |tok: &str| -> Result<(IpAddr, u8)> {
        match parse_any_prefix(tok) {
            Ok(AnyPrefix::Default) => Ok((IpAddr::from(Ipv4Addr::UNSPECIFIED), 0)),
            Ok(AnyPrefix::Addr(a, len)) if Family::of(&a) == family => Ok((a, len)),
            _ => Err(other_family(family, tok)),
        }
    };
    while let Some(t) = args.next() {
        if matches(t, "preference") || matches(t, "order") || matches(t, "priority") {
            f.priority = Some(num("preference value is invalid\n", args.value(t)?)?);
        } else if t == "not" {
            f.invert = true;
        } else if t == "tos" || t == "dsfield" {
            f.tos = Some(parse_tos(args.value(t)?, "TOS value is invalid\n")?);
        } else if t == "fwmark" {
            let v = args.value(t)?;
            let (m, k) = v.split_once('/').unwrap_or((v, "0"));
            f.fwmark = (
                num("fwmark value is invalid\n", m)?,
                num("fwmask value is invalid\n", k)?,
            );
        } else if t == "dev" || t == "iif" {
            f.iif = Some(ifname(
                args.value(t)?,
                "\"iif\"/\"dev\" not a valid ifname",
            )?);
        } else if t == "oif" {
            f.oif = Some(ifname(args.value(t)?, "\"oif\" not a valid ifname")?);
        } else if t == "l3mdev" {
            f.l3mdev = true;
        } else if t == "uidrange" {
            f.uidrange = Some(read_uid_range(args.value(t)?)?);
        } else if matches(t, "tun_id") {
            let v = args.value(t)?;
            // `get_u64`: base 0, the whole word (fibre takes a number past 2^64 - 1, which ip
            // refuses, as -1, which it takes).
            let n = strtoul(v.as_bytes());
            if n.read == 0 || n.read != v.len() {
                return Err(bad_arg("\"tun_id\" value is invalid\n", v));
            }
            f.tun_id = n.value;
        } else if matches(t, "lookup") || matches(t, "table") {
            let v = args.value(t)?;
            f.table =
                table_from_name(v).ok_or_else(|| bad_arg("table id value is invalid\n", v))?;
        } else if matches(t, "from") || matches(t, "src") {
            f.src = Some(prefix(args.value(t)?)?);
        } else if matches(t, "protocol") {
            f.protocol = protocol_selector(args.value(t)?)?;
        } else if t == "ipproto" {
            f.ipproto = parse_ipproto(args.value(t)?)?;
        } else if t == "sport" {
            f.sport = read_port_range(t, args.value(t)?)?;
        } else if t == "dport" {
            f.dport = read_port_range(t, args.value(t)?)?;
        } else {
            let v = if matches(t, "dst") || matches(t, "to") {
                args.value(t)?
            } else {
                t
            };
            f.dst = Some(prefix(v)?);
        }
    }
    Ok(f)
}

/// A device name ip's `check_ifname` takes, or its `invarg` with `message`.
pub(super) fn ifname(tok: &str, message: &str) -> Result<String> {
    if ip_valid_ifname(tok) {
        Ok(tok.to_string())
    } else {
        Err(bad_arg(message, tok))
    }
}

impl RuleFilter {
    /// Whether rule `r` passes `filter_nlmsg`.
    pub fn selects<A: Address>(&self, r: &Rule<A>) -> bool {
        let addr_in = |want: Option<(IpAddr, u8)>, have: Option<RuleAddr<A>>| match want {
            None | Some((_, 0)) => true,
            Some((ip, len)) => have.is_some_and(|h| {
                h.len >= len && A::from_ip(ip).is_some_and(|a| Prefix::new(a, len).contains(h.addr))
            }),
        };
        let (mark, mask) = r.fwmark.unwrap_or((0, 0));
        let table = match r.action {
            RuleAction::Lookup(t) => t,
            _ => 0,
        };
        self.priority.is_none_or(|p| p == r.priority)
            && (!self.invert || r.invert)
            && addr_in(self.src, r.src)
            && addr_in(self.dst, r.dst)
            && self.tos.is_none_or(|t| t == r.tos)
            && (self.fwmark.0 == 0 || self.fwmark.0 == mark)
            && (self.fwmark.1 == 0 || self.fwmark.1 == mask)
            && self.iif.as_ref().is_none_or(|n| r.iif.as_ref() == Some(n))
            && self.oif.as_ref().is_none_or(|n| r.oif.as_ref() == Some(n))
            && !self.l3mdev
            && self.uidrange.is_none_or(|u| r.uidrange == Some(u))
            && (self.ipproto == 0 || Some(self.ipproto) == r.ipproto)
            && (self.sport.0 == 0 || Some(self.sport) == r.sport)
            && (self.dport.0 == 0 || Some(self.dport) == r.dport)
            && self.tun_id == 0
            && (self.table == 0 || self.table == table)
    }

    /// Whether `rule flush` deletes rule `r`: one the filter selects, of its protocol where
    /// one was given, and with a priority (the kernel dumps none for priority 0, and ip
    /// deletes only a rule it can name by one).
    pub fn flushes<A: Address>(&self, r: &Rule<A>) -> bool {
        self.selects(r) && self.protocol.is_none_or(|p| p == r.protocol) && r.priority != 0
    }
}
