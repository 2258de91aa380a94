//! `fibre mirror`: follows a kernel's routing state and answers read-only commands on a Unix
//! socket (see `serve`), logging one status line per interval, until SIGINT or SIGTERM.
use crate::agentx::{AgentxArgs, Subagent};
use crate::serve::{ServeStats, Socket};
use clap::Parser;
use fibre::io::netlink::{FollowReport, Mirror};
use fibre::Router;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "fibre mirror",
    about = "Follow the kernel's routing state and answer read-only commands on a Unix socket",
    after_help = "Each client line is a read-only command of the batch language, optionally \
                  after -4 or -6 (route get, route show, rule show, nexthop show, link show, \
                  addr show); each gets one JSON line back: what `ip -j` prints, or \
                  {\"error\", \"errno\", \"command\", \"message\"}. Changes are refused.\n\
                  Example:\n  \
                  fibre mirror --netns edge --listen unix:/run/fibre.sock &\n  \
                  echo 'route get 192.0.2.1' | socat - UNIX-CONNECT:/run/fibre.sock"
)]
pub struct MirrorArgs {
    /// Follow the named network namespace (`ip netns`) instead of this process's
    #[arg(long, value_name = "NAME")]
    netns: Option<String>,
    /// Answer commands on a Unix socket
    #[arg(long, value_name = "unix:PATH")]
    listen: Option<String>,
    /// The socket's permissions, in octal
    #[arg(long, value_name = "MODE", default_value = "0600", value_parser = octal)]
    socket_mode: u32,
    /// Save the router to FILE after the first sync and again on exit
    #[arg(long, value_name = "FILE")]
    snapshot: Option<PathBuf>,
    /// Sync, save the snapshot if asked, print what was read, and exit
    #[arg(long, conflicts_with_all = ["listen", "socket"])]
    once: bool,
    /// Dump everything again every SECS seconds, and say what drift that mended
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    resync_every: Option<Duration>,
    /// Log a status line every SECS seconds
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = seconds)]
    status_every: Duration,
    /// The notification socket's receive buffer in bytes [default: 64 MiB]
    #[arg(long, value_name = "BYTES")]
    rcvbuf: Option<usize>,
    /// Clients served at once; more are refused with an error line
    #[arg(long, value_name = "N", default_value = "64")]
    max_clients: usize,
    #[command(flatten)]
    agentx: AgentxArgs,
}

fn octal(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s, 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("\"{s}\" is not a file mode in octal (e.g. 0660)"))
}

fn seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|x| *x > 0.0)
        .and_then(|x| Duration::try_from_secs_f64(x).ok())
        .ok_or_else(|| format!("\"{s}\" is not a positive number of seconds"))
}

/// How long one round of following lasts: the stop flag and the timers are looked at between
/// rounds, while notifications are applied as they come within one.
const ROUND: Duration = Duration::from_millis(100);
/// The longest wait between tries after failures.
const RETRY_MAX: Duration = Duration::from_secs(60);

pub fn main(args: impl Iterator<Item = String>) -> ExitCode {
    let args = MirrorArgs::parse_from(args);
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fibre mirror: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &MirrorArgs) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
    }
    let socket = match args.listen.as_deref() {
        None => None,
        Some(spec) => {
            let path = spec.strip_prefix("unix:").ok_or_else(|| {
                format!("--listen {spec}: only unix:PATH is served (e.g. unix:/run/fibre.sock)")
            })?;
            Some(Socket::bind(path.as_ref(), args.socket_mode).map_err(|e| e.to_string())?)
        }
    };
    let started = Instant::now();
    let (mut mirror, sync) = Mirror::open_with(args.netns.as_deref(), args.rcvbuf)
        .map_err(|e| format!("{}: {e}", args.netns.as_deref().unwrap_or("this namespace")))?;
    eprintln!(
        "fibre mirror: synced in {:.2} s: {} devices, {} addresses, {} rules, {} next-hop objects, {} IPv4 and {} IPv6 routes ({} entries not modelled)",
        started.elapsed().as_secs_f64(),
        sync.links,
        sync.addrs,
        sync.rules,
        sync.objects,
        sync.routes[0],
        sync.routes[1],
        sync.skipped
    );
    match sync.hidden {
        Some(0) => {}
        Some(n) => eprintln!(
            "fibre mirror: the kernel holds {n} IPv6 routes its dump does not list (between the legs of ECMP routes); each is read once a change brings it into view"
        ),
        None => eprintln!(
            "fibre mirror: IPv6 routes the kernel's dump hides between ECMP legs not counted (over {} IPv6 routes, or /proc/net/ipv6_route unreadable); a change at a destination with legs brings a resync",
            fibre::io::netlink::HIDDEN_COUNT_AT_MOST
        ),
    }
    save(args, &mirror.router())?;
    if args.once {
        return Ok(());
    }
    let stats = Arc::new(ServeStats::default());
    if let Some(socket) = &socket {
        socket
            .serve(mirror.reader(), args.max_clients, Arc::clone(&stats))
            .map_err(|e| format!("cannot serve the socket: {e}"))?;
        eprintln!(
            "fibre mirror: answering on {}",
            args.listen.as_deref().unwrap_or_default()
        );
    }
    let reader = mirror.reader();
    let agent = Subagent::start(
        &args.agentx,
        move || reader.load(),
        Arc::clone(&stop),
        "fibre mirror",
    );
    let mut last_status = (Instant::now(), FollowReport::default());
    let mut last_resync = Instant::now();
    // After a failure (a dump that failed, or three that did not fit together under heavy
    // churn) readers keep the last state and the mirror tries again, waiting longer each time.
    let mut retry: Option<(Instant, Duration)> = None;
    while !stop.load(Ordering::SeqCst) {
        let due = match retry {
            Some((at, _)) if at > Instant::now() => {
                std::thread::sleep(ROUND);
                continue;
            }
            Some(_) => true,
            None => args
                .resync_every
                .is_some_and(|every| last_resync.elapsed() >= every),
        };
        let result = if due {
            let started = Instant::now();
            mirror.resync().map(|r| {
                last_resync = Instant::now();
                if r.drift > 0 || retry.is_some() {
                    eprintln!(
                        "fibre mirror: resynced in {:.2} s, mending {} entries of drift",
                        started.elapsed().as_secs_f64(),
                        r.drift
                    );
                }
            })
        } else {
            mirror.follow(ROUND, ROUND).map(|_| ())
        };
        retry = match result {
            Ok(()) => None,
            Err(e) => {
                let wait = retry.map_or(Duration::from_secs(1), |(_, w)| (w * 2).min(RETRY_MAX));
                eprintln!(
                    "fibre mirror: {e}; readers keep the last state; resync in {} s",
                    wait.as_secs()
                );
                Some((Instant::now() + wait, wait))
            }
        };
        if last_status.0.elapsed() >= args.status_every {
            status(&mirror, &last_status.1, &stats, agent.as_ref());
            last_status = (Instant::now(), mirror.totals().clone());
        }
    }
    // The subagent closes its session first, so that the last status line counts all of it.
    let agent_status = agent.map(|a| a.join());
    status(&mirror, &last_status.1, &stats, None);
    if let Some(line) = agent_status {
        eprintln!("fibre mirror: {line}");
    }
    save(args, &mirror.router())?;
    drop(socket);
    eprintln!("fibre mirror: stopped");
    Ok(())
}

fn save(args: &MirrorArgs, router: &Router) -> Result<(), String> {
    if let Some(path) = &args.snapshot {
        fibre::io::snapshot::save(router, path).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One status line: routes per family, notifications, overruns, resyncs, lag, clients.
fn status(mirror: &Mirror, before: &FollowReport, stats: &ServeStats, agent: Option<&Subagent>) {
    let router = mirror.router();
    let t = mirror.totals();
    // The lag of this interval: its published change sets only.
    let published = t.published - before.published;
    let lag_mean = (t.lag_total - before.lag_total).div_f64(published.max(1) as f64);
    eprintln!(
        "fibre mirror: {} IPv4 and {} IPv6 routes; {} events (+{}), {} overruns, {} resyncs (drift {}); lag mean {} µs, max {} µs overall; {} clients, {} answers",
        router.family::<Ipv4Addr>().route_count(),
        router.family::<Ipv6Addr>().route_count(),
        t.events,
        t.events - before.events,
        t.overruns,
        t.resyncs,
        t.drift,
        lag_mean.as_micros(),
        t.lag_max.as_micros(),
        stats.clients.load(Ordering::Relaxed),
        stats.answers.load(Ordering::Relaxed),
    );
    if let Some(agent) = agent {
        eprintln!("fibre mirror: {}", agent.status());
    }
}
