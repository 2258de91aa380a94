//! One point of the study (a family, a scenario, a size): the reference's workloads, then
//! every engine built, checked against the reference and timed.
use super::{over_budget, repeated, Ctx, StudyConfig};
use crate::alloc;
use crate::engine::harness::{self, HarnessRun};
use crate::engine::{fibre_fib::FibreFib, in_process, Engine, MISS, REFERENCE};
use crate::report::{Record, Results};
use crate::scenario::*;
use crate::stats::Summary;
use crate::workload::{self, StudySet};
use fibre::fib::Reference;
use std::path::PathBuf;
use std::time::Instant;

/// One workload: its name, addresses, and the reference answers for its first `check_n`.
struct Workload<K> {
    name: &'static str,
    addrs: Vec<K>,
    expected: Vec<u32>,
    file: PathBuf,
}

pub(super) fn study_point<A: StudyFamily + PickView>(
    ctx: &mut Ctx,
    scenario: &str,
    routes: &[BenchRoute<A::K>],
    range: (A::K, A::K),
    with_w: bool,
) -> Result<(), String> {
    let mut point = Point::<A>::prepare(ctx, scenario, routes)?;
    point.workloads(ctx, range, with_w)?;
    // Each repeat builds every engine afresh (a new arena, a new harness process), and the two
    // kinds of engine take turns going first, so that neither always runs on a warmer or a
    // quieter machine.
    repeated(ctx, A::LABEL, scenario, point.size, |ctx, repeat| {
        if repeat % 2 == 0 {
            point.measure_in_process(ctx);
            point.measure_harnesses(ctx)
        } else {
            point.measure_harnesses(ctx)?;
            point.measure_in_process(ctx);
            Ok(())
        }
    })?;
    point.remember_builds(ctx);
    Ok(())
}

/// One point of the study (a family, a scenario, a size): its files, its workloads with the
/// reference's answers, and the engines left out of it.
struct Point<'a, A: StudyFamily> {
    scenario: &'a str,
    routes: &'a [BenchRoute<A::K>],
    size: usize,
    dir: PathBuf,
    routes_file: PathBuf,
    /// Engines whose build is projected over budget here.
    excluded: Vec<String>,
    loads: Vec<Workload<A::K>>,
}

impl<'a, A: StudyFamily> Point<'a, A> {
    /// Leaves out the engines over budget and writes the routes file the harnesses read.
    fn prepare(
        ctx: &mut Ctx,
        scenario: &'a str,
        routes: &'a [BenchRoute<A::K>],
    ) -> Result<Self, String> {
        let cfg = ctx.cfg;
        let size = routes.len();
        let excluded: Vec<String> =
            over_budget(&ctx.history, A::LABEL, scenario, size, cfg.max_build_secs)
                .into_iter()
                .map(|(engine, why)| {
                    ctx.results.notes.push(why);
                    engine
                })
                .collect();
        let dir = cfg
            .out
            .join("work")
            .join(A::LABEL)
            .join(scenario)
            .join(size.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let routes_file = dir.join("routes.txt");
        let text: String = routes.iter().map(|r| route_line::<A>(r) + "\n").collect();
        std::fs::write(&routes_file, text)
            .map_err(|e| format!("{}: {e}", routes_file.display()))?;
        Ok(Point {
            scenario,
            routes,
            size,
            dir,
            routes_file,
            excluded,
            loads: Vec::new(),
        })
    }

    /// One record of this point.
    fn record(
        &self,
        results: &mut Results,
        engine: &str,
        metric: &str,
        s: Summary,
        unit: &str,
        note: Option<String>,
    ) {
        results.records.push(Record {
            engine: engine.to_string(),
            family: A::LABEL.to_string(),
            scenario: self.scenario.to_string(),
            size: self.size,
            metric: metric.to_string(),
            value: s.value,
            unit: unit.to_string(),
            runs: s.runs,
            spread: s.spread,
            note,
        });
    }

    /// Whether `name` runs here: asked for, and not over budget.
    fn wanted(&self, cfg: &StudyConfig, name: &str) -> bool {
        cfg.engines
            .as_ref()
            .is_none_or(|l| l.iter().any(|e| e == name))
            && !self.excluded.iter().any(|e| e == name)
    }

    /// Builds the reference (longest-prefix match by its definition: it decides which
    /// addresses hit and what the answers are), draws the workloads and writes their files.
    fn workloads(
        &mut self,
        ctx: &mut Ctx,
        range: (A::K, A::K),
        with_w: bool,
    ) -> Result<(), String> {
        let cfg = ctx.cfg;
        let (scenario, size) = (self.scenario, self.size);
        let mut reference = FibreFib::<A, Reference<A>>::new();
        reference.build(self.routes);
        let StudySet { addrs, tries } =
            workload::study_set::<A>(range, cfg.seed, |a| reference.lookup(a) != MISS);
        self.record(
            ctx.results,
            "study-set",
            "hits",
            Summary {
                value: addrs.len() as f64,
                spread: 0.0,
                runs: tries,
            },
            "addresses",
            Some(format!("hits among {tries} tries (runs = tries)")),
        );
        let mut workloads = vec![("study", addrs)];
        if with_w {
            workloads.push((
                "w1",
                workload::inside_prefixes::<A>(self.routes, cfg.w_count, cfg.seed),
            ));
            workloads.push(("w2", workload::uniform::<A>(cfg.w_count, cfg.seed)));
        }
        for (name, addrs) in workloads {
            if addrs.is_empty() {
                ctx.results.notes.push(format!(
                    "{} {scenario} {size}: no address of the scanned range hit a route in {tries} tries; no lookup time",
                    A::LABEL
                ));
                continue;
            }
            let file = self.dir.join(format!("{name}.addrs"));
            workload::write_addrs(&file, &addrs).map_err(|e| format!("{}: {e}", file.display()))?;
            let expected = addrs
                .iter()
                .take(cfg.check_n)
                .map(|&a| reference.lookup(a))
                .collect();
            self.loads.push(Workload {
                name,
                addrs,
                expected,
                file,
            });
        }
        Ok(())
    }

    /// The in-process engines, each built afresh; an engine whose answers differ from the
    /// reference's is left out. The reference itself is the oracle, not timed.
    fn measure_in_process(&self, ctx: &mut Ctx) {
        let cfg = ctx.cfg;
        let engines = in_process::<A>()
            .into_iter()
            .filter(|e| e.name() != REFERENCE && self.wanted(cfg, e.name()));
        'engines: for mut engine in engines {
            let (secs, bytes) = build(engine.as_mut(), self.routes);
            let name = engine.name();
            let note = Some(engine.note().to_string()).filter(|n| !n.is_empty());
            for w in &self.loads {
                let got: Vec<u32> = w
                    .addrs
                    .iter()
                    .take(cfg.check_n)
                    .map(|&a| engine.lookup(a))
                    .collect();
                if let Err(e) = compare::<A>(name, self.scenario, self.size, w, &got) {
                    ctx.disagreements.push(e);
                    continue 'engines;
                }
            }
            self.record(
                ctx.results,
                name,
                "insert_time",
                Summary::once(secs),
                "s",
                None,
            );
            if let Some(b) = bytes {
                self.record(
                    ctx.results,
                    name,
                    "memory",
                    Summary::once(b as f64 / self.size as f64),
                    "bytes/route",
                    None,
                );
                self.record(
                    ctx.results,
                    name,
                    "memory_total",
                    Summary::once(b as f64),
                    "bytes",
                    None,
                );
            }
            if let Some(b) = engine.structure_bytes() {
                let per = Summary::once(b as f64 / self.size as f64);
                self.record(
                    ctx.results,
                    name,
                    "memory_structure",
                    per,
                    "bytes/route",
                    None,
                );
            }
            let regions = engine.regions();
            if let Some((huge, bytes)) = crate::host::huge_page_bytes(&regions) {
                if bytes > 0 {
                    self.record(
                        ctx.results,
                        name,
                        "huge_pages",
                        Summary::once(huge as f64 / bytes as f64),
                        "share",
                        Some(format!(
                            "share of the {} MiB of arenas lookups read that transparent huge pages back",
                            bytes >> 20
                        )),
                    );
                }
            }
            if let Some(shape) = engine.shape() {
                self.record(
                    ctx.results,
                    name,
                    "depth_max",
                    Summary::once(shape.depth_max),
                    "nodes",
                    None,
                );
                self.record(
                    ctx.results,
                    name,
                    "depth_mean",
                    Summary::once(shape.depth_mean),
                    "nodes",
                    None,
                );
                self.record(
                    ctx.results,
                    name,
                    "nodes",
                    Summary::once(shape.nodes),
                    "nodes",
                    None,
                );
            }
            for w in &self.loads {
                let single = repeat(cfg.runs, || engine.time_lookup(&w.addrs));
                self.record(
                    ctx.results,
                    name,
                    &timing_metric("lookup", w.name),
                    single,
                    "ns",
                    note.clone(),
                );
                if engine.has_bulk() {
                    let bulk = repeat(cfg.runs, || engine.time_lookup_bulk(&w.addrs, cfg.bulk));
                    let metric = timing_metric("lookup_bulk", w.name);
                    self.record(ctx.results, name, &metric, bulk, "ns", note.clone());
                }
                if w.name != "study" {
                    let chain = repeat(cfg.runs, || engine.time_latency(&w.addrs));
                    let metric = timing_metric("latency", w.name);
                    self.record(ctx.results, name, &metric, chain, "ns", note.clone());
                }
            }
        }
    }

    /// The peer harnesses, which read the same files; their answers are checked as the
    /// in-process engines' are.
    fn measure_harnesses(&self, ctx: &mut Ctx) -> Result<(), String> {
        let cfg = ctx.cfg;
        let (scenario, size) = (self.scenario, self.size);
        let workload_files: Vec<(String, PathBuf)> = self
            .loads
            .iter()
            .map(|w| (w.name.to_string(), w.file.clone()))
            .collect();
        for (spec, program) in ctx.harnesses {
            let engines = if A::WIDTH == 32 {
                spec.engines_v4
            } else {
                spec.engines_v6
            };
            let run_these: Vec<&str> = engines
                .iter()
                .copied()
                .filter(|e| self.wanted(cfg, e))
                .collect();
            if run_these.is_empty() {
                continue;
            }
            let out = self.dir.join(spec.program);
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            let job = HarnessRun {
                family: if A::WIDTH == 32 { 4 } else { 6 },
                routes: &self.routes_file,
                workloads: &workload_files,
                out: &out,
                runs: cfg.runs,
                bulk: cfg.bulk,
                check_n: cfg.check_n,
                engines: (engines.len() > 1 && run_these.len() < engines.len())
                    .then_some(run_these),
                updates: None,
            };
            let recs = match harness::run(spec, program, &job) {
                Ok(r) => r,
                Err(e) => {
                    ctx.results
                        .notes
                        .push(format!("ERROR {} {scenario} {size}: {e}", A::LABEL));
                    continue;
                }
            };
            // An engine that refused routes does not hold the table: its answers and times are
            // not comparable (rte_fib6 runs out of tbl8 groups for a million /128s).
            let mut left_out: Vec<String> = Vec::new();
            for r in recs
                .iter()
                .filter(|r| r.metric == "failed_routes" && r.value > 0.0)
            {
                ctx.results.notes.push(format!(
                    "{} refused {} of {size} routes ({} {scenario}): left out of this point{}",
                    r.engine,
                    r.value,
                    A::LABEL,
                    r.note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ));
                left_out.push(r.engine.clone());
            }
            let mut checked: Vec<String> = Vec::new();
            for r in recs {
                if !self.wanted(cfg, &r.engine) || left_out.contains(&r.engine) {
                    continue;
                }
                if let Some(why) = &r.skip {
                    let note = format!("{} skipped ({}): {why}", r.engine, A::LABEL);
                    if !ctx.results.notes.contains(&note) {
                        ctx.results.notes.push(note);
                    }
                    continue;
                }
                if !checked.contains(&r.engine) {
                    checked.push(r.engine.clone());
                    let agreed = self.loads.iter().try_for_each(|w| {
                        let got = harness::read_check(&out, &r.engine, w.name)?;
                        compare::<A>(&r.engine, scenario, size, w, &got)
                    });
                    if let Err(e) = agreed {
                        ctx.disagreements.push(e);
                        left_out.push(r.engine.clone());
                        continue;
                    }
                }
                let s = Summary {
                    value: r.value,
                    spread: r.spread,
                    runs: r.runs.max(1),
                };
                let workload = r.workload.as_deref().unwrap_or("");
                let metric = match (r.metric.as_str(), workload) {
                    ("build", _) => "insert_time".to_string(),
                    ("memory", _) => {
                        self.record(
                            ctx.results,
                            &r.engine,
                            "memory_total",
                            s,
                            "bytes",
                            r.note.clone(),
                        );
                        let per = Summary {
                            value: r.value / size as f64,
                            spread: r.spread / size as f64,
                            runs: s.runs,
                        };
                        self.record(
                            ctx.results,
                            &r.engine,
                            "memory",
                            per,
                            "bytes/route",
                            r.note.clone(),
                        );
                        continue;
                    }
                    // The study set measures lookup time only, as the study did.
                    ("latency", "study") => continue,
                    (kind @ ("lookup" | "lookup_bulk" | "latency"), w) => timing_metric(kind, w),
                    (other, _) => other.to_string(),
                };
                self.record(ctx.results, &r.engine, &metric, s, &r.unit, r.note.clone());
            }
        }
        Ok(())
    }

    /// What each build took feeds the budget of the next, larger point.
    fn remember_builds(&self, ctx: &mut Ctx) {
        for r in ctx.results.records.iter().filter(|r| {
            r.family == A::LABEL
                && r.scenario == self.scenario
                && r.size == self.size
                && r.metric == "insert_time"
        }) {
            ctx.history
                .entry((r.engine.clone(), A::LABEL, self.scenario.to_string()))
                .or_default()
                .push((self.size, r.value));
        }
    }
}

/// The record name of a timing of `workload`: `lookup_time[_bulk]` for the study set (the
/// study's own term), `w1_lookup`, `w1_lookup_bulk`, `w1_latency` ... for the others.
fn timing_metric(kind: &str, workload: &str) -> String {
    match (kind, workload) {
        ("lookup", "study") => "lookup_time".into(),
        ("lookup_bulk", "study") => "lookup_time_bulk".into(),
        (kind, w) => format!("{w}_{kind}"),
    }
}

/// Seconds a build took, and heap bytes it retained when they can be counted.
type Built = (f64, Option<usize>);

/// Builds `engine` from `routes`.
fn build<A: StudyFamily>(engine: &mut dyn Engine<A>, routes: &[BenchRoute<A::K>]) -> Built {
    let before = alloc::live_bytes();
    let start = Instant::now();
    engine.build(routes);
    let secs = start.elapsed().as_secs_f64();
    let after = alloc::live_bytes();
    (
        secs,
        alloc::is_counting().then(|| after.saturating_sub(before)),
    )
}

/// One warm-up, then `runs` timed repetitions.
fn repeat(runs: usize, mut f: impl FnMut() -> f64) -> Summary {
    f();
    let xs: Vec<f64> = (0..runs.max(1)).map(|_| f()).collect();
    Summary::of(&xs)
}

/// Fails the run when an engine's answers differ from the reference's.
fn compare<A: StudyFamily>(
    engine: &str,
    scenario: &str,
    size: usize,
    w: &Workload<A::K>,
    got: &[u32],
) -> Result<(), String> {
    let show = |v: u32| {
        if v == MISS {
            "none".to_string()
        } else {
            v.to_string()
        }
    };
    if got.len() != w.expected.len() {
        return Err(format!(
            "{engine} disagrees with {REFERENCE} on {} {scenario} {size} {}: {} answers, expected {}",
            A::LABEL,
            w.name,
            got.len(),
            w.expected.len()
        ));
    }
    let wrong: Vec<usize> = (0..got.len())
        .filter(|&i| got[i] != w.expected[i])
        .collect();
    if let Some(&i) = wrong.first() {
        return Err(format!(
            "{engine} disagrees with {REFERENCE} on {} {scenario} {size} {}: {} of {} answers differ; first at #{i}, {}: {engine} says next hop {}, {REFERENCE} says {}",
            A::LABEL,
            w.name,
            wrong.len(),
            got.len(),
            A::from_bits(w.addrs[i]),
            show(got[i]),
            show(w.expected[i])
        ));
    }
    Ok(())
}
