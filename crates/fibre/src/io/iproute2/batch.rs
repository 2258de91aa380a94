//! Running iproute2 lines against a [`Router`] with `ip -batch` semantics.
//!
//! - [`BatchMode::StopOnError`] (ip's default): the first failing line ends the batch.
//! - [`BatchMode::Force`] (`-force`): every line runs; the outcome says whether any failed.
//! - [`BatchMode::Atomic`] (fibre's all-or-nothing): every change of the batch lands, or none
//!   does. Lines that print still print as they run, against the state so far.
use super::parse::{parse_line, read_line, Command, ParseError};
use super::query::{families, Query};
use crate::addr::Family;
use crate::error::{ChangeError, Errno};
use crate::rib::RouteSelector;
use crate::router::{Change, FamilyChange, Router};
use crate::rules::RuleSelector;
use crate::with_family;
use serde_json::json;
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
    /// The exit status ip would end with: 0, 1 where a line failed, 255 where the batch
    /// ended at an error ip reports with `exit(-1)` (see [`ParseError::status`]).
    pub status: u8,
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
    /// The exit status ip ends with: 1, or 255 (see [`ParseError::status`]).
    pub status: u8,
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
            status: if e.fatal { e.status } else { 1 },
        }
    }
}
impl From<ChangeError> for LineError {
    fn from(e: ChangeError) -> Self {
        LineError {
            errno: e.errno,
            message: e.to_string(),
            fatal: false,
            status: 1,
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
            status: summary.status,
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
            // ip's warnings are printed as it reads the line: before its answer, or before the
            // error of a later word.
            let read = read_line(&line, self.family, &self.router);
            let warnings = match &read {
                Ok(l) => &l.warnings,
                Err(e) => &e.warnings,
            };
            for w in warnings {
                writeln!(stderr, "{w}")?;
            }
            let r = match read {
                Ok(l) => self.run_command(l.command, &mut printed),
                Err(e) => Err(e.into()),
            };
            if let Some(e) = printed.error {
                return Err(e);
            }
            if let Err(e) = r {
                summary.failed.push(lineno);
                summary.status = e.status;
                if e.fatal || self.command_line {
                    // ip exits inside its parser, or ran one command: no "Command failed" line.
                    writeln!(stderr, "{}", e.message)?;
                } else {
                    writeln!(stderr, "{}\nCommand failed {name}:{lineno}", e.message)?;
                }
                if self.json {
                    let v = json!({"error": e.errno.name(), "errno": e.errno.code(), "line": lineno, "command": line.trim(), "message": e.message.trim_end()});
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

    /// Runs one line, appending what it prints to `stdout` (ip's warnings, which go to
    /// standard error, left out: [`Batch::run`] prints them).
    pub fn run_line(&mut self, line: &str, stdout: &mut dyn Write) -> Result<(), LineError> {
        let cmd = parse_line(line, self.family, &self.router)?;
        self.run_command(cmd, stdout)
    }

    /// Runs a parsed line.
    fn run_command(&mut self, cmd: Command, stdout: &mut dyn Write) -> Result<(), LineError> {
        match cmd {
            Command::Apply(change) => Ok(self.router.change(&change)?),
            Command::RouteFlush(f) => {
                self.query().check_table(&f, "Flush")?;
                // In rounds, as ip flushes (`iproute_flush`), until a listing selects nothing:
                // a route the listing skips between IPv6 siblings shows once they are gone.
                loop {
                    let q = self.query();
                    let mut changes: Vec<Change> = Vec::new();
                    for fam in families(f.family) {
                        with_family!(fam, A => changes.extend(q.selected::<A>(&f).map(|r| {
                            FamilyChange::RouteDel(r.table, RouteSelector::exact(&r)).into()
                        })));
                    }
                    // ip sends a round's deletes together and then fails the line on the first
                    // error among them (`flush_update`: "Failed to send flush request",
                    // strerror's words). An IPv6 multipath route whose legs differ in protocol
                    // loses the legs that match the first one's and reports ESRCH for the
                    // others; a route through a next-hop object is refused (EINVAL: ip sends
                    // it with the object's next hops, as listed).
                    let (mut deleted, mut failed) = (0, None);
                    for c in changes {
                        match self.router.change(&c) {
                            Ok(()) => deleted += 1,
                            Err(e) => {
                                failed.get_or_insert(e.errno);
                            }
                        }
                    }
                    if let Some(errno) = failed {
                        return Err(LineError {
                            errno,
                            message: format!("Failed to send flush request: {}", errno.message()),
                            fatal: false,
                            status: 1,
                        });
                    }
                    if deleted == 0 {
                        return Ok(());
                    }
                }
            }
            Command::RuleFlush(f) => {
                // ip deletes the rules it lists one after the other, each by the request its
                // dump makes (see `RuleSelector::as_dumped`), and stops at the first that
                // fails (`flush_rule`: the dump is then terminated).
                let changes: Vec<Change> = with_family!(f.family, A => {
                    self.router
                        .family::<A>()
                        .rules()
                        .iter()
                        .filter(|r| f.flushes(r))
                        .map(|r| FamilyChange::<A>::RuleDel(RuleSelector::as_dumped(r)).into())
                        .collect()
                });
                for c in &changes {
                    if let Err(e) = self.router.change(c) {
                        return Err(LineError {
                            message: format!("{e}\nDump terminated"),
                            ..e.into()
                        });
                    }
                }
                // ip prints its (empty) listing of what it deleted: `[]` with -j.
                if self.json {
                    let _ = writeln!(stdout, "[]");
                }
                Ok(())
            }
            Command::NexthopFlush(f) => {
                // As ip flushes: one delete per object, groups first (deleting a member first
                // could delete the group with it).
                let mut objects = self.query().nexthops_selected(&f)?;
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
            read_only => self.query().run(read_only, stdout),
        }
    }

    /// The read-only side of this batch, over its router.
    fn query(&self) -> Query<'_> {
        Query {
            router: &self.router,
            family: self.family,
            json: self.json,
            command_line: self.command_line,
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
