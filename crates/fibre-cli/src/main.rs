//! `fibre`: run iproute2 batches against fibre's routing table.
//!
//! ```text
//! fibre [-4|-6] [-j] [-force|-atomic] -batch FILE|-  [OBJECT COMMAND...]
//! fibre [-4|-6] [-j] OBJECT COMMAND...                  (one command, as `ip` runs it)
//! fibre bench [--full] [--table FILE] [--sizes N,...] ...   (the route-lookup study)
//! ```
//! Options are spelled as ip spells them (`-batch`, `-force`, `-json`/`-j`, `-4`, `-6`); the
//! same file can be given to `ip -batch` in a network namespace and to fibre.
use clap::Parser;
use fibre::io::iproute2::{Batch, BatchMode, Source};
use fibre::{Family, Router};
use std::io::{BufRead, BufReader, Write};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "fibre",
    version,
    about = "The Linux routing table in userspace, driven by iproute2 batches",
    override_usage = "fibre [-4|-6] [-j] [-force|-atomic] -batch FILE|- [OBJECT COMMAND ...]\n       \
                      fibre [-4|-6] [-j] OBJECT COMMAND ...\n       \
                      fibre bench [OPTIONS]    (the route-lookup study: fibre bench --help)",
    after_help = "ip's single-dash forms are understood: -batch, -force, -json, -atomic.\n\
                  Objects: link, addr, route, rule (see README). Example:\n  \
                  fibre -force -batch examples/edge-router.batch\n  \
                  fibre -batch routes.txt route get 192.0.2.1"
)]
struct Cli {
    /// Every line is IPv4, as with `ip -4` (without -4/-6 each line's addresses decide)
    #[arg(short = '4', conflicts_with = "ipv6")]
    ipv4: bool,
    /// Every line is IPv6, as with `ip -6`: listings show IPv6, an IPv4 address is an error
    #[arg(short = '6')]
    ipv6: bool,
    /// Print one JSON line per printing or failing command (`ip -j`)
    #[arg(short = 'j', long = "json")]
    json: bool,
    /// Run every line even after failures; the exit status says whether any failed
    #[arg(long = "force", conflicts_with = "atomic")]
    force: bool,
    /// All or nothing: if any line fails, no change of the batch is kept
    #[arg(long = "atomic")]
    atomic: bool,
    /// Read commands from FILE, or standard input with `-`
    #[arg(long = "batch", value_name = "FILE")]
    batch: Option<String>,
    /// One command to run after the batch, e.g. `route get 192.0.2.1`
    #[arg(trailing_var_arg = true, allow_hyphen_values = false)]
    command: Vec<String>,
}

/// ip's single-dash long options become clap's double-dash ones.
fn ip_style_args() -> Vec<String> {
    let mut out = Vec::new();
    let mut options = true;
    for a in std::env::args() {
        let mapped = match a.as_str() {
            _ if !options => a,
            "-batch" | "-b" => "--batch".to_string(),
            "-force" => "--force".to_string(),
            "-json" => "--json".to_string(),
            "-atomic" => "--atomic".to_string(),
            s if !s.starts_with('-')
                && out.len() > 1
                && out.last().map(String::as_str) != Some("--batch") =>
            {
                options = false;
                a
            }
            _ => a,
        };
        out.push(mapped);
    }
    out
}

/// Heap use is counted so that `fibre bench` measures the memory of in-process engines.
#[global_allocator]
static ALLOC: fibre_bench::alloc::CountingAlloc = fibre_bench::alloc::CountingAlloc;

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("bench") => return fibre_bench::cli::main(std::env::args().skip(1)),
        // `fibre help` (ip's spelling) is `fibre --help`.
        Some("help") if std::env::args().len() == 2 => {
            let _ = <Cli as clap::CommandFactory>::command().print_help();
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let cli = Cli::parse_from(ip_style_args());
    let mut batch = Batch::new(Router::new());
    batch.family = if cli.ipv6 {
        Some(Family::Inet6)
    } else if cli.ipv4 {
        Some(Family::Inet)
    } else {
        None
    };
    batch.json = cli.json;
    batch.name = cli.batch.clone().unwrap_or_else(|| "-".into());
    batch.mode = if cli.atomic {
        BatchMode::Atomic
    } else if cli.force {
        BatchMode::Force
    } else {
        BatchMode::StopOnError
    };
    let mut sources: Vec<Source> = Vec::new();
    let file = |name: &str, input: Box<dyn BufRead>| Source {
        name: name.into(),
        input,
        command_line: false,
    };
    match cli.batch.as_deref() {
        None if cli.command.is_empty() => {
            eprintln!("fibre: nothing to do: give -batch FILE or a command (see --help)");
            return ExitCode::from(2);
        }
        None => {}
        Some("-") => sources.push(file("-", Box::new(std::io::stdin().lock()))),
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => sources.push(file(path, Box::new(BufReader::new(f)))),
            Err(e) => {
                eprintln!("fibre: cannot read batch file \"{path}\": {e}");
                return ExitCode::from(2);
            }
        },
    }
    // The command after the options runs after the batch, in the same change set, named as
    // the command line in its errors.
    if !cli.command.is_empty() {
        let line = format!("{}\n", cli.command.join(" "));
        sources.push(Source {
            name: "command-line".into(),
            input: Box::new(std::io::Cursor::new(line)),
            command_line: true,
        });
    }
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let result = batch.run_sources(sources, &mut out, &mut err);
    let rolled_back = match &result {
        Ok(s) => s.rolled_back,
        Err(_) => batch.mode == BatchMode::Atomic,
    };
    if rolled_back {
        let _ = writeln!(err, "fibre: batch rolled back: no change was kept");
    }
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "fibre: {e}");
            return ExitCode::from(2);
        }
    };
    let _ = out.flush();
    if summary.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
