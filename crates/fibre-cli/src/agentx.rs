//! `--agentx PATH`: serve IP-FORWARD-MIB to an SNMP master agent (net-snmp's snmpd with
//! `master agentx`) from `fibre mirror`'s live router, or from the router a batch, an MRT
//! dump or a snapshot made (then until SIGINT or SIGTERM).
use clap::{Args, ValueEnum};
use fibre::io::agentx::mib::Tables;
use fibre::io::agentx::session::{self, Config, Stats};
use fibre::Router;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TablesArg {
    /// Table main only, as net-snmp's own implementation shows IPv4
    Main,
    /// Every routing table (the policy index tells them apart)
    All,
}

#[derive(Args, Debug, Clone)]
pub struct AgentxArgs {
    /// Serve IP-FORWARD-MIB (ipForward, 1.3.6.1.2.1.4.24) to the SNMP master agent on this
    /// AgentX socket (snmpd: `master agentx`, `agentXSocket PATH`)
    #[arg(long = "agentx", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Which routing tables the MIB shows
    #[arg(
        long = "agentx-tables",
        value_name = "WHICH",
        value_enum,
        default_value = "main"
    )]
    pub tables: TablesArg,
    /// The registrations' priority: where another subagent or the master's own module serves
    /// the same object, the lower value wins (snmpd's own IP-FORWARD-MIB modules are at 127:
    /// give 1 to take the tables over, or start snmpd with
    /// -I -ipCidrRouteTable,inetCidrRouteTable,var_route)
    #[arg(long = "agentx-priority", value_name = "N", default_value = "127")]
    pub priority: u8,
}

impl AgentxArgs {
    fn config(&self) -> Option<Config> {
        let mut c = Config::new(self.socket.clone()?);
        c.tables = match self.tables {
            TablesArg::Main => Tables::Main,
            TablesArg::All => Tables::All,
        };
        c.priority = self.priority;
        Some(c)
    }
}

/// The subagent running beside the caller's work.
pub struct Subagent {
    thread: JoinHandle<()>,
    pub stats: Arc<Stats>,
}

impl Subagent {
    /// Starts serving `source`'s router if `--agentx` was given; stops when `stop` is raised.
    pub fn start(
        args: &AgentxArgs,
        source: impl Fn() -> Arc<Router> + Send + 'static,
        stop: Arc<AtomicBool>,
        name: &'static str,
    ) -> Option<Subagent> {
        let config = args.config()?;
        let stats = Arc::new(Stats::default());
        let counters = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name("agentx".into())
            .spawn(move || {
                session::serve(&config, &source, &stop, &counters, &mut |line| {
                    eprintln!("{name}: {line}")
                });
            })
            .expect("a thread");
        Some(Subagent { thread, stats })
    }

    /// Waits for the subagent to close its session (after `stop` was raised); its last
    /// status.
    pub fn join(self) -> String {
        let _ = self.thread.join();
        status(&self.stats)
    }

    /// The status line's part: PDUs and varbinds answered.
    pub fn status(&self) -> String {
        status(&self.stats)
    }
}

fn status(s: &Stats) -> String {
    format!(
        "agentx: {} sessions, {} requests, {} varbinds, {} malformed",
        s.sessions.load(Ordering::Relaxed),
        s.requests.load(Ordering::Relaxed),
        s.varbinds.load(Ordering::Relaxed),
        s.malformed.load(Ordering::Relaxed)
    )
}

/// Serves a finished router (a batch's, an MRT dump's, a snapshot's) until SIGINT or SIGTERM.
pub fn serve_until_signal(args: &AgentxArgs, router: Router) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
    }
    let router = Arc::new(router);
    let agent = Subagent::start(
        args,
        move || Arc::clone(&router),
        Arc::clone(&stop),
        "fibre",
    )
    .ok_or("--agentx PATH is needed")?;
    eprintln!("fibre: {}", agent.join());
    Ok(())
}
