//! What the bench asks of the host: pinning threads to cores, counting the cores online, and
//! what the meta of a run records (the CPU and its features, huge pages, the machine's load).

/// Pins the calling thread to `cpu`; a cpu past what a `cpu_set_t` holds is refused.
pub fn pin_thread(cpu: usize) -> std::io::Result<()> {
    pin_task(0, cpu)
}

/// Pins thread `tid` (0: the calling one) to `cpu`; a cpu past what a `cpu_set_t` holds is
/// refused.
pub fn pin_task(tid: libc::pid_t, cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::other(format!(
            "cpu {cpu} is past the {} a cpu set holds",
            libc::CPU_SETSIZE
        )));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// CPUs online (not the affinity mask, which pinning narrows to one).
pub fn online_cpus() -> usize {
    // SAFETY: sysconf reads a system value; no pointer is passed.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// The machine, as the report names it: CPU model, cores, kernel release.
pub fn machine() -> String {
    let cpu = cpu_model();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!("{cpu}, {} cores, Linux {kernel}", online_cpus())
}

/// The CPU's model name, as /proc/cpuinfo gives it, and its vendor, family and model numbers.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| cpu_model_of(&t))
        .unwrap_or_else(|_| "unknown CPU".into())
}

/// [`cpu_model`] from the text of /proc/cpuinfo (its first processor's lines). The numbers
/// matter where the name does not tell: a virtual machine may show a generic name ("Intel(R)
/// Xeon(R) Processor" on the Emerald Rapids of issue 15's twenty-seventh round, family 6
/// model 207), and the lookup paths' speed differs by generation.
fn cpu_model_of(cpuinfo: &str) -> String {
    let field = |name: &str| {
        cpuinfo
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    };
    let name = field("model name").unwrap_or("unknown CPU");
    match (field("vendor_id"), field("cpu family"), field("model")) {
        (Some(vendor), Some(family), Some(model)) => {
            format!("{name} ({vendor} family {family} model {model})")
        }
        _ => name.to_string(),
    }
}

/// The instruction-set extensions lookups may select at run time, those this CPU has.
pub fn cpu_features() -> Vec<&'static str> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => {
                $(if std::arch::is_x86_feature_detected!($f) { out.push($f); })*
            };
        }
        probe!(
            "popcnt",
            "sse4.2",
            "bmi2",
            "avx2",
            "avx512f",
            "avx512bw",
            "avx512dq",
            "avx512vl",
            "avx512vbmi2",
            "avx512vpopcntdq",
            "gfni"
        );
    }
    out
}

/// Bytes of `regions` (start, length) backed by transparent huge pages, and their total bytes,
/// from /proc/self/smaps. A region the kernel split into its own mappings (`madvise` does) is
/// counted exactly; one sharing a mapping gets that mapping's huge pages in proportion to the
/// region's part of the mapping's resident bytes (not of its size: a FIB arena reserves
/// address space it has not touched, which holds no page of either kind). Regions are taken
/// to be resident (the arenas' regions are the parts they touched).
pub fn huge_page_bytes(regions: &[(usize, usize)]) -> Option<(usize, usize)> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let total: usize = regions.iter().map(|r| r.1).sum();
    let mut huge = 0f64;
    let mut vma: Option<(usize, usize)> = None;
    let mut rss = 0usize;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                vma = Some((a, b));
                rss = 0;
                continue;
            }
        }
        if first == "Rss:" {
            rss = words
                .next()
                .and_then(|w| w.parse::<usize>().ok())
                .unwrap_or(0)
                * 1024;
            continue;
        }
        if first != "AnonHugePages:" {
            continue;
        }
        let (Some((a, b)), Some(kb)) = (vma, words.next().and_then(|w| w.parse::<usize>().ok()))
        else {
            continue;
        };
        if kb == 0 || b <= a || rss == 0 {
            continue;
        }
        for &(start, len) in regions {
            let overlap = (start + len).min(b).saturating_sub(start.max(a)).min(rss);
            huge += (kb * 1024) as f64 * overlap as f64 / rss as f64;
        }
    }
    Some((huge.round() as usize, total))
}

/// CPU time of the whole machine and of this process (with its waited-for children), in clock
/// ticks: what tells how busy the rest of the machine was during a measurement.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuTimes {
    wall: std::time::Duration,
    busy: u64,
    steal: u64,
    own: u64,
}

impl CpuTimes {
    pub fn now(since: std::time::Instant) -> Self {
        let mut t = CpuTimes {
            wall: since.elapsed(),
            ..Default::default()
        };
        if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
            if let Some(cpu) = stat.lines().next() {
                // cpu user nice system idle iowait irq softirq steal ...
                let v: Vec<u64> = cpu
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|w| w.parse().ok())
                    .collect();
                if v.len() >= 8 {
                    t.busy = v[0] + v[1] + v[2] + v[5] + v[6];
                    t.steal = v[7];
                }
            }
        }
        if let Ok(own) = std::fs::read_to_string("/proc/self/stat") {
            // Fields after the command (which may hold spaces) start at state (field 3);
            // utime, stime, cutime, cstime are fields 14..17.
            if let Some(rest) = own.rsplit_once(')').map(|(_, r)| r) {
                let v: Vec<u64> = rest
                    .split_whitespace()
                    .skip(11)
                    .take(4)
                    .filter_map(|w| w.parse().ok())
                    .collect();
                t.own = v.iter().sum();
            }
        }
        t
    }

    /// Cores' worth of CPU time that other processes used (`.0`) and the hypervisor stole
    /// (`.1`) between `self` and `later`.
    pub fn others(&self, later: &CpuTimes) -> (f64, f64) {
        // SAFETY: sysconf reads a system value; no pointer is passed.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let secs = (later.wall.saturating_sub(self.wall))
            .as_secs_f64()
            .max(1e-3);
        let busy = later.busy.saturating_sub(self.busy) as f64;
        let own = later.own.saturating_sub(self.own) as f64;
        let steal = later.steal.saturating_sub(self.steal) as f64;
        (((busy - own).max(0.0) / hz / secs), (steal / hz / secs))
    }
}

/// The load averages (1, 5, 15 minutes) as /proc/loadavg gives them.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// ns per load of a chain of dependent loads over `bytes` of memory (64-byte cells in one
/// random cycle, heap memory as the system pages it): a cache probe. On the machine the issue
/// was measured on, 4 MiB took 17-21 ns while the process kept its share of the shared L3 and
/// 115-160 ns once neighbours had taken it (64 MiB, memory: 130-160 ns). fibre's FIB of the
/// IPv4 view is 3.4 MB, so the probe beside a repeat tells whether that repeat's lookups ran
/// from the cache or from memory. `steps` loads are timed: 2^20 cost 20-160 ms.
pub fn dependent_load_ns(bytes: usize, steps: usize) -> f64 {
    let next = chase_cycle(bytes / 64);
    let mut at = 0usize;
    // One lap to bring the cells in, then the timed chase.
    for _ in 0..next.len() / CELL {
        at = next[at] as usize;
    }
    let start = std::time::Instant::now();
    for _ in 0..steps {
        at = next[std::hint::black_box(at)] as usize;
    }
    let ns = start.elapsed().as_nanos() as f64 / steps.max(1) as f64;
    std::hint::black_box(at);
    ns
}

/// `u64`s in a 64-byte cell of [`chase_cycle`].
const CELL: usize = 8;

/// At least two 64-byte cells whose first words link them in one cycle through all of them,
/// in a random order: each word is the index of the next cell's (linking the cells in the
/// order of a shuffle makes one cycle, whatever the shuffle).
fn chase_cycle(cells: usize) -> Vec<u64> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let n = cells.max(2);
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(0x5eed));
    let mut next = vec![0u64; n * CELL];
    for w in 0..n {
        next[order[w] * CELL] = (order[(w + 1) % n] * CELL) as u64;
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's chain is one cycle through every cell (so a lap reads all of them and a
    /// chase stays in bounds), and the probe gives a time (its size is the machine's business).
    #[test]
    fn the_cache_probe_chases_one_cycle_through_every_cell() {
        for cells in [0, 1, 2, 3, 1000] {
            let next = chase_cycle(cells);
            let n = cells.max(2);
            assert_eq!(next.len(), n * CELL);
            let mut seen = vec![false; n];
            let mut at = 0usize;
            for _ in 0..n {
                assert!(!seen[at / CELL], "{cells} cells: cell {} twice", at / CELL);
                seen[at / CELL] = true;
                at = next[at] as usize;
            }
            assert_eq!(at, 0, "{cells} cells: back at the start after a lap");
        }
        let ns = dependent_load_ns(1 << 16, 10_000);
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }

    /// The model line names the vendor, family and model beside the name (a virtual machine's
    /// name may be generic), and keeps the name alone where the numbers are missing.
    #[test]
    fn the_cpu_model_gives_vendor_family_and_model() {
        let intel = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n\
                     model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 2\n\n\
                     processor\t: 1\nvendor_id\t: OtherVendor\n";
        assert_eq!(
            cpu_model_of(intel),
            "Intel(R) Xeon(R) Processor (GenuineIntel family 6 model 207)"
        );
        let bare = "processor\t: 0\nmodel name\t: Some CPU\n";
        assert_eq!(cpu_model_of(bare), "Some CPU");
        assert_eq!(cpu_model_of(""), "unknown CPU");
    }

    /// The huge-page share of a FIB's arenas is read from /proc/self/smaps: the total is the
    /// regions' size and the huge part never exceeds it (whether the kernel gave huge pages
    /// depends on the machine, so only the bounds are asserted).
    #[test]
    fn huge_page_share_is_bounded_by_the_regions() {
        let fib = fibre::fib::Fib::<std::net::Ipv4Addr, fibre::fib::Poptrie<_>>::from_routes(
            (0..200_000u32).map(|i| {
                let p = fibre::Prefix::new(std::net::Ipv4Addr::from(i << 8), 24);
                (p, i % 64)
            }),
        )
        .unwrap();
        let regions = fib.regions();
        assert_eq!(regions.len(), 3);
        let (huge, total) = huge_page_bytes(&regions).expect("/proc/self/smaps");
        assert_eq!(total, regions.iter().map(|r| r.1).sum::<usize>());
        assert!(huge <= total, "{huge} > {total}");
        assert!(huge_page_bytes(&[]).unwrap() == (0, 0));
    }

    #[test]
    fn other_processes_load_is_never_negative() {
        let clock = std::time::Instant::now();
        let a = CpuTimes::now(clock);
        // CPU time comes in clock ticks (10 ms at the usual 100 Hz): over a few milliseconds a
        // single tick reads as several cores, so the window is long enough to bound.
        let mut x = 0u64;
        while clock.elapsed() < std::time::Duration::from_millis(400) {
            for i in 0..100_000u64 {
                x = x.wrapping_add(std::hint::black_box(i));
            }
        }
        std::hint::black_box(x);
        let (others, steal) = a.others(&CpuTimes::now(clock));
        assert!(others >= 0.0 && steal >= 0.0);
        assert!(others <= online_cpus() as f64 + 1.0, "{others}");
    }
}
