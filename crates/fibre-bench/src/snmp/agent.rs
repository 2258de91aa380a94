//! net-snmp as the peer: an `snmpd` started in a network namespace on a loopback port, with
//! its own AgentX master socket in a private directory, and the net-snmp command-line tools
//! (`snmpbulkwalk`, `snmpget`, `snmpgetnext`, `snmpset`) run against it there.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The first UDP port snmpds answer on, inside the caller's namespace (so no other agent can
/// hold it): the n-th snmpd of a namespace gets `PORT + n`.
pub const PORT: u16 = 1161;
/// snmpd's own route-table modules (`-I -...` leaves them out, so that a subagent serves the
/// subtree alone).
pub const OWN_ROUTE_MODULES: &str = "ipCidrRouteTable,inetCidrRouteTable,var_route";

/// The net-snmp programs a test or the bench needs.
pub const PROGRAMS: [&str; 5] = ["snmpd", "snmpbulkwalk", "snmpget", "snmpgetnext", "snmpset"];

/// Why net-snmp cannot be run here, if it cannot (`make deps` installs it).
pub fn unavailable() -> Option<String> {
    for p in PROGRAMS {
        let found = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|d| d.join(p).is_file())
                || Path::new("/usr/sbin").join(p).is_file()
        });
        if !found {
            return Some(format!(
                "`{p}` is not installed (`make deps` installs snmpd and snmp)"
            ));
        }
    }
    None
}

/// A running snmpd.
pub struct Snmpd {
    child: Child,
    netns: String,
    conf: PathBuf,
    log: PathBuf,
    /// Its AgentX master socket.
    pub agentx: PathBuf,
    own_routes: bool,
    /// Its UDP port on 127.0.0.1.
    pub port: u16,
}

impl Snmpd {
    /// Starts snmpd in `netns`, its files under `dir` named `name.*`, serving community
    /// `public` read-only and `private` read-write on 127.0.0.1:`port`, with AgentX master
    /// on `dir/name.sock`. `own_routes`: whether its own IP-FORWARD-MIB modules run. Waits
    /// (up to 20 s) until it answers.
    pub fn start(
        netns: &str,
        dir: &Path,
        name: &str,
        port: u16,
        own_routes: bool,
    ) -> Result<Snmpd, String> {
        Self::start_with(netns, dir, name, port, own_routes, "")
    }

    /// Like [`Snmpd::start`], with more configuration lines (e.g. a `proxy` directive).
    pub fn start_with(
        netns: &str,
        dir: &Path,
        name: &str,
        port: u16,
        own_routes: bool,
        more: &str,
    ) -> Result<Snmpd, String> {
        let conf = dir.join(format!("{name}.conf"));
        let agentx = dir.join(format!("{name}.sock"));
        let text = format!(
            "agentAddress udp:127.0.0.1:{port}\n\
             rocommunity public 127.0.0.1\n\
             rwcommunity private 127.0.0.1\n\
             master agentx\n\
             agentXSocket {}\n\
             agentXTimeout 10\n\
             agentXRetries 0\n\
             {more}",
            agentx.display()
        );
        std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
        let mut d = Snmpd {
            child: Command::new("true").spawn().map_err(|e| e.to_string())?,
            netns: netns.into(),
            conf,
            log: dir.join(format!("{name}.log")),
            agentx,
            own_routes,
            port,
        };
        d.spawn()?;
        Ok(d)
    }

    fn spawn(&mut self) -> Result<(), String> {
        let _ = self.child.wait();
        // A fresh log: readiness is read from it.
        let _ = std::fs::remove_file(&self.log);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.netns, "snmpd", "-f", "-C", "-Lf"])
            .arg(&self.log)
            .arg("-c")
            .arg(&self.conf);
        if !self.own_routes {
            cmd.args(["-I", &format!("-{OWN_ROUTE_MODULES}")]);
        }
        // Its persistent state goes beside its other files, not into /var/lib/snmp.
        let dir = self.conf.parent().unwrap_or(Path::new("."));
        cmd.env("SNMP_PERSISTENT_DIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = cmd.spawn().map_err(|e| format!("snmpd: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("snmpd exited ({status}): {}", self.log_tail()));
            }
            // snmpd logs its version once it listens.
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if log.contains("NET-SNMP version") && self.agentx.exists() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "snmpd did not answer within 20 s: {}",
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains("MIB")).collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it (SIGTERM, then SIGKILL after 10 s).
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: a signal to our own child, not yet reaped.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }

    /// Stops it and starts it again on the same port and socket.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.spawn()
    }

    /// A client of this agent.
    pub fn client(&self) -> Client {
        Client {
            netns: self.netns.clone(),
            port: self.port,
            timeout: 30,
        }
    }

    /// CPU time (user + system) it has used so far.
    pub fn cpu(&self) -> Duration {
        cpu_of(self.child.id())
    }
}

impl Drop for Snmpd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// CPU time (user + system) process `pid` has used, from /proc (zero if it is gone).
pub fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Duration::from_secs_f64(f.iter().sum::<u64>() as f64 / hz)
}

/// One varbind as the tools print it with `-On -Oe`: numeric OID, type, value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarBind {
    /// The OID's sub-identifiers.
    pub oid: Vec<u32>,
    /// The type as printed (`INTEGER`, `Gauge32`, `IpAddress`, `OID`), or the exception:
    /// `noSuchObject`, `noSuchInstance`, `endOfMibView`.
    pub kind: String,
    /// The value as printed.
    pub value: String,
}

/// Parses `.1.3.6 = TYPE: value` (and the exception forms).
pub fn parse_line(line: &str) -> Option<VarBind> {
    let (oid, rest) = line.split_once(" = ")?;
    let oid: Vec<u32> = oid
        .trim_start_matches('.')
        .split('.')
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    let (kind, value) = if rest.starts_with("No Such Object") {
        ("noSuchObject".to_string(), String::new())
    } else if rest.starts_with("No Such Instance") {
        ("noSuchInstance".to_string(), String::new())
    } else if rest.starts_with("No more variables") {
        ("endOfMibView".to_string(), String::new())
    } else {
        let (k, v) = rest.split_once(": ").unwrap_or((rest, ""));
        (k.to_string(), v.to_string())
    };
    Some(VarBind { oid, kind, value })
}

/// The net-snmp tools, run in the agent's namespace against its port (SNMPv2c).
pub struct Client {
    netns: String,
    port: u16,
    /// Seconds to wait for each answer (no retries).
    timeout: u32,
}

/// Dotted form of an OID.
pub fn dotted(oid: &[u32]) -> String {
    oid.iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

impl Client {
    /// The same client, waiting `secs` for each answer.
    pub fn with_timeout(mut self, secs: u32) -> Self {
        self.timeout = secs;
        self
    }

    /// `TOOL -v2c -c COMMUNITY -On -Oe OPTIONS 127.0.0.1:PORT ARGS` in the namespace.
    fn command(&self, tool: &str, community: &str, options: &[String], args: &[String]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.netns, tool, "-v2c", "-c", community])
            .args(["-On", "-Oe", "-r", "0", "-t", &self.timeout.to_string()])
            .args(options)
            .arg(format!("127.0.0.1:{}", self.port))
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs a tool to its end: its standard output, or what it said on failure.
    fn run(
        &self,
        tool: &str,
        community: &str,
        options: &[String],
        args: &[String],
    ) -> Result<String, String> {
        let out = self
            .command(tool, community, options, args)
            .output()
            .map_err(|e| format!("{tool}: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "{tool} {}: {} {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim(),
                text.trim()
            ));
        }
        Ok(text)
    }

    fn parsed(text: &str) -> Vec<VarBind> {
        text.lines().filter_map(parse_line).collect()
    }

    /// `snmpbulkwalk -Cr<reps>` of the subtree `oid`.
    pub fn walk(&self, oid: &str, reps: u32) -> Result<Vec<VarBind>, String> {
        let out = self.run(
            "snmpbulkwalk",
            "public",
            &[format!("-Cr{reps}")],
            &[oid.into()],
        )?;
        Ok(Self::parsed(&out))
    }

    /// Like [`Client::walk`], spawned: the walk's process, its output read by [`walk_output`].
    pub fn walk_spawn(&self, oid: &str, reps: u32) -> Result<Child, String> {
        self.command(
            "snmpbulkwalk",
            "public",
            &[format!("-Cr{reps}")],
            &[oid.into()],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("snmpbulkwalk: {e}"))
    }

    /// `snmpget` of several OIDs in one request.
    pub fn get(&self, oids: &[String]) -> Result<Vec<VarBind>, String> {
        Ok(Self::parsed(&self.run("snmpget", "public", &[], oids)?))
    }

    /// `snmpgetnext` of several OIDs in one request.
    pub fn get_next(&self, oids: &[String]) -> Result<Vec<VarBind>, String> {
        Ok(Self::parsed(&self.run(
            "snmpgetnext",
            "public",
            &[],
            oids,
        )?))
    }

    /// `snmpset` of an INTEGER with community `private`: what the agent said (an error is
    /// the expected answer of a read-only table).
    pub fn set_integer(&self, oid: &str, value: i32) -> String {
        let args = [oid.to_string(), "i".into(), value.to_string()];
        match self.run("snmpset", "private", &[], &args) {
            Ok(out) => out,
            Err(e) => e,
        }
    }
}

/// Reads a spawned walk's output once it has ended.
pub fn walk_output(mut child: Child) -> (bool, Vec<VarBind>, String) {
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let ok = child.wait().is_ok_and(|s| s.success());
    (ok, Client::parsed(&out), err)
}
