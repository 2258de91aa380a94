//! The peers' side of the update benchmark: harnesses that time route changes
//! (`HarnessSpec::updates`: DPDK's) delete and put back random routes of the same table, with a
//! reader on the other core, as fibre's engines do in [`crate::updates`]. Their records join
//! fibre's under the scenario `updates`, so the report's update table has ratios to peers
//! measured in the same run. Each harness then answers lookups of every reader key, which must
//! be the reference's: every route it deleted is back. Before that it deletes a few of the routes
//! again, one at a time, and answers for the first address of each while it is gone, which must
//! be the reference's without that route: a delete that leaves its route in place is caught.
use super::Ctx;
use crate::engine::fibre_fib::FibreFib;
use crate::engine::harness::{self, HarnessRecord, HarnessRun, UpdateJob};
use crate::engine::{Engine, MISS, REFERENCE};
use crate::report::Record;
use crate::scenario::{route_line, route_prefix, BenchRoute, StudyFamily};
use fibre::fib::Reference;
use std::path::Path;

/// Most seconds of changes per peer engine, so that a slow engine cannot hold up the run.
const PEER_UPDATE_SECS: u64 = 30;

/// Runs every update-capable harness on `routes` (the table fibre's update benchmark loaded),
/// its reader looking up `keys`.
pub(super) fn peer_updates<A: StudyFamily>(
    ctx: &mut Ctx,
    routes: &[BenchRoute<A::K>],
    keys: &[A::K],
    reader_cpu: Option<usize>,
) -> Result<(), String> {
    let cfg = ctx.cfg;
    let size = routes.len();
    let harnesses: Vec<_> = ctx.harnesses.iter().filter(|(s, _)| s.updates).collect();
    if harnesses.is_empty() {
        return Ok(());
    }
    let dir = cfg
        .out
        .join("work")
        .join(A::LABEL)
        .join("updates")
        .join(size.to_string());
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let routes_file = dir.join("routes.txt");
    let text: String = routes.iter().map(|r| route_line::<A>(r) + "\n").collect();
    std::fs::write(&routes_file, text).map_err(|e| format!("{}: {e}", routes_file.display()))?;
    let keys_file = dir.join("reader.bin");
    crate::workload::write_addrs(&keys_file, keys)
        .map_err(|e| format!("{}: {e}", keys_file.display()))?;
    let workloads = [("reader".to_string(), keys_file)];
    let mut reference = FibreFib::<A, Reference<A>>::new();
    reference.build(routes);
    let expected: Vec<u32> = keys.iter().map(|&a| reference.lookup(a)).collect();
    for (spec, program) in harnesses {
        let engines = if A::WIDTH == 32 {
            spec.engines_v4
        } else {
            spec.engines_v6
        };
        let run_these = within_budget::<A>(ctx, engines, size);
        if run_these.is_empty() {
            continue;
        }
        // A check file left by an earlier run would stand in for one this run failed to write.
        for engine in &run_these {
            for check in ["deleted", "reader"] {
                let stale = harness::check_path(&dir, engine, check);
                match std::fs::remove_file(&stale) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(format!("{}: {e}", stale.display()));
                    }
                    _ => {}
                }
            }
        }
        let job = HarnessRun {
            family: if A::WIDTH == 32 { 4 } else { 6 },
            routes: &routes_file,
            workloads: &workloads,
            out: &dir,
            runs: 1,
            bulk: cfg.bulk,
            check_n: keys.len(),
            engines: (run_these.len() < engines.len()).then_some(run_these),
            updates: Some(UpdateJob {
                count: cfg.updates,
                seed: cfg.seed,
                reader_cpu,
                secs: PEER_UPDATE_SECS,
            }),
        };
        let recs = match harness::run(spec, program, &job) {
            Ok(r) => r,
            Err(e) => {
                note_once(ctx, format!("ERROR {} updates {size}: {e}", A::LABEL));
                continue;
            }
        };
        let mut left_out: Vec<String> = Vec::new();
        for r in &recs {
            if left_out.contains(&r.engine) || r.metric != "update_median" {
                continue;
            }
            if let Err(why) = sound::<A>(r, &recs, &dir, &expected, routes) {
                ctx.disagreements.push(why);
                left_out.push(r.engine.clone());
            }
        }
        for r in recs {
            if let Some(why) = &r.skip {
                note_once(
                    ctx,
                    format!("{} skipped ({} updates): {why}", r.engine, A::LABEL),
                );
                continue;
            }
            // The build and memory records of this run repeat the lookup points' own.
            let timed = r.metric.starts_with("update_") && r.metric != "update_failed_calls";
            if !timed || left_out.contains(&r.engine) {
                continue;
            }
            ctx.results.records.push(Record {
                engine: r.engine,
                family: A::LABEL.to_string(),
                scenario: "updates".to_string(),
                size,
                metric: r.metric,
                value: r.value,
                unit: r.unit,
                runs: r.runs.max(1),
                spread: r.spread,
                note: r.note,
            });
        }
    }
    Ok(())
}

/// The engines of `engines` the run asked for whose build of `size` routes stays within the
/// budget: an engine whose full-view build took longer, or would by a quadratic projection
/// from its largest smaller one, is left out with a note. rte_lpm's build of the IPv4 view
/// took 165-176 s where its build of 100,000 routes took 1.4 s (issue 15's nineteenth round):
/// the lookup points' projection (`over_budget`), fitted to the smaller builds, let it in.
fn within_budget<A: StudyFamily>(
    ctx: &mut Ctx,
    engines: &[&'static str],
    size: usize,
) -> Vec<&'static str> {
    let cfg = ctx.cfg;
    let mut run_these = Vec::new();
    for &e in engines {
        if !cfg
            .engines
            .as_ref()
            .is_none_or(|l| l.iter().any(|x| x == e))
        {
            continue;
        }
        let built = ctx
            .history
            .get(&(e.to_string(), A::LABEL, "full-view".to_string()))
            .and_then(|b| b.last());
        let why = match built {
            Some(&(n, secs)) if n >= size && secs > cfg.max_build_secs => Some(format!(
                "{e} left out of {} updates: its build of {n} routes took {secs:.0} s \
                 (budget {:.0} s)",
                A::LABEL,
                cfg.max_build_secs
            )),
            Some(&(n, secs)) if n < size => {
                let projected = secs * (size as f64 / n.max(1) as f64).powi(2);
                (projected > cfg.max_build_secs).then(|| {
                    format!(
                        "{e} left out of {} updates: its build of {n} routes took {secs:.1} s, \
                         {projected:.0} s at {size} routes projected quadratically (budget \
                         {:.0} s)",
                        A::LABEL,
                        cfg.max_build_secs
                    )
                })
            }
            _ => None,
        };
        match why {
            Some(why) => note_once(ctx, why),
            None => run_these.push(e),
        }
    }
    run_these
}

/// Whether the engine of `median` (its `update_median` record) can be reported: no update call
/// refused, the reference's answers while routes were deleted (see [`deleted_answers_hold`]), and
/// after the changes the reference's answer for every reader key.
fn sound<A: StudyFamily>(
    median: &HarnessRecord,
    recs: &[HarnessRecord],
    dir: &Path,
    expected: &[u32],
    routes: &[BenchRoute<A::K>],
) -> Result<(), String> {
    let engine = &median.engine;
    let size = routes.len();
    let failed = recs
        .iter()
        .find(|r| &r.engine == engine && r.metric == "update_failed_calls")
        .map_or(0.0, |r| r.value);
    if failed > 0.0 {
        return Err(format!(
            "{engine} refused {failed} update calls on {} updates {size}: {}",
            A::LABEL,
            median.note.as_deref().unwrap_or("")
        ));
    }
    deleted_answers_hold::<A>(dir, engine, routes)?;
    let got = harness::read_check(dir, engine, "reader")?;
    let show = |v: Option<&u32>| v.map_or("nothing".to_string(), |&v| hop(v));
    match (0..expected.len().max(got.len())).find(|&i| got.get(i) != expected.get(i)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{engine} disagrees with {REFERENCE} on {} updates {size} after its changes: at \
             reader key #{i} it says next hop {}, {REFERENCE} says {}",
            A::LABEL,
            show(got.get(i)),
            show(expected.get(i))
        )),
    }
}

/// Reads `DIR/ENGINE.deleted.check` (PROTOCOL.md): lines `ROUTE ANSWER`, the harness's answer for
/// the first address of route `ROUTE` (its index in `routes`) while that route alone was deleted.
/// Each must be the longest other route containing the address (a naive scan: the file holds a few
/// dozen lines). At least one line is required, so that a harness that stopped writing the file
/// is caught too.
fn deleted_answers_hold<A: StudyFamily>(
    dir: &Path,
    engine: &str,
    routes: &[BenchRoute<A::K>],
) -> Result<(), String> {
    let path = harness::check_path(dir, engine, "deleted");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = 0;
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("{}:{}: not `ROUTE ANSWER`: {line:?}", path.display(), n + 1);
        let (route, answer) = line.split_once(' ').ok_or_else(bad)?;
        let route: usize = route.parse().map_err(|_| bad())?;
        let answer = match answer.trim().parse::<i64>().map_err(|_| bad())? {
            -1 => MISS,
            v if (0..i64::from(MISS)).contains(&v) => v as u32,
            _ => return Err(bad()),
        };
        let deleted = routes.get(route).ok_or_else(bad)?;
        // The first address of the prefix as routes.txt spells it (masked to its length).
        let addr = route_prefix::<A>(deleted).addr();
        let want = routes
            .iter()
            .enumerate()
            .filter(|&(i, r)| i != route && route_prefix::<A>(r).contains(addr))
            .max_by_key(|(_, r)| r.len)
            .map_or(MISS, |(_, r)| u32::from(r.nh));
        if answer != want {
            return Err(format!(
                "{engine} disagrees with the table on {} updates {} while {} was deleted: for \
                 {addr} it says next hop {}, the longest other route of the table says {}",
                A::LABEL,
                routes.len(),
                route_prefix::<A>(deleted),
                hop(answer),
                hop(want)
            ));
        }
        lines += 1;
    }
    if lines == 0 {
        return Err(format!("{}: no answers", path.display()));
    }
    Ok(())
}

/// A next hop as the disagreement messages spell it.
fn hop(v: u32) -> String {
    if v == MISS {
        "none".to_string()
    } else {
        v.to_string()
    }
}

/// Adds `note` unless the run has it already (each repeat would say it again).
fn note_once(ctx: &mut Ctx, note: String) {
    if !ctx.results.notes.contains(&note) {
        ctx.results.notes.push(note);
    }
}
