//! Read-only commands over a borrowed router: what a batch prints (`route get`, `route show`,
//! `rule show`, `nexthop show`, `link show`, `addr show`), and what a mirror's socket answers
//! while the mirror goes on changing another copy.
use super::batch::LineError;
use super::format::*;
use super::parse::{parse_line, Command, IpPrefix, NexthopFilter, ShowFilter, TableFilter};
use crate::addr::{Address, Family};
use crate::error::{ChangeError, Errno};
use crate::nexthop::NhObjectKind;
use crate::rib::Rib;
use crate::route::{RouteSpec, LOOPBACK_IFINDEX, PROTO_BOOT};
use crate::router::{RouteAnswer, RouteQuery, Router, RouterFamily};
use crate::rules::RuleAction;
use crate::with_family;
use serde_json::Value;
use std::fmt::Write;

/// A router read with the options of one `ip` invocation.
#[derive(Clone, Copy)]
pub struct Query<'r> {
    /// The router read.
    pub router: &'r Router,
    /// `-4` / `-6`.
    pub family: Option<Family>,
    /// `-j`: one JSON line per printing command.
    pub json: bool,
    /// A command of the command line (see [`super::Batch`]): a dump of a missing table fails.
    pub(super) command_line: bool,
}

impl<'r> Query<'r> {
    /// Reads `router` with ip's defaults, `-j` if `json`.
    pub fn new(router: &'r Router, json: bool) -> Self {
        Query {
            router,
            family: None,
            json,
            command_line: false,
        }
    }

    /// Runs one line that reads; a line that would change the router is refused (EOPNOTSUPP).
    pub fn run_line(&self, line: &str, stdout: &mut dyn Write) -> Result<(), LineError> {
        match parse_line(line, self.family, self.router)? {
            Command::Apply(_)
            | Command::RouteFlush(_)
            | Command::RuleFlush(_)
            | Command::NexthopFlush(_) => Err(LineError {
                errno: Errno::EOPNOTSUPP,
                message: "Error: read-only: this router follows a kernel; change the kernel."
                    .into(),
                fatal: false,
                status: 1,
            }),
            cmd => self.run(cmd, stdout),
        }
    }

    /// Answers one line as a mirror's socket does: always one line of JSON, without its
    /// newline. The line may begin with ip's family options (`-4`, `-6`; `-j` is implied).
    /// What `ip -j` prints on success (a listing, a `route get` answer; `[]` for a line that
    /// prints nothing), or on failure `{"error", "errno", "command", "message"}` as a `-j`
    /// batch prints it.
    pub fn answer(&self, line: &str) -> String {
        let mut query = Query {
            json: true,
            ..*self
        };
        let mut rest = line.trim_start();
        loop {
            let (word, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            match word {
                "-4" => query.family = Some(Family::Inet),
                "-6" => query.family = Some(Family::Inet6),
                "-j" | "-json" => {}
                _ => break,
            }
            rest = tail.trim_start();
        }
        let mut out = String::new();
        match query.run_line(rest, &mut out) {
            Ok(()) => {
                let printed: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
                match printed.as_slice() {
                    [] => "[]".to_string(),
                    [one] => (*one).to_string(),
                    // `route get` run more than once: one array of the answers' arrays.
                    many => format!("[{}]", many.join(",")),
                }
            }
            Err(e) => serde_json::json!({
                "error": e.errno.name(),
                "errno": e.errno.code(),
                "command": line.trim(),
                "message": e.message.trim_end(),
            })
            .to_string(),
        }
    }

    /// Runs a parsed command that reads.
    pub(super) fn run(&self, cmd: Command, stdout: &mut dyn Write) -> Result<(), LineError> {
        match cmd {
            Command::Nothing => Ok(()),
            Command::RouteGet {
                query: q, times, ..
            } => {
                with_family!(Family::of(&q.dst), A => {
                    let q = q.narrow::<A>().expect("the parser checked the families");
                    // Refused with the kernel's message, once for the line.
                    if !Router::queries_protocol::<A>(q.ipproto) {
                        return Err(
                            ChangeError::with(Errno::EOPNOTSUPP, "Unsupported ip proto").into()
                        );
                    }
                    for _ in 0..times {
                        let a = self.router.route_get(&q)?;
                        self.print_answer(&a, &q, stdout);
                    }
                });
                Ok(())
            }
            Command::RouteShow(f) => {
                self.check_table(&f, "Dump")?;
                // Printed route by route: a full table is never held as text or JSON.
                let mut lines = Lines::open(self.json, stdout);
                for fam in families(f.family) {
                    with_family!(fam, A => self.show::<A>(&f, &mut lines));
                }
                lines.close();
                Ok(())
            }
            Command::RuleShow(filter) => {
                let lines = with_family!(filter.family, A => {
                    let rules = self.router.family::<A>().rules();
                    let links = self.router.links();
                    let detached = |name: &Option<String>| {
                        name.as_deref().is_some_and(|n| links.by_name(n).is_none())
                    };
                    rules
                        .iter()
                        .filter(|r| filter.selects(r))
                        .map(|r| {
                            let marks = RuleMarks {
                                unresolved: matches!(r.action, RuleAction::Goto(t)
                                    if rules.goto_target(t).is_none()),
                                iif_detached: detached(&r.iif),
                                oif_detached: detached(&r.oif),
                            };
                            (rule_text(r, marks), rule_json(r, marks))
                        })
                        .collect()
                });
                self.emit(lines, stdout);
                Ok(())
            }
            Command::LinkShow => {
                let lines = self.router.links().iter().map(link_line).collect();
                self.emit(lines, stdout);
                Ok(())
            }
            Command::NexthopShow(f) => {
                let objects = self.nexthops_selected(&f)?;
                let links = self.router.links();
                let lines = objects
                    .into_iter()
                    .map(|(_, fam, id)| {
                        with_family!(fam, A => nexthop_line(&self.router.family::<A>().objects()[&id], links))
                    })
                    .collect();
                self.emit(lines, stdout);
                Ok(())
            }
            Command::AddrShow(only) => {
                let links = self.router.links();
                let mut lines = Vec::new();
                for fam in families(only) {
                    with_family!(fam, A => lines.extend(
                        self.router.family::<A>().addrs().iter().map(|a| addr_line(a, links))
                    ));
                }
                self.emit(lines, stdout);
                Ok(())
            }
            Command::Apply(_)
            | Command::RouteFlush(_)
            | Command::RuleFlush(_)
            | Command::NexthopFlush(_) => {
                unreachable!("changes are run by a batch")
            }
        }
    }

    /// The next-hop objects a filter selects, by id: (is a group, family, id).
    pub(super) fn nexthops_selected(
        &self,
        f: &NexthopFilter,
    ) -> Result<Vec<(bool, Family, u32)>, LineError> {
        if let Some(id) = f.id {
            let fam = self.router.object_family(id).ok_or(Errno::ENOENT)?;
            let group = with_family!(fam, A => self.router.family::<A>().objects()[&id].is_group());
            return Ok(vec![(group, fam, id)]);
        }
        let mut out = Vec::new();
        for fam in families(None) {
            with_family!(fam, A => {
                for o in self.router.family::<A>().objects().values() {
                    let group = o.is_group();
                    let on_dev = match &o.kind {
                        NhObjectKind::Hop { hop, .. } => hop.dev,
                        NhObjectKind::Blackhole => Some(LOOPBACK_IFINDEX),
                        NhObjectKind::Group(_) => None,
                    };
                    let keep = f.family.is_none_or(|want| want == fam && !group)
                        && f.dev.is_none_or(|d| on_dev == Some(d))
                        && (!f.groups || group)
                        && f.protocol.is_none_or(|p| p == o.protocol);
                    if keep {
                        out.push((group, fam, o.id));
                    }
                }
            });
        }
        out.sort_by_key(|x| x.2);
        Ok(out)
    }

    /// A dump of one table that the family does not have fails, outside `-batch`.
    pub(super) fn check_table(&self, f: &ShowFilter, what: &str) -> Result<(), LineError> {
        let TableFilter::Id(t) = f.table else {
            return Ok(());
        };
        let missing = f.family.map(|fam| {
            let name = if fam == Family::Inet { "ipv4" } else { "ipv6" };
            (
                name,
                with_family!(fam, A => self.router.family::<A>().table(t).is_none()),
            )
        });
        match missing {
            Some((fam, true)) if self.command_line => Err(LineError {
                errno: Errno::ENOENT,
                message: format!("Error: {fam}: FIB table does not exist.\n{what} terminated"),
                fatal: false,
                status: 1,
            }),
            _ => Ok(()),
        }
    }

    /// Text lines, or one JSON array line.
    fn emit(&self, lines: Vec<(String, Value)>, stdout: &mut dyn Write) {
        let mut out = Lines::open(self.json, stdout);
        for (t, v) in lines {
            out.push(|| t, || v);
        }
        out.close();
    }

    fn print_answer<A: RouterFamily>(
        &self,
        a: &RouteAnswer<A>,
        q: &RouteQuery<A>,
        stdout: &mut dyn Write,
    ) {
        let links = self.router.links();
        let line = match (&a.route, q.fibmatch) {
            (Some(r), true) => (
                fibmatch_text(a, r, links),
                Value::Object(fibmatch_json(a, r, links)),
            ),
            _ => {
                let uid = q.uid.unwrap_or(0);
                (
                    answer_text(a, links, uid),
                    Value::Object(answer_json(a, links, uid)),
                )
            }
        };
        self.emit(vec![line], stdout);
    }

    /// The routes `f` selects, in listing order, as ip lists them (IPv6 siblings merged).
    pub(super) fn selected<'s, A: RouterFamily>(
        &'s self,
        f: &'s ShowFilter,
    ) -> Box<dyn Iterator<Item = RouteSpec<A>> + 's> {
        let narrow = |p: &Option<IpPrefix>| p.map(|p| p.narrow::<A>());
        // A family-less `default` in the match slot is each family's 0/0.
        let matching = f
            .matching
            .or(f.default_dst.then(|| IpPrefix::zero(A::FAMILY)));
        let (root, matching, from, via, prefsrc) = (
            narrow(&f.root),
            narrow(&matching),
            narrow(&f.src),
            narrow(&f.via),
            narrow(&f.prefsrc),
        );
        if [root, matching, from, via, prefsrc]
            .iter()
            .any(|p| matches!(p, Some(None)))
        {
            return Box::new(std::iter::empty()); // a filter of the other family selects nothing
        }
        // The trie walks what a prefix filter names (a route and what it covers, or what covers
        // it) instead of scanning every route; the filters below still apply in full. Routes
        // come in the kernel's dump order, as ip prints them.
        let router = self.router;
        // Both slots holding one prefix (`exact P`) select it alone.
        let exact = root.flatten().filter(|r| Some(*r) == matching.flatten());
        let walked: Box<dyn Iterator<Item = RouteSpec<A>> + 's> =
            match (exact, root.flatten(), matching.flatten()) {
                (Some(p), _, _) => Box::new(
                    router.dumped_with(move |t| t.covered(&p).take_while(move |r| r.dst == p)),
                ),
                (None, Some(p), _) => Box::new(router.dumped_with(move |t| t.covered(&p))),
                (None, None, Some(p)) => {
                    Box::new(router.dumped_with(move |t| t.covering(&p).into_iter()))
                }
                (None, None, None) => Box::new(router.dumped_with(|t: &Rib<A>| t.iter())),
            };
        let routes = walked
            .filter(move |r| match f.table {
                TableFilter::All => true,
                TableFilter::Id(t) => r.table == t,
            })
            .filter(move |r| root.flatten().is_none_or(|p| p.covers(&r.dst)))
            .filter(move |r| matching.flatten().is_none_or(|p| r.dst.covers(&p)))
            .filter(move |r| from.flatten().is_none_or(|p| r.src == p))
            .filter(|r| !f.default_src || r.src.len() == 0);
        // IPv6 ECMP siblings are one multipath route to ip.
        let routes: Box<dyn Iterator<Item = RouteSpec<A>>> = if A::FAMILY == Family::Inet6 {
            Box::new(merge_siblings(routes))
        } else {
            Box::new(routes)
        };
        // A route printed as a list of legs (several, or an IPv6 route through a group) has no
        // top-level device for `dev` to match, nor gateway for `via` (the zero address stands
        // for none, as in ip's filter).
        let (via, prefsrc) = (via.flatten(), prefsrc.flatten());
        let zero = A::unspecified();
        let top = |r: &RouteSpec<A>| match r.hops.as_slice() {
            [h] if !multipath(r) => Some(*h),
            _ => None,
        };
        // The type and protocol filters see a merged route's first sibling's, and not a route
        // the dump skips between siblings (ip filters what the kernel dumped).
        Box::new(
            routes
                .filter(|r| f.kind.is_none_or(|k| k == r.kind))
                .filter(|r| f.protocol.is_none_or(|p| p == r.protocol))
                .filter(move |r| {
                    f.dev
                        .is_none_or(|d| top(r).is_some_and(|h| h.dev == Some(d)))
                })
                .filter(move |r| {
                    let gateway = top(r).and_then(|h| h.gateway);
                    via.is_none_or(|p| p.len() == 0 || p.contains(gateway.unwrap_or(zero)))
                })
                .filter(move |r| {
                    prefsrc.is_none_or(|p| p.len() == 0 || p.contains(r.prefsrc.unwrap_or(zero)))
                })
                .filter(|r| f.scope.is_none_or(|s| s == r.scope))
                .filter(|r| f.metric.is_none_or(|m| m == r.metric))
                .filter(|r| f.tos.is_none_or(|t| t == r.tos)),
        )
    }

    fn show<A: RouterFamily>(&self, f: &ShowFilter, out: &mut Lines<'_>) {
        // ip prints `table` only when it lists more than one table.
        let show_table = f.table == TableFilter::All;
        let links = self.router.links();
        for mut r in self.selected::<A>(f) {
            // ip leaves out what the filter already says: the protocol, the device.
            if f.protocol.is_some() {
                r.protocol = PROTO_BOOT;
            }
            if f.dev.is_some() {
                for h in r.hops.iter_mut() {
                    h.dev = None;
                }
            }
            // And an address it names whole (`via`, `src`), the scope, the TOS.
            let host = A::WIDTH;
            if f.via.is_some_and(|p| p.len == host) && !multipath(&r) {
                if let [h] = r.hops.as_mut_slice() {
                    h.gateway = None;
                }
            }
            if f.prefsrc.is_some_and(|p| p.len == host) {
                r.prefsrc = None;
            }
            if f.scope.is_some() {
                r.scope = crate::route::SCOPE_UNIVERSE;
            }
            if f.tos.is_some() {
                r.tos = 0;
            }
            let shown = Shown {
                table: show_table,
                metric: f.metric.is_none(),
            };
            out.push(
                || route_text(&r, links, shown),
                || Value::Object(route_json(&r, links, shown)),
            );
        }
    }
}

/// The families a listing covers: one, or (`None`) both, IPv4 first.
pub(super) fn families(only: Option<Family>) -> impl Iterator<Item = Family> {
    [Family::Inet, Family::Inet6]
        .into_iter()
        .filter(move |f| only.is_none_or(|o| o == *f))
}

/// IPv6 ECMP siblings are listed as one multipath route, as ip shows them. Routes of one
/// (table, dst, src) come together, so siblings are merged within each such run as it streams
/// by. A route between two siblings (a reject route appended among them) is not listed, as
/// the kernel's dump skips it; it is still there, behind them.
fn merge_siblings<A: Address>(
    routes: impl Iterator<Item = RouteSpec<A>>,
) -> impl Iterator<Item = RouteSpec<A>> {
    let mut routes = routes.peekable();
    let mut run: std::collections::VecDeque<RouteSpec<A>> = Default::default();
    // `rt6_qualify_for_ecmp`: through a gateway, and not through a next-hop object.
    let ecmp =
        |p: &RouteSpec<A>| p.nhid.is_none() && p.hops.len() == 1 && p.hops[0].gateway.is_some();
    std::iter::from_fn(move || {
        if run.is_empty() {
            let first = routes.next()?;
            let key = (first.table, first.dst, first.src);
            let mut all = vec![first];
            while let Some(r) = routes.next_if(|r| (r.table, r.dst, r.src) == key) {
                all.push(r);
            }
            // A route with siblings is printed with all of them, and the dump goes on after
            // the last (`fib6_dump_node`): what lies between them is not printed.
            let mut i = 0;
            while i < all.len() {
                let mut r = all[i].clone();
                let siblings: Vec<usize> = if ecmp(&r) {
                    (i + 1..all.len())
                        .filter(|&j| ecmp(&all[j]) && all[j].metric == r.metric)
                        .collect()
                } else {
                    Vec::new()
                };
                for &j in &siblings {
                    r.hops.extend(all[j].hops.iter().copied());
                }
                i = siblings.last().map_or(i, |&j| j) + 1;
                run.push_back(r);
            }
        }
        run.pop_front()
    })
}

/// What a listing prints: text lines, or one JSON array written element by element.
struct Lines<'w> {
    json: bool,
    first: bool,
    out: &'w mut dyn Write,
}

impl<'w> Lines<'w> {
    fn open(json: bool, out: &'w mut dyn Write) -> Self {
        if json {
            let _ = out.write_char('[');
        }
        Lines {
            json,
            first: true,
            out,
        }
    }
    /// One route: only the side that is printed is built.
    fn push(&mut self, text: impl FnOnce() -> String, json: impl FnOnce() -> Value) {
        if self.json {
            if !self.first {
                let _ = self.out.write_char(',');
            }
            let _ = write!(self.out, "{}", json());
        } else {
            let _ = writeln!(self.out, "{}", text());
        }
        self.first = false;
    }
    fn close(self) {
        if self.json {
            let _ = writeln!(self.out, "]");
        }
    }
}
