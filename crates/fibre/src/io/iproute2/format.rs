//! Printing as `ip` prints: text lines and `-j` JSON objects with ip's field names.
use super::names::*;
use crate::addr::{Address, Family};
use crate::link::{IfAddr, Link, Links};
use crate::nexthop::{NhObject, NhObjectKind};
use crate::route::*;
use crate::router::{AnswerHops, RouteAnswer};
use crate::rules::{Rule, RuleAction, RuleAddr};
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// How a prefix is printed: `default`, a bare address for host routes, else `ADDR/LEN`.
pub fn prefix_text<A: Address>(p: &crate::prefix::Prefix<A>) -> String {
    if p.is_default() {
        "default".into()
    } else if p.is_host() {
        p.addr().to_string()
    } else {
        p.to_string()
    }
}

/// `rtnl_dsfield_n2a`: a name from rt_dsfield, else hex.
pub fn tos_text(tos: u8) -> String {
    DSFIELD_NAMES
        .iter()
        .find(|(v, _)| *v == tos)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| format!("0x{tos:02x}"))
}

fn dev_name(links: &Links, dev: Option<IfIndex>) -> Option<String> {
    dev.map(|d| {
        links
            .name_of(d)
            .map(str::to_string)
            .unwrap_or_else(|| format!("if{d}"))
    })
}

/// The device a route shows: IPv6 reject routes sit on `lo`.
fn shown_dev<A: Address>(r: &RouteSpec<A>, links: &Links) -> Option<String> {
    match r.hops.as_slice() {
        [h] => dev_name(links, h.dev),
        [] if A::FAMILY == Family::Inet6 => Some("lo".into()),
        _ => None,
    }
}

/// Next-hop flags as ip prints them: `dead` (device down), `onlink`, `linkdown` (no carrier).
fn hop_flags<A: Address>(h: &crate::nexthop::NextHop<A>, links: &Links) -> Vec<&'static str> {
    let mut f = Vec::new();
    let dev = h.dev;
    let up = dev.is_some_and(|d| links.is_up(d));
    if dev.is_some() && !up {
        f.push("dead");
    }
    if h.onlink {
        f.push("onlink");
    }
    if dev.is_some() && !dev.is_some_and(|d| links.is_ready(d)) {
        f.push("linkdown");
    }
    f
}

/// The flags of a single-path route are its next hop's. Routes to our own addresses carry no
/// state flags, nor IPv4 host-scope routes (the kernel spares their next hops when devices go
/// down), but the `onlink` they were given; reject routes carry none (a blackhole next-hop
/// object's `dev lo` is never marked, `lo` down or not).
fn route_flags<A: Address>(r: &RouteSpec<A>, links: &Links) -> Vec<&'static str> {
    let host = A::FAMILY == Family::Inet && r.scope == SCOPE_HOST;
    let own = matches!(r.kind, RouteType::Local | RouteType::Anycast);
    match r.hops.as_slice() {
        [_] if r.kind.is_reject() => Vec::new(),
        [h] if host || own => h.onlink.then_some("onlink").into_iter().collect(),
        [h] => hop_flags(h, links),
        _ => Vec::new(),
    }
}

/// Printed as a list of `nexthop` lines: several next hops, or an IPv6 route through a group
/// (the kernel gives it RTA_MULTIPATH even for one member; IPv4 does not).
pub(super) fn multipath<A: Address>(r: &RouteSpec<A>) -> bool {
    r.hops.len() > 1 || (A::FAMILY == Family::Inet6 && r.nhid.is_some_and(|n| n.group))
}

/// IPv4 routes carry a metric attribute only when it is not 0; IPv6 routes always.
fn shows_metric<A: Address>(r: &RouteSpec<A>, shown: Shown) -> bool {
    shown.metric && (A::FAMILY == Family::Inet6 || r.metric != 0)
}

/// What a listing prints that the route alone does not decide: ip prints `table` for tables
/// other than main only when it lists more than one, and no `metric` when its filter names it.
#[derive(Clone, Copy, Debug)]
pub struct Shown {
    /// Print `table` (for tables other than main).
    pub table: bool,
    /// Print `metric`.
    pub metric: bool,
}

impl Shown {
    /// Everything: a route on its own (`route get fibmatch`).
    pub const ALL: Shown = Shown {
        table: true,
        metric: true,
    };
}

/// One route as `ip route show` prints it (without the newline).
pub fn route_text<A: Address>(r: &RouteSpec<A>, links: &Links, shown: Shown) -> String {
    let mut s = String::new();
    if r.kind != RouteType::Unicast {
        let _ = write!(s, "{} ", r.kind.name());
    }
    let _ = write!(s, "{} ", prefix_text(&r.dst));
    if !r.src.is_default() {
        let _ = write!(s, "from {} ", prefix_text(&r.src));
    }
    if let Some(n) = r.nhid {
        let _ = write!(s, "nhid {} ", n.id);
    }
    if r.tos != 0 {
        let _ = write!(s, "tos {} ", tos_text(r.tos));
    }
    let multipath = multipath(r);
    if !multipath {
        if let Some(gw) = r.hops.first().and_then(|h| h.gateway) {
            let _ = write!(s, "via {gw} ");
        }
        if let Some(d) = shown_dev(r, links) {
            let _ = write!(s, "dev {d} ");
        }
    }
    if shown.table && r.table != TABLE_MAIN {
        let _ = write!(s, "table {} ", table_name(r.table));
    }
    if r.protocol != PROTO_BOOT {
        let _ = write!(s, "proto {} ", protocol_name(r.protocol));
    }
    if r.scope != SCOPE_UNIVERSE {
        let _ = write!(s, "scope {} ", scope_name(r.scope));
    }
    if let Some(p) = r.prefsrc {
        let _ = write!(s, "src {p} ");
    }
    if shows_metric(r, shown) {
        let _ = write!(s, "metric {} ", r.metric);
    }
    for f in route_flags(r, links) {
        let _ = write!(s, "{f} ");
    }
    if let Some(mtu) = r.mtu {
        let _ = write!(s, "mtu {mtu} ");
    }
    if A::FAMILY == Family::Inet6 {
        let _ = write!(s, "pref {}", r.pref.name());
    }
    if multipath {
        for h in &r.hops {
            s.push_str("\n\tnexthop ");
            if let Some(gw) = h.gateway {
                let _ = write!(s, "via {gw} ");
            }
            if let Some(d) = dev_name(links, h.dev) {
                let _ = write!(s, "dev {d} ");
            }
            let _ = write!(s, "weight {} ", h.weight);
            for f in hop_flags(h, links) {
                let _ = write!(s, "{f} ");
            }
        }
    }
    s
}

/// One route as an `ip -j route show` object.
pub fn route_json<A: Address>(r: &RouteSpec<A>, links: &Links, shown: Shown) -> Map<String, Value> {
    let mut m = Map::new();
    if r.kind != RouteType::Unicast {
        m.insert("type".into(), json!(r.kind.name()));
    }
    m.insert("dst".into(), json!(prefix_text(&r.dst)));
    if !r.src.is_default() {
        m.insert("from".into(), json!(prefix_text(&r.src)));
    }
    if let Some(n) = r.nhid {
        m.insert("nhid".into(), json!(n.id));
    }
    if r.tos != 0 {
        m.insert("tos".into(), json!(tos_text(r.tos)));
    }
    let multipath = multipath(r);
    if !multipath {
        if let Some(gw) = r.hops.first().and_then(|h| h.gateway) {
            m.insert("gateway".into(), json!(gw.to_string()));
        }
        if let Some(d) = shown_dev(r, links) {
            m.insert("dev".into(), json!(d));
        }
    }
    if shown.table && r.table != TABLE_MAIN {
        m.insert("table".into(), json!(table_name(r.table)));
    }
    if r.protocol != PROTO_BOOT {
        m.insert("protocol".into(), json!(protocol_name(r.protocol)));
    }
    if r.scope != SCOPE_UNIVERSE {
        m.insert("scope".into(), json!(scope_name(r.scope)));
    }
    if let Some(p) = r.prefsrc {
        m.insert("prefsrc".into(), json!(p.to_string()));
    }
    if shows_metric(r, shown) {
        m.insert("metric".into(), json!(r.metric));
    }
    m.insert("flags".into(), json!(route_flags(r, links)));
    if let Some(mtu) = r.mtu {
        m.insert("metrics".into(), json!([{ "mtu": mtu }]));
    }
    if A::FAMILY == Family::Inet6 {
        m.insert("pref".into(), json!(r.pref.name()));
    }
    if multipath {
        let hops: Vec<Value> = r
            .hops
            .iter()
            .map(|h| {
                let mut o = Map::new();
                if let Some(gw) = h.gateway {
                    o.insert("gateway".into(), json!(gw.to_string()));
                }
                if let Some(d) = dev_name(links, h.dev) {
                    o.insert("dev".into(), json!(d));
                }
                o.insert("weight".into(), json!(h.weight));
                o.insert("flags".into(), json!(hop_flags(h, links)));
                Value::Object(o)
            })
            .collect();
        m.insert("nexthops".into(), Value::Array(hops));
    }
    m
}

/// One device as `ip link show` prints it (the part fibre models): text and `-j` object.
pub fn link_line(l: &Link) -> (String, Value) {
    let state = if l.up { "UP" } else { "DOWN" };
    let text = format!(
        "{}: {}: <{}> state {state}",
        l.index,
        l.name,
        if l.up { "UP" } else { "" }
    );
    (
        text,
        json!({"ifindex": l.index, "ifname": l.name, "operstate": state}),
    )
}

/// One address as `ip addr show` prints it (the part fibre models): text and `-j` object.
pub fn addr_line<A: Address>(a: &IfAddr<A>, links: &Links) -> (String, Value) {
    let dev = links.name_of(a.dev).unwrap_or("?");
    let family = if A::FAMILY == Family::Inet {
        "inet"
    } else {
        "inet6"
    };
    let scope = scope_name(a.scope);
    let mut json = json!({"family": family, "local": a.addr.to_string(), "prefixlen": a.len,
                          "scope": scope, "dev": dev});
    if a.deprecated {
        // As `ip -j addr show` says it, after the scope.
        json["deprecated"] = json!(true);
    }
    let deprecated = if a.deprecated { " deprecated" } else { "" };
    (
        format!(
            "{family} {}/{} scope {scope}{deprecated} dev {dev}",
            a.addr, a.len
        ),
        json,
    )
}

/// `ip route get ... fibmatch`: the matched route as stored, but for two things of the
/// resolved route: IPv4 prints its type (`multicast default via ...`), IPv6 its input device.
pub fn fibmatch_json<A: Address>(
    a: &RouteAnswer<A>,
    r: &Route<A, AnswerHops<A>>,
    links: &Links,
) -> Map<String, Value> {
    let mut m = route_json(&fibmatch_route(a, r), links, Shown::ALL);
    if A::FAMILY == Family::Inet6 {
        if let Some(i) = a.iif {
            m.insert("iif".into(), json!(dev_name(links, Some(i))));
        }
    }
    m
}

/// `ip route get ... fibmatch` as text: what [`fibmatch_json`] holds, in ip's words.
pub fn fibmatch_text<A: Address>(
    a: &RouteAnswer<A>,
    r: &Route<A, AnswerHops<A>>,
    links: &Links,
) -> String {
    let mut s = route_text(&fibmatch_route(a, r), links, Shown::ALL);
    if A::FAMILY == Family::Inet6 {
        if let Some(iif) = dev_name(links, a.iif) {
            // ip prints the input device before the router preference.
            if let Some(at) = s.rfind("pref ") {
                s.insert_str(at, &format!("iif {iif} "));
            }
        }
    }
    s
}

/// The matched route as `fibmatch` shows it: IPv4 reports the resolved route's type.
fn fibmatch_route<A: Address>(a: &RouteAnswer<A>, r: &Route<A, AnswerHops<A>>) -> RouteSpec<A> {
    RouteSpec {
        kind: if A::FAMILY == Family::Inet {
            a.kind
        } else {
            r.kind
        },
        ..r.with_hops(r.hops.to_vec())
    }
}

/// `ip route get` without `fibmatch`: the resolved path.
pub fn answer_json<A: Address>(a: &RouteAnswer<A>, links: &Links, uid: u32) -> Map<String, Value> {
    let mut m = Map::new();
    let v4 = A::FAMILY == Family::Inet;
    if a.kind != RouteType::Unicast {
        m.insert("type".into(), json!(a.kind.name()));
    }
    m.insert("dst".into(), json!(a.dst.to_string()));
    // IPv6 always names the source; IPv4 when the query gave one (and then shows no prefsrc).
    if !v4 || a.src.is_some() {
        m.insert(
            "from".into(),
            json!(a.src.unwrap_or_else(A::unspecified).to_string()),
        );
    }
    if let Some(r) = a.route.as_ref().filter(|r| v4 && r.tos != 0) {
        m.insert("tos".into(), json!(tos_text(r.tos)));
    }
    if let Some(gw) = a.gateway {
        m.insert("gateway".into(), json!(gw.to_string()));
    }
    // IPv6 delivers packets to our own addresses through lo (IPv4 answers say so themselves).
    let dev = if !v4 && a.kind == RouteType::Local {
        Some("lo".to_string())
    } else {
        dev_name(links, a.dev)
    };
    if let Some(d) = dev {
        m.insert("dev".into(), json!(d));
    }
    if let Some(r) = &a.route {
        if r.table != TABLE_MAIN {
            m.insert("table".into(), json!(table_name(r.table)));
        }
        if !v4 && r.protocol != PROTO_BOOT {
            m.insert("protocol".into(), json!(protocol_name(r.protocol)));
        }
    }
    // IPv4 prints none for a forwarded packet or when the query gave one; IPv6's answer holds
    // what it prints (a forwarded packet's: the route's own).
    if let Some(p) = a
        .prefsrc
        .filter(|_| !v4 || (a.iif.is_none() && a.src.is_none()))
    {
        m.insert("prefsrc".into(), json!(p.to_string()));
    }
    if !v4 {
        if let Some(r) = &a.route {
            m.insert("metric".into(), json!(r.metric));
        }
    }
    let iif = a.iif.map(|i| json!(dev_name(links, Some(i))));
    if !v4 {
        if let Some(i) = &iif {
            m.insert("iif".into(), i.clone());
        }
    }
    // iproute2 reads RTCF_MULTICAST as RTM_F_OFFLOAD_FAILED, the same bit.
    let flags: Vec<&str> = if v4 && a.cache.multicast {
        vec!["rt_offload_failed"]
    } else {
        vec![]
    };
    m.insert("flags".into(), json!(flags));
    if v4 {
        if a.mark != 0 {
            m.insert("mark".into(), json!(a.mark));
        }
        // Forwarded packets have no owner; their input device is printed after the cache.
        if iif.is_none() {
            m.insert("uid".into(), json!(uid));
        }
        m.insert("cache".into(), json!(a.cache.names()));
        if let Some(i) = iif {
            m.insert("iif".into(), i);
        }
    } else if let Some(r) = &a.route {
        m.insert("pref".into(), json!(r.pref.name()));
    }
    m
}

/// `ip route get` without `fibmatch`, as text: [`answer_json`]'s fields in ip's order, then
/// for IPv4 the `cache` line. `uid` is the query's (printed on IPv4 output-path answers).
pub fn answer_text<A: Address>(a: &RouteAnswer<A>, links: &Links, uid: u32) -> String {
    let m = answer_json(a, links, uid);
    let v4 = A::FAMILY == Family::Inet;
    let mut s = String::new();
    if let Some(t) = m.get("type").and_then(Value::as_str) {
        let _ = write!(s, "{t} ");
    }
    for (key, word) in [
        ("dst", ""),
        ("from", "from"),
        ("tos", "tos"),
        ("gateway", "via"),
        ("dev", "dev"),
        ("table", "table"),
        ("protocol", "proto"),
        ("prefsrc", "src"),
        ("metric", "metric"),
        ("iif", "iif"),
    ] {
        // IPv4 prints the input device after the cache line.
        if key == "iif" && v4 {
            continue;
        }
        if let Some(v) = m.get(key) {
            let v = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            if word.is_empty() {
                let _ = write!(s, "{v} ");
            } else {
                let _ = write!(s, "{word} {v} ");
            }
        }
    }
    if v4 {
        if a.cache.multicast {
            s.push_str("rt_offload_failed ");
        }
        // ip prints a mark below 16 in decimal, a larger one in hex.
        if a.mark >= 16 {
            let _ = write!(s, "mark {:#x} ", a.mark);
        } else if a.mark != 0 {
            let _ = write!(s, "mark {} ", a.mark);
        }
        if a.iif.is_none() {
            let _ = write!(s, "uid {uid} ");
        }
        s.push_str("\n    cache ");
        let flags = a.cache.names();
        if !flags.is_empty() {
            let _ = write!(s, "<{}> ", flags.join(","));
        }
        if let Some(i) = m.get("iif").and_then(Value::as_str) {
            let _ = write!(s, "iif {i} ");
        }
    } else if let Some(p) = m.get("pref").and_then(Value::as_str) {
        let _ = write!(s, "pref {p}");
    }
    s
}

/// A rule's address as ip prints it: as given, host bits included; `all` for length 0.
fn rule_addr_text<A: Address>(p: &RuleAddr<A>) -> String {
    if p.len == 0 {
        "all".into()
    } else if p.prefix().is_host() {
        p.addr.to_string()
    } else {
        format!("{}/{}", p.addr, p.len)
    }
}

fn rule_action_text(a: RuleAction) -> String {
    match a {
        RuleAction::Lookup(t) => format!("lookup {}", table_name(t)),
        RuleAction::Goto(p) => format!("goto {p}"),
        RuleAction::Nop => "nop".into(),
        RuleAction::Blackhole => "blackhole".into(),
        RuleAction::Unreachable => "unreachable".into(),
        RuleAction::Prohibit => "prohibit".into(),
    }
}

fn range_text((a, b): (u16, u16)) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

/// A number as C's `%#x` prints it (ip's `print_0xhex`): `0x` before any digit but 0.
fn c_hex(v: u32) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
    }
}

/// What a rule's listing says of its state beside its fields (the kernel's `FIB_RULE_*` flags).
#[derive(Clone, Copy, Debug, Default)]
pub struct RuleMarks {
    /// A `goto` to a priority no rule has (`[unresolved]`).
    pub unresolved: bool,
    /// `iif NAME` names no device (`[detached]`).
    pub iif_detached: bool,
    /// `oif NAME` names no device (`[detached]`).
    pub oif_detached: bool,
}

/// One rule as `ip rule show` prints it.
pub fn rule_text<A: Address>(r: &Rule<A>, marks: RuleMarks) -> String {
    let mut s = format!("{}:\t", r.priority);
    if r.invert {
        s.push_str("not ");
    }
    let _ = write!(
        s,
        "from {}",
        r.src.as_ref().map_or("all".to_string(), rule_addr_text)
    );
    if let Some(d) = &r.dst {
        let _ = write!(s, " to {}", rule_addr_text(d));
    }
    if r.tos != 0 {
        let _ = write!(s, " tos {}", tos_text(r.tos));
    }
    if let Some((m, mask)) = r.fwmark {
        let _ = write!(s, " fwmark {}", c_hex(m));
        if mask != u32::MAX {
            let _ = write!(s, "/{}", c_hex(mask));
        }
    }
    if let Some(i) = &r.iif {
        let _ = write!(s, " iif {i}");
        if marks.iif_detached {
            s.push_str(" [detached]");
        }
    }
    if let Some(o) = &r.oif {
        let _ = write!(s, " oif {o}");
        if marks.oif_detached {
            s.push_str(" [detached]");
        }
    }
    if let Some((a, b)) = r.uidrange {
        let _ = write!(s, " uidrange {a}-{b}");
    }
    if let Some(p) = r.ipproto {
        let _ = write!(s, " ipproto {}", ipproto_name(p));
    }
    if let Some(p) = r.sport {
        let _ = write!(s, " sport {}", range_text(p));
    }
    if let Some(p) = r.dport {
        let _ = write!(s, " dport {}", range_text(p));
    }
    let _ = write!(s, " {}", rule_action_text(r.action));
    if marks.unresolved {
        s.push_str(" [unresolved]");
    }
    if let Some(n) = r.suppress_prefixlength {
        let _ = write!(s, " suppress_prefixlength {n}");
    }
    if shows_protocol(r.protocol) {
        let _ = write!(s, " proto {}", protocol_name(r.protocol));
    }
    s
}

/// One rule as an `ip -j rule show` object.
/// ip leaves a rule's protocol out when it is `unspec` or `kernel` (the default rules').
fn shows_protocol(p: u8) -> bool {
    p != PROTO_UNSPEC && p != PROTO_KERNEL
}

/// One rule as an `ip -j rule show` object.
pub fn rule_json<A: Address>(r: &Rule<A>, marks: RuleMarks) -> Value {
    let mut m = Map::new();
    m.insert("priority".into(), json!(r.priority));
    if r.invert {
        m.insert("not".into(), Value::Null);
    }
    match &r.src {
        None => m.insert("src".into(), json!("all")),
        Some(p) => {
            m.insert("src".into(), json!(p.addr.to_string()));
            if !p.prefix().is_host() {
                m.insert("srclen".into(), json!(p.len));
            }
            None
        }
    };
    if let Some(p) = &r.dst {
        m.insert("dst".into(), json!(p.addr.to_string()));
        if !p.prefix().is_host() {
            m.insert("dstlen".into(), json!(p.len));
        }
    }
    if r.tos != 0 {
        m.insert("tos".into(), json!(tos_text(r.tos)));
    }
    if let Some((mark, mask)) = r.fwmark {
        m.insert("fwmark".into(), json!(c_hex(mark)));
        if mask != u32::MAX {
            m.insert("fwmask".into(), json!(c_hex(mask)));
        }
    }
    if let Some(i) = &r.iif {
        m.insert("iif".into(), json!(i));
        if marks.iif_detached {
            m.insert("iif_detached".into(), Value::Null);
        }
    }
    if let Some(o) = &r.oif {
        m.insert("oif".into(), json!(o));
        if marks.oif_detached {
            m.insert("oif_detached".into(), Value::Null);
        }
    }
    if let Some((a, b)) = r.uidrange {
        m.insert("uid_start".into(), json!(a));
        m.insert("uid_end".into(), json!(b));
    }
    if let Some(p) = r.ipproto {
        m.insert("ipproto".into(), json!(ipproto_name(p)));
    }
    // A range of one port is printed as the port.
    for (name, range) in [("sport", r.sport), ("dport", r.dport)] {
        match range {
            Some((a, b)) if a == b => {
                m.insert(name.into(), json!(a));
            }
            Some((a, b)) => {
                m.insert(format!("{name}_start"), json!(a));
                m.insert(format!("{name}_end"), json!(b));
            }
            None => {}
        }
    }
    match r.action {
        RuleAction::Lookup(t) => {
            m.insert("table".into(), json!(table_name(t)));
        }
        RuleAction::Goto(p) => {
            m.insert("goto".into(), json!(p));
            if marks.unresolved {
                m.insert("unresolved".into(), Value::Null);
            }
        }
        // `print_null(PRINT_ANY, "nop", ...)`: a key of its own.
        RuleAction::Nop => {
            m.insert("nop".into(), Value::Null);
        }
        other => {
            m.insert("action".into(), json!(rule_action_text(other)));
        }
    }
    if let Some(n) = r.suppress_prefixlength {
        m.insert("suppress_prefixlen".into(), json!(n));
    }
    if shows_protocol(r.protocol) {
        m.insert("protocol".into(), json!(protocol_name(r.protocol)));
    }
    Value::Object(m)
}

/// One next-hop object as `ip nexthop show` prints it: text (with ip's trailing space) and
/// `-j` object, fields in ip's order.
pub fn nexthop_line<A: Address>(o: &NhObject<A>, links: &Links) -> (String, Value) {
    let mut s = format!("id {} ", o.id);
    let mut m = Map::new();
    m.insert("id".into(), json!(o.id));
    let mut flags = Vec::new();
    match &o.kind {
        NhObjectKind::Group(members) => {
            let text: Vec<String> = members
                .iter()
                .map(|g| match g.weight {
                    1 => g.id.to_string(),
                    w => format!("{},{w}", g.id),
                })
                .collect();
            let _ = write!(s, "group {} ", text.join("/"));
            let list: Vec<Value> = members
                .iter()
                .map(|g| match g.weight {
                    1 => json!({ "id": g.id }),
                    w => json!({ "id": g.id, "weight": w }),
                })
                .collect();
            m.insert("group".into(), Value::Array(list));
        }
        NhObjectKind::Hop { hop, scope } => {
            if let Some(gw) = hop.gateway {
                let _ = write!(s, "via {gw} ");
                m.insert("gateway".into(), json!(gw.to_string()));
            }
            if let Some(d) = dev_name(links, hop.dev) {
                let _ = write!(s, "dev {d} ");
                m.insert("dev".into(), json!(d));
            }
            if *scope != SCOPE_UNIVERSE {
                let _ = write!(s, "scope {} ", scope_name(*scope));
                m.insert("scope".into(), json!(scope_name(*scope)));
            }
            if hop.onlink {
                flags.push("onlink");
            }
        }
        NhObjectKind::Blackhole => {
            s.push_str("blackhole ");
            m.insert("blackhole".into(), Value::Null);
        }
    }
    if o.protocol != PROTO_UNSPEC {
        let _ = write!(s, "proto {} ", protocol_name(o.protocol));
        m.insert("protocol".into(), json!(protocol_name(o.protocol)));
    }
    for f in &flags {
        let _ = write!(s, "{f} ");
    }
    m.insert("flags".into(), json!(flags));
    (s, Value::Object(m))
}
