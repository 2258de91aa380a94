//! `fibre`: run iproute2 batches against fibre's routing table.
//!
//! ```text
//! fibre [-snapshot FILE] [-4|-6] [-j] [-force|-atomic] -batch FILE|-  [OBJECT COMMAND...]
//! fibre [-snapshot FILE] [-4|-6] [-j] OBJECT COMMAND...  (one command, as `ip` runs it)
//! fibre ... snapshot save FILE                       (after the batch: save the state)
//! fibre [-batch SETUP] -mrt RIB -mrt-dev DEV ...      (a RIB dump's routes, after the batch)
//! fibre ... -agentx PATH                             (then serve IP-FORWARD-MIB over AgentX)
//! fibre bench [--full] [--table FILE] [--sizes N,...] ...   (the route-lookup study)
//! fibre mirror [--netns NAME] [--listen unix:PATH] [--snapshot FILE] ...   (follow a kernel)
//! ```
//! Options are spelled as ip spells them (`-batch`, `-force`, `-json`/`-j`, `-4`, `-6`); the
//! same file can be given to `ip -batch` in a network namespace and to fibre.
mod agentx;
mod mirror;
mod serve;

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
    override_usage = "fibre [-snapshot FILE] [-4|-6] [-j] [-force|-atomic] -batch FILE|- [OBJECT COMMAND ...]\n       \
                      fibre [-snapshot FILE] [-4|-6] [-j] OBJECT COMMAND ...\n       \
                      fibre [-snapshot FILE] [-batch FILE] snapshot save FILE\n       \
                      fibre [-batch FILE] -mrt RIB -mrt-dev DEV [OBJECT COMMAND ...]\n       \
                      fibre [-snapshot FILE] [-batch FILE] [-mrt ...] -agentx PATH   (serve SNMP)\n       \
                      fibre bench [OPTIONS]    (the route-lookup study: fibre bench --help)\n       \
                      fibre mirror [OPTIONS]   (follow a kernel, answer on a socket: fibre mirror --help)",
    after_help = "ip's single-dash forms are understood: -batch, -force, -json, -atomic.\n\
                  Objects: link, addr, route, rule, nexthop (see README). Examples:\n  \
                  fibre -force -batch examples/edge-router.batch\n  \
                  fibre -batch routes.txt route get 192.0.2.1\n  \
                  fibre -batch routes.txt snapshot save routes.snap\n  \
                  fibre -snapshot routes.snap route get 192.0.2.1\n  \
                  fibre -batch setup.batch -mrt bview.gz -mrt-dev eth0 snapshot save rib.snap\n  \
                  fibre -snapshot rib.snap -agentx /var/agentx/master"
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
    /// Start from the router state saved in FILE (`snapshot save`) instead of an empty one
    #[arg(long = "snapshot", value_name = "FILE")]
    snapshot: Option<std::path::PathBuf>,
    /// After the batch, install the routes of an MRT RIB dump (plain or gzip): each prefix
    /// once, via its first next hop, `proto bgp`, in one change set
    #[arg(long = "mrt", value_name = "FILE", requires = "mrt_dev")]
    mrt: Option<std::path::PathBuf>,
    /// The device the dump's next hops are reached through (`onlink`); the batch or the
    /// snapshot makes it
    #[arg(long = "mrt-dev", value_name = "DEV", requires = "mrt")]
    mrt_dev: Option<String>,
    #[command(flatten)]
    agentx: agentx::AgentxArgs,
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
            "-snapshot" => "--snapshot".to_string(),
            "-mrt" => "--mrt".to_string(),
            "-mrt-dev" => "--mrt-dev".to_string(),
            "-agentx" => "--agentx".to_string(),
            "-agentx-tables" => "--agentx-tables".to_string(),
            "-agentx-priority" => "--agentx-priority".to_string(),
            s if !s.starts_with('-')
                && out.len() > 1
                && !matches!(
                    out.last().map(String::as_str),
                    Some(
                        "--batch"
                            | "--snapshot"
                            | "--mrt"
                            | "--mrt-dev"
                            | "--agentx"
                            | "--agentx-tables"
                            | "--agentx-priority"
                    )
                ) =>
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
        Some("mirror") => return mirror::main(std::env::args().skip(1)),
        // `fibre help` (ip's spelling) is `fibre --help`.
        Some("help") if std::env::args().len() == 2 => {
            let _ = <Cli as clap::CommandFactory>::command().print_long_help();
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let mut cli = Cli::parse_from(ip_style_args());
    let router = match &cli.snapshot {
        None => Router::new(),
        Some(path) => match fibre::io::snapshot::load(path) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("fibre: {e}");
                return ExitCode::from(2);
            }
        },
    };
    // `snapshot save FILE` is not a batch command: it runs once the batch is through.
    let save_to = match cli.command.as_slice() {
        [object, verb, file] if object == "snapshot" && verb == "save" => {
            let file = std::path::PathBuf::from(file);
            cli.command.clear();
            Some(file)
        }
        [object, ..] if object == "snapshot" => {
            eprintln!("fibre: usage: snapshot save FILE");
            return ExitCode::from(2);
        }
        _ => None,
    };
    let mut batch = Batch::new(router);
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
        None if cli.command.is_empty()
            && save_to.is_none()
            && cli.mrt.is_none()
            && cli.agentx.socket.is_none() =>
        {
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
    // the command line in its errors; with -mrt, after the dump's routes.
    let command = (!cli.command.is_empty()).then(|| Source {
        name: "command-line".into(),
        input: Box::new(std::io::Cursor::new(format!("{}\n", cli.command.join(" ")))),
        command_line: true,
    });
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let mut later = None;
    match cli.mrt {
        None => sources.extend(command),
        Some(_) => later = command,
    }
    let mut summary = match run_part(&mut batch, sources, "batch", &mut out, &mut err) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let (Some(path), Some(dev)) = (&cli.mrt, &cli.mrt_dev) {
        if !summary.success() && batch.mode != BatchMode::Force {
            let _ = writeln!(err, "fibre: the batch failed: the MRT dump was not loaded");
            return ExitCode::from(1);
        }
        match load_mrt(&mut batch.router, path, dev, batch.family) {
            Ok(done) => {
                let name = path.display();
                if done.left_out > 0 {
                    let n = done.left_out;
                    let _ = writeln!(
                        err,
                        "fibre: {name}: {n} prefixes without a next hop of their family left out"
                    );
                }
                if done.already_routed > 0 {
                    let n = done.already_routed;
                    let _ = writeln!(
                        err,
                        "fibre: {name}: {n} prefixes the router already routes left alone"
                    );
                }
            }
            Err(e) => {
                let _ = writeln!(err, "fibre: {e}");
                return ExitCode::from(2);
            }
        }
        if let Some(command) = later {
            // Its own change set: with -atomic, a failure rolls back the command alone.
            match run_part(&mut batch, vec![command], "command", &mut out, &mut err) {
                Ok(s) => {
                    summary.failed.extend(s.failed);
                    summary.status = summary.status.max(s.status);
                }
                Err(code) => return code,
            }
        }
    }
    let rolled_back = summary.rolled_back;
    let _ = out.flush();
    if let Some(path) = save_to {
        if rolled_back || !summary.success() && batch.mode == BatchMode::StopOnError {
            let _ = writeln!(err, "fibre: the batch failed: no snapshot written");
            return ExitCode::from(1);
        }
        if let Err(e) = fibre::io::snapshot::save(&batch.router, &path) {
            let _ = writeln!(err, "fibre: {e}");
            return ExitCode::from(2);
        }
    }
    if cli.agentx.socket.is_some() {
        if !summary.success() && batch.mode != BatchMode::Force {
            let _ = writeln!(err, "fibre: the batch failed: not serving over AgentX");
            return ExitCode::from(1);
        }
        let router = std::mem::replace(&mut batch.router, Router::new());
        if let Err(e) = agentx::serve_until_signal(&cli.agentx, router) {
            let _ = writeln!(err, "fibre: {e}");
            return ExitCode::from(2);
        }
    }
    // ip's own status: 0, 1 where a line failed, 255 where one ended it with `exit(-1)`.
    ExitCode::from(summary.status)
}

/// Runs one part of the work (the batch, or the command after an MRT load): what failed goes
/// to standard error as ip prints it; an I/O error ends the run.
fn run_part(
    batch: &mut Batch,
    sources: Vec<Source>,
    what: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<fibre::io::iproute2::BatchOutput, ExitCode> {
    let result = batch.run_sources(sources, out, err);
    let rolled_back = match &result {
        Ok(s) => s.rolled_back,
        Err(_) => batch.mode == BatchMode::Atomic,
    };
    if rolled_back {
        let _ = writeln!(err, "fibre: {what} rolled back: no change of it was kept");
    }
    result.map_err(|e| {
        let _ = writeln!(err, "fibre: {e}");
        ExitCode::from(2)
    })
}

/// Installs the routes of the MRT RIB dump at `path` via device `dev`, in one change set (all
/// or none); with `-4`/`-6`, only that family's.
fn load_mrt(
    router: &mut Router,
    path: &std::path::Path,
    dev: &str,
    family: Option<Family>,
) -> Result<fibre::io::mrt::Installed, String> {
    let dev = router
        .links()
        .by_name(dev)
        .ok_or_else(|| format!("-mrt-dev {dev}: Cannot find device \"{dev}\""))?
        .index;
    fibre::io::mrt::install_file(router, path, dev, family)
}
