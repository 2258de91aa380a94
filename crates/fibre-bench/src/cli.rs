//! `fibre bench`: command-line options of the study.
use crate::scenario::ScenarioKind;
use crate::study::{self, StudyConfig, TableChoice};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Reproduce the Linux route-lookup study: fibre beside the kernel and peer libraries.
///
/// The quick study (default) runs both families at 10^3..10^5 routes; `--full` runs every
/// density from 100 to 2,000,000 routes. Engines that cannot run here are skipped with a note.
#[derive(Parser, Debug)]
#[command(name = "fibre bench", bin_name = "fibre bench")]
pub struct BenchArgs {
    /// The full study: sizes 100..2,000,000, every density, 11 runs
    #[arg(long)]
    pub full: bool,
    /// Full-view routes: a prefix list (plain or .gz) or an MRT RIB dump
    /// [default: ../shared/data/full-table-2024.txt.gz when present, else synthetic]
    #[arg(long, value_name = "FILE", conflicts_with = "synthetic")]
    pub table: Option<PathBuf>,
    /// Use the synthetic full view even when a real table is at hand
    #[arg(long)]
    pub synthetic: bool,
    /// Table sizes, comma-separated (full views are clipped to the table)
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub sizes: Option<Vec<usize>>,
    /// Scenarios: full-view, spread48-dDENSITY (spread32-d.. for IPv4), random128
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub scenarios: Option<Vec<String>>,
    /// Only this family
    #[arg(long, value_parser = ["4", "6"])]
    pub family: Option<String>,
    /// Timed repetitions per measurement
    #[arg(long)]
    pub runs: Option<usize>,
    /// Measure each point K times, engines interleaved and built afresh each time; ratios to
    /// the best peers are taken repeat by repeat (median, range)
    #[arg(long, value_name = "K")]
    pub repeat: Option<usize>,
    /// Seed of every generated table and address set
    #[arg(long)]
    pub seed: Option<u64>,
    /// Addresses in the W1 and W2 workloads
    #[arg(long, value_name = "N")]
    pub w_count: Option<usize>,
    /// Only these engines, comma-separated (e.g. fibre-rib,linux-kernel,dpdk-lpm)
    #[arg(long, value_delimiter = ',')]
    pub engines: Option<Vec<String>>,
    /// Leave an engine out of larger points once its build is projected past this many seconds
    #[arg(long, value_name = "SECS")]
    pub max_build_secs: Option<f64>,
    /// Routes deleted and put back in the update benchmark [default: 20000; 100000 with --full;
    /// 0 skips it]
    #[arg(long, value_name = "N")]
    pub updates: Option<usize>,
    /// A BGP4MP update file (MRT, plain or .gz) to replay into a router holding the full view,
    /// one update at a time with a reader running: updates per second, median and tail
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Times the update file is replayed [default: 1]
    #[arg(long, value_name = "N", requires = "replay")]
    pub replay_passes: Option<usize>,
    /// Directory of the peer harnesses [default: target/harness]
    #[arg(long, value_name = "DIR")]
    pub harness_dir: Option<PathBuf>,
    /// Core to pin to [default: the last]
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Output directory: results.json, results.csv, plots, report.html
    #[arg(long, default_value = "target/bench-report")]
    pub out: PathBuf,
    /// No progress bar
    #[arg(long)]
    pub quiet: bool,
}

impl BenchArgs {
    pub fn config(&self) -> Result<StudyConfig, String> {
        let mut cfg = if self.full {
            StudyConfig::full()
        } else {
            StudyConfig::quick()
        };
        cfg.table = match (&self.table, self.synthetic) {
            (Some(p), _) => TableChoice::Path(p.clone()),
            (None, true) => TableChoice::Synthetic,
            (None, false) => TableChoice::Default,
        };
        if let Some(s) = &self.sizes {
            if s.is_empty() || s.contains(&0) {
                return Err("--sizes: give positive sizes".into());
            }
            cfg.sizes = s.clone();
        }
        if let Some(list) = &self.scenarios {
            cfg.scenarios = list
                .iter()
                .map(|s| {
                    ScenarioKind::parse(s)
                        .ok_or_else(|| format!("--scenarios: unknown scenario {s:?}"))
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(f) = &self.family {
            cfg.families = vec![f.parse().expect("validated by clap")];
        }
        if let Some(r) = self.runs {
            cfg.runs = r.max(1);
        }
        if let Some(k) = self.repeat {
            if k == 0 {
                return Err("--repeat: give at least 1".into());
            }
            cfg.repeat = k;
        }
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        if let Some(w) = self.w_count {
            cfg.w_count = w.max(1);
        }
        cfg.engines = self.engines.clone();
        if let Some(n) = self.updates {
            cfg.updates = n;
        }
        if let Some(b) = self.max_build_secs {
            cfg.max_build_secs = b;
        }
        cfg.replay = self.replay.clone();
        if let Some(n) = self.replay_passes {
            if n == 0 {
                return Err("--replay-passes: give at least 1".into());
            }
            cfg.replay_passes = n;
        }
        cfg.harness_dir = self.harness_dir.clone();
        cfg.cpu = self.cpu;
        cfg.out = self.out.clone();
        cfg.progress = !self.quiet;
        Ok(cfg)
    }
}

/// Runs `fibre bench` with `args` (program name first); `fibre bench mirror ...` runs the
/// mirror's benchmark.
pub fn main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    if args.get(1).map(String::as_str) == Some("mirror") {
        return mirror_main(args.into_iter().skip(1));
    }
    if args.get(1).map(String::as_str) == Some("snmp") {
        return snmp_main(args.into_iter().skip(1));
    }
    let args = match parse::<BenchArgs>(args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let cfg = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fibre bench: {e}");
            return ExitCode::from(2);
        }
    };
    match study::run(&cfg) {
        Ok(out) => {
            for t in out.results.summary() {
                println!("{}", t.to_markdown());
            }
            if !out.results.ratios.is_empty() {
                println!(
                    "{}",
                    crate::report::repeats::to_markdown(&out.results.ratios)
                );
            }
            for n in &out.results.notes {
                println!("note: {n}");
            }
            println!("report: {}", out.report.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fibre bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn mirror_main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args = match parse::<crate::mirror::MirrorBenchArgs>(args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match crate::mirror::run(&args) {
        Ok(results) => {
            println!("{}", crate::mirror::summary(&results));
            for n in &results.notes {
                println!("note: {n}");
            }
            println!("records: {}", args.out.join("mirror.json").display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fibre bench mirror: {e}");
            ExitCode::FAILURE
        }
    }
}

fn snmp_main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args = match parse::<crate::snmp::bench::SnmpBenchArgs>(args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match crate::snmp::bench::run(&args) {
        Ok(results) => {
            println!("{}", crate::snmp::bench::summary(&results));
            for n in &results.notes {
                println!("note: {n}");
            }
            println!("records: {}", args.out.join("snmp.json").display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fibre bench snmp: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Options parsed, or how the command ends: `--help` printed (success) or a usage error (2).
fn parse<T: Parser>(args: impl IntoIterator<Item = String>) -> Result<T, ExitCode> {
    T::try_parse_from(args).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        }
    })
}
