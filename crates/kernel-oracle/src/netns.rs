use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Environment variable that turns a skipped kernel test into a failure when set to `required`, so
/// that CI on a capable machine cannot silently stop exercising the kernel.
pub const REQUIRE_ENV: &str = "FIBRE_KERNEL_TESTS";

/// Where `ip netns add` bind-mounts the namespaces it creates.
const NETNS_DIR: &str = "/run/netns";

/// Names must stay unique across concurrently running tests of one process (and across processes,
/// through the pid), because `ip netns add` refuses an existing name.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A network namespace created for the test; deleted on Drop (`ip netns del`).
///
/// Each test gets its own namespace so that its tables, rules and links cannot leak into the host
/// or into tests running in parallel.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

/// What `ip -batch` reported; kept whole because with `-force` a failing line does not stop the
/// batch, and the caller decides whether a failure is expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Exit status was zero, i.e. every line of the batch was accepted.
    pub success: bool,
    /// The exit status: 1 where a line failed, 255 where ip ended the batch with `exit(-1)`
    /// (`invarg` and its kind); `None` where a signal ended it.
    pub status: Option<i32>,
    /// Standard output of `ip`.
    pub stdout: String,
    /// Standard error of `ip`; with `-force` it names each rejected line.
    pub stderr: String,
}

/// Sysctls applied before anything else exists in the namespace. `default` values only affect
/// interfaces created later, which is exactly what the veths of a test are.
const SYSCTLS: &[(&str, &str)] = &[
    // Input lookups (probes with an iif) only give forwarding answers when forwarding is on.
    ("net/ipv4/ip_forward", "1"),
    ("net/ipv6/conf/all/forwarding", "1"),
    ("net/ipv6/conf/default/forwarding", "1"),
    // Reverse-path filtering would reject input probes whose source is not routed back via iif.
    ("net/ipv4/conf/all/rp_filter", "0"),
    ("net/ipv4/conf/default/rp_filter", "0"),
    // No EUI-64/random link-local addresses on new links, so tables only hold what the test added.
    ("net/ipv6/conf/default/addr_gen_mode", "1"),
    // Without DAD, addresses are usable at once instead of "tentative" for a second.
    ("net/ipv6/conf/default/accept_dad", "0"),
    // The kernel default, set explicitly because namespaces may inherit values from the host.
    ("net/ipv4/conf/all/accept_local", "0"),
];

impl Netns {
    /// Creates `fibre-<tag>-<pid>-<counter>`. Sets in it: lo up, net.ipv4.ip_forward=1,
    /// net.ipv6.conf.all.forwarding=1, net.ipv6.conf.default.forwarding=1, rp_filter=0 (all and
    /// default), net.ipv6.conf.default.addr_gen_mode=1 and net.ipv6.conf.default.accept_dad=0 (so
    /// veths get no random link-local addresses and no DAD delay),
    /// net.ipv4.conf.all.accept_local=0 (default).
    ///
    /// Characters of `tag` that `ip` would not accept in a namespace name become `_`.
    pub fn create(tag: &str) -> io::Result<Netns> {
        let tag: String = tag
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let name = format!(
            "fibre-{tag}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        run_checked(Command::new("ip").args(["netns", "add", &name]))?;
        // From here on Drop cleans up, even if configuring fails.
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        let path = ns.path();
        in_netns(&path, || -> io::Result<()> {
            for (key, value) in SYSCTLS {
                let file = Path::new("/proc/sys").join(key);
                std::fs::write(&file, value).map_err(|e| {
                    io::Error::new(e.kind(), format!("writing {}: {e}", file.display()))
                })?;
            }
            Ok(())
        })??;
        Ok(ns)
    }

    /// The name `ip -n` and `ip netns exec` know this namespace by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bind mount that keeps the namespace alive and that `setns` opens.
    pub fn path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.name)
    }

    /// Runs `ip -n NAME [extra args...] -force -batch FILE` and returns (exit status success,
    /// stdout, stderr).
    ///
    /// A failed line is not an `Err`: tests may want to check which lines the kernel refused.
    pub fn ip_batch(&self, extra: &[&str], file: &Path) -> io::Result<BatchOutcome> {
        let mut cmd = Command::new("ip");
        cmd.arg("-n").arg(&self.name).args(extra);
        cmd.arg("-force").arg("-batch").arg(file);
        let out = run(&mut cmd)?;
        Ok(BatchOutcome {
            success: out.status.success(),
            status: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Like [`Netns::ip_batch`], for a script held in memory: writes it to a temporary file that
    /// is removed afterwards, so callers need not manage files.
    pub fn ip_batch_str(&self, extra: &[&str], script: &str) -> io::Result<BatchOutcome> {
        let file = std::env::temp_dir().join(format!(
            "{}-{}.batch",
            self.name,
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, script)?;
        let outcome = self.ip_batch(extra, &file);
        let _ = std::fs::remove_file(&file);
        outcome
    }

    /// Runs `ip -n NAME args...` (for ad-hoc commands), returning stdout or an error with stderr.
    pub fn ip(&self, args: &[&str]) -> io::Result<String> {
        let out = run_checked(Command::new("ip").arg("-n").arg(&self.name).args(args))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// ifindex of each link in the namespace, by name (parse `ip -n NAME -j link show`).
    pub fn links(&self) -> io::Result<Vec<(String, u32)>> {
        let json = self.ip(&["-j", "link", "show"])?;
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
        let value: serde_json::Value = serde_json::from_str(&json)
            .map_err(|e| invalid(format!("`ip -j link show` printed invalid JSON: {e}")))?;
        let entries = value
            .as_array()
            .ok_or_else(|| invalid(format!("`ip -j link show` printed no array: {json}")))?;
        entries
            .iter()
            .map(|link| {
                let name = link.get("ifname").and_then(|v| v.as_str());
                let index = link
                    .get("ifindex")
                    .and_then(|v| v.as_u64())
                    .and_then(|i| u32::try_from(i).ok());
                match (name, index) {
                    (Some(name), Some(index)) => Ok((name.to_string(), index)),
                    _ => Err(invalid(format!("link without ifname/ifindex: {link}"))),
                }
            })
            .collect()
    }

    /// ifindex of one link: probes name interfaces by index, tests think in names.
    pub fn ifindex(&self, link: &str) -> io::Result<u32> {
        self.links()?
            .into_iter()
            .find(|(name, _)| name == link)
            .map(|(_, index)| index)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no link {link} in namespace {}", self.name),
                )
            })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Sockets opened inside keep the namespace itself alive until they close; deleting the
        // name is what frees it for the host and keeps /run/netns from filling up.
        match run_checked(Command::new("ip").args(["netns", "del", &self.name])) {
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(io::stderr(), "warning: {e}");
            }
        }
    }
}

/// Runs `f` on a fresh thread that has joined the namespace at `path`, because `setns` changes
/// only the calling thread and the caller's thread must stay in the host namespace.
pub(crate) fn in_netns<T, F>(path: &Path, f: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", path.display())))?;
    let shown = path.display().to_string();
    std::thread::Builder::new()
        .name("fibre-netns".into())
        .spawn(move || {
            // SAFETY: plain syscall on a descriptor that `file` keeps open for the call.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("setns({shown}): {e}")));
            }
            Ok(f())
        })?
        .join()
        .map_err(|_| io::Error::other("thread inside the namespace panicked"))?
}

fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

fn run(cmd: &mut Command) -> io::Result<Output> {
    cmd.stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running `{}`: {e}", command_line(cmd))))
}

/// Runs a command and turns a non-zero exit into an error carrying its stderr, which is where `ip`
/// explains what the kernel refused.
fn run_checked(cmd: &mut Command) -> io::Result<Output> {
    let out = run(cmd)?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(io::Error::other(format!(
            "`{}` failed ({}): {}",
            command_line(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Why the oracle cannot run here (not root, no `ip netns`): tests turn this into a skip message.
///
/// Returns `None` when kernel tests can run. The answer comes from actually creating and deleting
/// a namespace once per process, since containers can be root and still lack the capabilities.
pub fn unavailable_reason() -> Option<String> {
    static REASON: OnceLock<Option<String>> = OnceLock::new();
    REASON.get_or_init(probe_availability).clone()
}

fn probe_availability() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("the kernel oracle needs Linux".into());
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Some(format!(
            "the kernel oracle needs root to create network namespaces (euid is {euid})"
        ));
    }
    if let Err(e) = run_checked(Command::new("ip").arg("-V")) {
        return Some(format!("iproute2 `ip` is not usable: {e}"));
    }
    match Netns::create("probe") {
        Ok(ns) => {
            if let Err(e) = crate::Oracle::open(&ns) {
                return Some(format!("cannot open netlink inside a namespace: {e}"));
            }
            None
        }
        Err(e) => Some(format!("cannot create a network namespace: {e}")),
    }
}

/// The shared skip policy of kernel-backed tests: returns true when the caller should return
/// early.
///
/// Without the kernel the test is skipped with a message on stderr (written past libtest's output
/// capture, so it shows up in a normal `cargo test`), unless `FIBRE_KERNEL_TESTS=required`, in
/// which case it panics with the reason so a capable CI machine cannot pass by skipping.
pub fn skip_or_fail(test: &str) -> bool {
    let Some(reason) = unavailable_reason() else {
        return false;
    };
    if std::env::var(REQUIRE_ENV).as_deref() == Ok("required") {
        panic!("{test}: {REQUIRE_ENV}=required but the kernel oracle is unavailable: {reason}");
    }
    let _ = writeln!(
        io::stderr(),
        "SKIPPED {test}: kernel oracle unavailable: {reason} (set {REQUIRE_ENV}=required to fail instead)"
    );
    true
}
