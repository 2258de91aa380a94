//! Running iproute2 lines against a [`Router`] with `ip -batch` semantics.
//!
//! - [`BatchMode::StopOnError`] (ip's default): the first failing line ends the batch.
//! - [`BatchMode::Force`] (`-force`): every line runs; the outcome says whether any failed.
//! - [`BatchMode::Atomic`] (fibre's all-or-nothing): every change of the batch lands, or none
//!   does. Lines that print still print as they run, against the state so far.
use super::format::*;
use super::parse::{
    parse_line, Command, IpPrefix, NexthopFilter, ParseError, ShowFilter, TableFilter,
};
use crate::addr::{Address, Family};
use crate::error::{ChangeError, Errno};
use crate::nexthop::NhObjectKind;
use crate::rib::RouteSelector;
use crate::route::{RouteSpec, LOOPBACK_IFINDEX, PROTO_BOOT};
use crate::router::{Change, FamilyChange, RouteAnswer, RouteQuery, Router, RouterFamily};
use crate::rules::RuleAction;
use crate::with_family;
use serde_json::{json, Value};
use std::fmt::Write;

/// What a batch does when a line fails (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchMode {
    /// ip's default: the first failing line ends the batch; earlier changes stay.
    StopOnError,
    /// `-force`: a failing line is reported and the batch goes on (but for a fatal error).
    Force,
    /// All or nothing: the batch runs as one change set, which the first failing line ends and
    /// rolls back.
    Atomic,
}

/// What a batch printed, and which lines failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchOutput {
    /// What the batch printed to standard output (text, or JSON lines with `-j`).
    pub stdout: String,
    /// What the batch printed to standard error: ip's error messages.
    pub stderr: String,
    /// 1-based numbers of the lines that failed.
    pub failed: Vec<usize>,
    /// In [`BatchMode::Atomic`], whether the changes were rolled back.
    pub rolled_back: bool,
}

impl BatchOutput {
    /// Whether no line failed.
    pub fn success(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Why a line failed: its errno and the message ip would print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// The errno the line failed with.
    pub errno: Errno,
    /// The message as ip prints it.
    pub message: String,
    /// ip gives up on the whole batch, `-force` or not (see [`ParseError::fatal`]).
    pub fatal: bool,
}

impl From<ParseError> for LineError {
    fn from(e: ParseError) -> Self {
        let message = if e.plain {
            e.message
        } else {
            format!("Error: {}.", e.message.trim_end_matches('.'))
        };
        LineError {
            errno: e.errno,
            message,
            fatal: e.fatal,
        }
    }
}
impl From<ChangeError> for LineError {
    fn from(e: ChangeError) -> Self {
        LineError {
            errno: e.errno,
            message: e.to_string(),
            fatal: false,
        }
    }
}
impl From<Errno> for LineError {
    fn from(e: Errno) -> Self {
        ChangeError::new(e).into()
    }
}

/// A router with the options of one `ip` invocation.
pub struct Batch {
    /// The router the lines run against.
    pub router: Router,
    /// `-4` / `-6`.
    pub family: Option<Family>,
    /// `-j`: one JSON line per printing (or failing) command.
    pub json: bool,
    /// What a failing line does to the rest of the batch.
    pub mode: BatchMode,
    /// Shown in "Command failed NAME:LINE".
    pub name: String,
    /// Running a command given on the command line, as `ip` runs one outside `-batch`: dumps
    /// of a table that does not exist fail (strict dump checks), and a failure is not followed
    /// by "Command failed".
    command_line: bool,
}

/// One input of a batch.
pub struct Source<'i> {
    /// Shown in "Command failed NAME:LINE".
    pub name: String,
    /// The lines.
    pub input: Box<dyn std::io::BufRead + 'i>,
    /// A command of the command line rather than a line of `-batch` (see [`Batch`]'s field of that name).
    pub command_line: bool,
}

impl Batch {
    /// A batch over `router` with ip's defaults: both families, text output, stop on error,
    /// input named `-`.
    pub fn new(router: Router) -> Self {
        Batch {
            router,
            family: None,
            json: false,
            mode: BatchMode::StopOnError,
            name: "-".into(),
            command_line: false,
        }
    }

    /// Runs every line of `text`, collecting what it prints.
    pub fn run_text(&mut self, text: &str) -> BatchOutput {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let summary = self
            .run(text.as_bytes(), &mut out, &mut err)
            .expect("in-memory input and output do not fail");
        BatchOutput {
            stdout: String::from_utf8(out).expect("utf-8"),
            stderr: String::from_utf8(err).expect("utf-8"),
            failed: summary.failed,
            rolled_back: summary.rolled_back,
        }
    }

    /// Runs the lines of `input` as they come, printing each one's output before reading the
    /// next (so that ip's interleaving of results and errors is kept and input of any size
    /// streams). Only I/O errors are errors here (in [`BatchMode::Atomic`] the batch is then
    /// rolled back too); failed lines are in the summary.
    pub fn run(
        &mut self,
        input: impl std::io::BufRead,
        stdout: &mut dyn std::io::Write,
        stderr: &mut dyn std::io::Write,
    ) -> std::io::Result<BatchOutput> {
        let source = Source {
            name: self.name.clone(),
            input: Box::new(input),
            command_line: false,
        };
        self.run_sources(vec![source], stdout, stderr)
    }

    /// Runs several inputs as one batch (one change set in [`BatchMode::Atomic`]), each named
    /// in its own errors: a batch file, then the command given on the command line.
    pub fn run_sources<'i>(
        &mut self,
        sources: Vec<Source<'i>>,
        stdout: &mut dyn std::io::Write,
        stderr: &mut dyn std::io::Write,
    ) -> std::io::Result<BatchOutput> {
        let atomic = self.mode == BatchMode::Atomic;
        if atomic {
            self.router.begin();
        }
        let mut summary = BatchOutput::default();
        let mut result = Ok(());
        for source in sources {
            self.command_line = source.command_line;
            let r = self.run_source(&source.name, source.input, stdout, stderr, &mut summary);
            self.command_line = false;
            match r {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if atomic {
            if summary.failed.is_empty() && result.is_ok() {
                self.router.commit();
            } else {
                self.router.rollback();
                summary.rolled_back = true;
            }
        }
        result.map(|()| summary)
    }

    /// One input's lines; false when the batch stops here.
    fn run_source(
        &mut self,
        name: &str,
        mut input: Box<dyn std::io::BufRead + '_>,
        stdout: &mut dyn std::io::Write,
        stderr: &mut dyn std::io::Write,
        summary: &mut BatchOutput,
    ) -> std::io::Result<bool> {
        let mut lines = CommandLines::default();
        while let Some((lineno, line)) = lines.next(&mut input).map_err(|e| {
            std::io::Error::new(e.kind(), format!("{name}:{}: {e}", lines.lineno + 1))
        })? {
            // Output goes straight to `stdout`, as it is printed.
            let mut printed = IoLines {
                out: &mut *stdout,
                error: None,
            };
            let r = self.run_line(&line, &mut printed);
            if let Some(e) = printed.error {
                return Err(e);
            }
            if let Err(e) = r {
                summary.failed.push(lineno);
                if e.fatal || self.command_line {
                    // ip exits inside its parser, or ran one command: no "Command failed" line.
                    writeln!(stderr, "{}", e.message)?;
                } else {
                    writeln!(stderr, "{}\nCommand failed {name}:{lineno}", e.message)?;
                }
                if self.json {
                    let v = json!({"error": e.errno.name(), "errno": e.errno.code(), "line": lineno, "command": line.trim(), "message": e.message});
                    writeln!(stdout, "{v}")?;
                }
                if self.mode != BatchMode::Force || e.fatal {
                    return Ok(false);
                }
            }
        }
        if lines.missing_continuation {
            writeln!(stderr, "Missing continuation line")?;
        }
        Ok(true)
    }

    /// Runs one line, appending what it prints to `stdout`.
    pub fn run_line(&mut self, line: &str, stdout: &mut dyn Write) -> Result<(), LineError> {
        let cmd = parse_line(line, self.family, &self.router)?;
        match cmd {
            Command::Nothing => Ok(()),
            Command::Apply(change) => Ok(self.router.change(&change)?),
            Command::RouteGet(q, times) => {
                with_family!(Family::of(&q.dst), A => {
                    let q = q.narrow::<A>().expect("the parser checked the families");
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
            Command::RouteFlush(f) => {
                self.check_table(&f, "Flush")?;
                let mut changes: Vec<Change> = Vec::new();
                for fam in families(f.family) {
                    with_family!(fam, A => changes.extend(self.selected::<A>(&f).map(|r| {
                        FamilyChange::RouteDel(r.table, RouteSelector::exact(&r)).into()
                    })));
                }
                for c in changes {
                    // A route removed with an earlier one (IPv6 siblings) is already gone.
                    match self.router.change(&c) {
                        Ok(())
                        | Err(ChangeError {
                            errno: Errno::ESRCH,
                            ..
                        }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(())
            }
            Command::RuleShow(fam) => {
                let lines = with_family!(fam, A => {
                    let rules = self.router.family::<A>().rules();
                    rules
                        .iter()
                        .map(|r| {
                            let unresolved = matches!(r.action, RuleAction::Goto(t)
                                if rules.goto_target(t).is_none());
                            (rule_text(r, unresolved), rule_json(r, unresolved))
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
            Command::NexthopFlush(f) => {
                // As ip flushes: one delete per object, groups first (deleting a member first
                // could delete the group with it).
                let mut objects = self.nexthops_selected(&f)?;
                objects.sort_by_key(|(group, _, id)| (!group, *id));
                let mut flushed = 0;
                for (_, fam, id) in objects {
                    let del =
                        with_family!(fam, A => Change::from(FamilyChange::<A>::NexthopDel(id)));
                    if self.router.change(&del).is_ok() {
                        flushed += 1;
                    }
                }
                let _ = match flushed {
                    0 => writeln!(stdout, "Nothing to flush"),
                    n => writeln!(stdout, "Flushed {n} nexthops"),
                };
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
        }
    }

    /// The next-hop objects a filter selects, by id: (is a group, family, id).
    fn nexthops_selected(&self, f: &NexthopFilter) -> Result<Vec<(bool, Family, u32)>, LineError> {
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
    fn check_table(&self, f: &ShowFilter, what: &str) -> Result<(), LineError> {
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
    fn selected<'s, A: RouterFamily>(
        &'s self,
        f: &'s ShowFilter,
    ) -> Box<dyn Iterator<Item = RouteSpec<A>> + 's> {
        let narrow = |p: &Option<IpPrefix>| p.map(|p| p.narrow::<A>());
        let (root, matching, exact_p, from) = (
            narrow(&f.root),
            narrow(&f.matching),
            narrow(&f.exact),
            narrow(&f.src),
        );
        if [root, matching, exact_p, from]
            .iter()
            .any(|p| matches!(p, Some(None)))
        {
            return Box::new(std::iter::empty()); // a filter of the other family selects nothing
        }
        // The trie walks what a prefix filter names (a route and what it covers, or what covers
        // it) instead of scanning every route; the filters below still apply in full.
        let router = &self.router;
        let walked: Box<dyn Iterator<Item = RouteSpec<A>> + 's> =
            match (exact_p.flatten(), root.flatten(), matching.flatten()) {
                (Some(p), _, _) => Box::new(
                    router.routes_with(move |t| t.covered(&p).take_while(move |r| r.dst == p)),
                ),
                (None, Some(p), _) => Box::new(router.routes_with(move |t| t.covered(&p))),
                (None, None, Some(p)) => {
                    Box::new(router.routes_with(move |t| t.covering(&p).into_iter()))
                }
                (None, None, None) => Box::new(router.routes::<A>()),
            };
        let routes = walked
            .filter(move |r| match f.table {
                TableFilter::All => true,
                TableFilter::Id(t) => r.table == t,
            })
            .filter(move |r| root.flatten().is_none_or(|p| p.covers(&r.dst)))
            .filter(move |r| matching.flatten().is_none_or(|p| r.dst.covers(&p)))
            .filter(move |r| exact_p.flatten().is_none_or(|p| r.dst == p))
            .filter(move |r| from.flatten().is_none_or(|p| r.src == p))
            .filter(|r| f.kind.is_none_or(|k| k == r.kind))
            .filter(|r| f.protocol.is_none_or(|p| p == r.protocol));
        // IPv6 ECMP siblings are one multipath route to ip.
        let routes: Box<dyn Iterator<Item = RouteSpec<A>>> = if A::FAMILY == Family::Inet6 {
            Box::new(merge_siblings(routes))
        } else {
            Box::new(routes)
        };
        // A multipath route has no top-level device for `dev` to match.
        Box::new(routes.filter(|r| {
            f.dev
                .is_none_or(|d| matches!(r.hops.as_slice(), [h] if h.dev == Some(d)))
        }))
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
            out.push(
                || route_text(&r, links, show_table),
                || Value::Object(route_json(&r, links, show_table)),
            );
        }
    }
}

/// The families a listing covers: one, or (`None`) both, IPv4 first.
fn families(only: Option<Family>) -> impl Iterator<Item = Family> {
    [Family::Inet, Family::Inet6]
        .into_iter()
        .filter(move |f| only.is_none_or(|o| o == *f))
}

/// IPv6 ECMP siblings are listed as one multipath route, as ip shows them. Routes of one
/// (table, dst, src) come together, so siblings are merged within each such run as it streams by.
fn merge_siblings<A: Address>(
    routes: impl Iterator<Item = RouteSpec<A>>,
) -> impl Iterator<Item = RouteSpec<A>> {
    let mut routes = routes.peekable();
    let mut run: std::collections::VecDeque<RouteSpec<A>> = Default::default();
    std::iter::from_fn(move || {
        if run.is_empty() {
            let first = routes.next()?;
            let key = (first.table, first.dst, first.src);
            run.push_back(first);
            while let Some(r) = routes.next_if(|r| (r.table, r.dst, r.src) == key) {
                // `rt6_qualify_for_ecmp`: through a gateway, and not through a next-hop object.
                let ecmp = |p: &RouteSpec<A>| {
                    p.nhid.is_none() && p.hops.len() == 1 && p.hops[0].gateway.is_some()
                };
                if ecmp(&r) {
                    if let Some(prev) = run.iter_mut().find(|p| {
                        p.metric == r.metric
                            && p.nhid.is_none()
                            && p.hops.first().is_some_and(|h| h.gateway.is_some())
                    }) {
                        prev.hops.extend(r.hops);
                        continue;
                    }
                }
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

/// An `io::Write` as the `fmt::Write` lines print to; the first I/O error is kept.
struct IoLines<'a> {
    out: &'a mut dyn std::io::Write,
    error: Option<std::io::Error>,
}

impl Write for IoLines<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.error.is_some() {
            return Err(std::fmt::Error);
        }
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error.get_or_insert(e);
            std::fmt::Error
        })
    }
}

/// Command lines as ip's `getcmdline` reads them: a comment (`#` to the end of the line) is cut
/// first, then a line ending in `\` continues on the next one (a command's number is that of
/// its last line). Bytes that are not UTF-8 (a Latin-1 comment) are read as U+FFFD: ip reads
/// bytes, and such a byte in a command fails only that command.
#[derive(Default)]
struct CommandLines {
    /// Physical lines read so far.
    lineno: usize,
    raw: Vec<u8>,
    /// The input ended inside a continued command.
    missing_continuation: bool,
}

impl CommandLines {
    fn next(
        &mut self,
        input: &mut dyn std::io::BufRead,
    ) -> std::io::Result<Option<(usize, String)>> {
        let mut line = String::new();
        loop {
            self.raw.clear();
            if input.read_until(b'\n', &mut self.raw)? == 0 {
                // A continuation with nothing after it: ip says "Missing continuation line"
                // and ends the batch; what was joined so far is not run.
                self.missing_continuation = !line.is_empty();
                return Ok(None);
            }
            self.lineno += 1;
            if let Some(i) = self.raw.iter().position(|&b| b == b'#') {
                self.raw.truncate(i);
            }
            let text = String::from_utf8_lossy(&self.raw);
            match text.strip_suffix("\\\n") {
                Some(head) => line.push_str(head),
                None => {
                    line.push_str(&text);
                    return Ok(Some((self.lineno, line)));
                }
            }
        }
    }
}
