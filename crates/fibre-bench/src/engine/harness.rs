//! Peer harnesses: programs that read the bench's files and print records
//! (`bench/harness/PROTOCOL.md`). The kernel's runs inside a network namespace created here.
use crate::engine::MISS;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A harness program and the engines it provides.
#[derive(Clone, Copy, Debug)]
pub struct HarnessSpec {
    /// Program name under the harness directory.
    pub program: &'static str,
    /// Runs inside a fresh network namespace prepared by [`BenchNamespace`].
    pub netns: bool,
    pub engines_v4: &'static [&'static str],
    pub engines_v6: &'static [&'static str],
    /// How to get it, for the skip note.
    pub needs: &'static str,
    /// Takes `--updates` (PROTOCOL.md): times route changes beside fibre's update benchmark.
    pub updates: bool,
}

/// Every harness, in report order: the one registration point for out-of-process engines.
pub const HARNESSES: &[HarnessSpec] = &[
    HarnessSpec {
        program: "kernel-xdp",
        netns: true,
        engines_v4: &["linux-kernel"],
        engines_v6: &["linux-kernel"],
        needs: "root, clang, libbpf-dev, bpftool",
        updates: false,
    },
    HarnessSpec {
        program: "dpdk",
        netns: false,
        engines_v4: &["dpdk-lpm", "dpdk-fib-dir24-8"],
        engines_v6: &["dpdk-lpm6", "dpdk-fib6-trie"],
        needs: "libdpdk-dev",
        updates: true,
    },
    HarnessSpec {
        program: "bart",
        netns: false,
        engines_v4: &["bart-table", "bart-fast"],
        engines_v6: &["bart-table", "bart-fast"],
        needs: "go",
        updates: false,
    },
];

/// Where harness programs are looked for: `$FIBRE_HARNESS_DIR`, `target/harness` beside the
/// running binary's `target/<profile>/`, then `target/harness` under the current directory.
pub fn harness_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(d) = explicit {
        return d.to_path_buf();
    }
    if let Some(d) = std::env::var_os("FIBRE_HARNESS_DIR") {
        return PathBuf::from(d);
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(target) = exe.parent().and_then(Path::parent) {
            let d = target.join("harness");
            if d.is_dir() {
                return d;
            }
        }
    }
    PathBuf::from("target/harness")
}

/// One line a harness prints.
#[derive(Clone, Debug, Deserialize)]
pub struct HarnessRecord {
    pub engine: String,
    #[serde(default)]
    pub metric: String,
    #[serde(default)]
    pub workload: Option<String>,
    #[serde(default)]
    pub value: f64,
    #[serde(default)]
    pub unit: String,
    #[serde(default)]
    pub runs: usize,
    #[serde(default)]
    pub spread: f64,
    #[serde(default)]
    pub note: Option<String>,
    /// Set instead of a measurement when the engine cannot run here.
    #[serde(default)]
    pub skip: Option<String>,
}

/// What one harness run needs.
pub struct HarnessRun<'a> {
    pub family: u8,
    pub routes: &'a Path,
    pub workloads: &'a [(String, PathBuf)],
    pub out: &'a Path,
    pub runs: usize,
    pub bulk: usize,
    pub check_n: usize,
    /// Only these engines (`--engines`), for harnesses with several.
    pub engines: Option<Vec<&'a str>>,
    /// Route changes to time instead of lookups (harnesses whose spec has `updates`).
    pub updates: Option<UpdateJob>,
}

/// The update benchmark a harness runs (`--updates`, PROTOCOL.md): `count` random routes
/// deleted and put back, chosen from `seed`, a reader on `reader_cpu` doing bulk lookups of the
/// first workload, at most `secs` seconds of changes per engine.
#[derive(Clone, Copy, Debug)]
pub struct UpdateJob {
    pub count: usize,
    pub seed: u64,
    pub reader_cpu: Option<usize>,
    pub secs: u64,
}

/// Runs `program` (inside a fresh namespace when the spec says so); returns its records.
pub fn run(
    spec: &HarnessSpec,
    program: &Path,
    job: &HarnessRun,
) -> Result<Vec<HarnessRecord>, String> {
    let mut args: Vec<String> = vec![
        "--family".into(),
        job.family.to_string(),
        "--routes".into(),
        job.routes.display().to_string(),
        "--out".into(),
        job.out.display().to_string(),
        "--runs".into(),
        job.runs.to_string(),
        "--bulk".into(),
        job.bulk.to_string(),
        "--check-n".into(),
        job.check_n.to_string(),
    ];
    if let Some(list) = &job.engines {
        args.push("--engines".into());
        args.push(list.join(","));
    }
    if let Some(u) = job.updates {
        args.extend([
            "--updates".into(),
            u.count.to_string(),
            "--seed".into(),
            u.seed.to_string(),
            "--update-secs".into(),
            u.secs.to_string(),
        ]);
        if let Some(cpu) = u.reader_cpu {
            args.extend(["--reader-cpu".into(), cpu.to_string()]);
        }
    }
    for (name, path) in job.workloads {
        args.push("--workload".into());
        args.push(format!("{name}={}", path.display()));
    }
    let _ns;
    let mut cmd = if spec.netns {
        let ns = BenchNamespace::create()?;
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns.name]).arg(program);
        _ns = Some(ns);
        c
    } else {
        _ns = None;
        Command::new(program)
    };
    let output = cmd
        .args(&args)
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .map_err(|e| format!("{}: bad record {l:?}: {e}", program.display()))
        })
        .collect()
}

/// `DIR/ENGINE.NAME.check`, where a harness writes the answers named NAME (a workload's, or
/// `deleted`: PROTOCOL.md).
pub fn check_path(out: &Path, engine: &str, name: &str) -> PathBuf {
    out.join(format!("{engine}.{name}.check"))
}

/// Reads `DIR/ENGINE.WORKLOAD.check`: next-hop indexes, `-1` for no route.
pub fn read_check(out: &Path, engine: &str, workload: &str) -> Result<Vec<u32>, String> {
    let path = check_path(out, engine, workload);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(i, l)| match l.trim().parse::<i64>() {
            Ok(-1) => Ok(MISS),
            Ok(v) if (0..u32::MAX as i64).contains(&v) => Ok(v as u32),
            _ => Err(format!(
                "{}:{}: not a next hop: {l:?}",
                path.display(),
                i + 1
            )),
        })
        .collect()
}

/// A network namespace set up as PROTOCOL.md describes, deleted on drop.
pub struct BenchNamespace {
    pub name: String,
}

impl BenchNamespace {
    pub fn create() -> Result<Self, String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static SERIAL: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "fibre-bench-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name])?;
        let ns = BenchNamespace { name };
        let n = ns.name.as_str();
        ip(&["-n", n, "link", "set", "lo", "up"])?;
        ip(&[
            "-n", n, "link", "add", "bench0", "type", "veth", "peer", "name", "bench1",
        ])?;
        ip(&["-n", n, "link", "set", "bench0", "up"])?;
        ip(&["-n", n, "link", "set", "bench1", "up"])?;
        ip(&["-n", n, "addr", "add", "198.18.0.1/24", "dev", "bench0"])?;
        ip(&[
            "-n",
            n,
            "addr",
            "add",
            "fd00:fb::1/64",
            "dev",
            "bench0",
            "nodad",
        ])?;
        let sysctls = "echo 1 > /proc/sys/net/ipv4/ip_forward && \
             echo 1 > /proc/sys/net/ipv6/conf/all/forwarding && \
             echo 0 > /proc/sys/net/ipv4/conf/all/rp_filter && \
             echo 0 > /proc/sys/net/ipv4/conf/default/rp_filter";
        let status = Command::new("ip")
            .args(["netns", "exec", n, "sh", "-c", sysctls])
            .status()
            .map_err(|e| format!("ip netns exec: {e}"))?;
        if !status.success() {
            return Err(format!("setting sysctls in {n} failed"));
        }
        // Carrier and the IPv6 prefix route settle asynchronously.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(ns)
    }
}

impl BenchNamespace {
    /// The gateways of the namespace's veth (`bench1`'s side of 198.18.0.1/24 and
    /// fd00:fb::1/64), which installed routes go through.
    pub const GATEWAY4: &'static str = "198.18.0.2";
    pub const GATEWAY6: &'static str = "fd00:fb::2";

    /// Installs routes via the namespace's gateways with one `ip -batch`.
    pub fn install(&self, v4: &[(u32, u8)], v6: &[(u128, u8)]) -> Result<(), String> {
        use std::io::Write;
        use std::net::{Ipv4Addr, Ipv6Addr};
        let mut ip = Command::new("ip")
            .args(["-n", &self.name, "-batch", "-"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("ip: {e}"))?;
        let mut input = std::io::BufWriter::new(ip.stdin.take().expect("piped"));
        for &(a, len) in v4 {
            let (a, gw) = (Ipv4Addr::from(a), Self::GATEWAY4);
            let _ = writeln!(input, "route add {a}/{len} via {gw}");
        }
        for &(a, len) in v6 {
            let (a, gw) = (Ipv6Addr::from(a), Self::GATEWAY6);
            let _ = writeln!(input, "route add {a}/{len} via {gw}");
        }
        drop(input);
        let out = ip.wait_with_output().map_err(|e| format!("ip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "installing the table: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(())
    }
}

impl Drop for BenchNamespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether network namespaces can be made here (root and iproute2).
pub fn netns_available() -> Result<(), String> {
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    Command::new("ip")
        .arg("-V")
        .output()
        .map_err(|_| "iproute2 (ip) not installed".to_string())
        .map(|_| ())
}
