//! The update benchmark's point: fibre's router and bare FIB (`crate::updates`) and the peers
//! that time changes (`peer_updates`) on the same full view, with a reader on the other core.
use super::peer_updates::peer_updates;
use super::{repeated, Ctx};
use crate::host::online_cpus;
use crate::report::Record;
use crate::scenario::{generate, BenchRoute, PickView, ScenarioKind, StudyFamily};
use crate::workload;

/// The update benchmark on the full view (see [`crate::updates`]), repeated as the lookup points
/// are (`--repeat K`), fibre and the peers taking turns going first.
pub(super) fn update_point<A: StudyFamily + PickView>(ctx: &mut Ctx) -> Result<(), String> {
    let whole = A::view(ctx.views).prefixes.len();
    let size = ctx.cfg.update_table.map_or(whole, |n| n.min(whole));
    let Some((routes, _)) = generate::<A>(&ScenarioKind::FullView, size, ctx.views, ctx.cfg.seed)
    else {
        ctx.progress.start(format!("{} updates", A::LABEL));
        ctx.progress.finish(Some("skipped, no full view"));
        return Ok(());
    };
    ctx.progress.start(format!(
        "{} updates ({} changes)",
        A::LABEL,
        2 * ctx.cfg.updates
    ));
    let keys = workload::inside_prefixes::<A>(&routes, 1 << 16, ctx.cfg.seed);
    // The reader runs on another core than the writer (pinned to the last one).
    let n = online_cpus();
    let writer = ctx.cfg.cpu.unwrap_or(n - 1);
    let reader_cpu = (n > 1).then_some(if writer == 0 { 1 } else { 0 });
    repeated(ctx, A::LABEL, "updates", routes.len(), |ctx, repeat| {
        if repeat % 2 == 0 {
            fibre_updates::<A>(ctx, &routes, &keys, reader_cpu)?;
            peer_updates::<A>(ctx, &routes, &keys, reader_cpu)
        } else {
            peer_updates::<A>(ctx, &routes, &keys, reader_cpu)?;
            fibre_updates::<A>(ctx, &routes, &keys, reader_cpu)
        }
    })?;
    ctx.progress.finish(None);
    Ok(())
}

/// One run of fibre's update benchmark: the router's and the bare FIB's records.
fn fibre_updates<A: StudyFamily>(
    ctx: &mut Ctx,
    routes: &[BenchRoute<A::K>],
    keys: &[A::K],
    reader_cpu: Option<usize>,
) -> Result<(), String> {
    let size = routes.len();
    let run = crate::updates::run::<A>(routes, keys, ctx.cfg.updates, ctx.cfg.seed, reader_cpu)?;
    let fib_name = crate::engine::fibre_fib::engine_name(
        <fibre::fib::Poptrie<A> as fibre::fib::LpmAlgorithm<A>>::NAME,
    );
    let note = |what: &str, reader_on: &str| {
        Some(format!(
            "{what}; {} random routes deleted then put back, one change and one publication \
             each, a reader doing bulk lookups on {reader_on}",
            ctx.cfg.updates,
        ))
    };
    let mut rows = Vec::new();
    for (engine, t, what) in [
        (
            "fibre-router",
            &run.router,
            "Router::change: RIB + FIBs of main and local+main",
        ),
        (fib_name, &run.fib, "bare FIB: Fib::set + Fib::publish"),
    ] {
        let all = t.all();
        for (metric, v) in [
            ("update_median", crate::stats::median(&all)),
            ("update_p999", crate::stats::quantile(&all, 0.999)),
            ("update_delete_median", crate::stats::median(&t.delete)),
            ("update_insert_median", crate::stats::median(&t.insert)),
            ("update_reader_lookup", t.reader_ns),
        ] {
            let mut n = note(what, &t.reader_on);
            if metric == "update_p999" && !t.slowest.is_empty() {
                n = n.map(|n| format!("{n}; slowest: {}", t.slowest_note()));
            }
            rows.push((engine.to_string(), metric, v, n));
        }
    }
    rows.push((
        "fibre-router".to_string(),
        "update_p999_floor",
        run.router_p999_floor,
        Some(
            "99.9th percentile of fixed arithmetic (in L1) as long as the router's median \
             change, timed as often, same thread, reader running: what the machine adds to any \
             task that long"
                .into(),
        ),
    ));
    rows.push((
        "fibre-router".to_string(),
        "router_load",
        run.router_load,
        Some("the whole table in one change set: RIB inserts, then the FIBs built".into()),
    ));
    for (metric, v, how) in [
        (
            "route_get_fib",
            run.route_get_fib,
            "plain flows: one FIB probe, then the id resolved",
        ),
        (
            "route_get_rib",
            run.route_get_rib,
            "FIBs off: the RIB walk non-plain flows take",
        ),
    ] {
        rows.push((
            "fibre-router".to_string(),
            metric,
            v,
            Some(format!("Router::route_get, W1 addresses; {how}")),
        ));
    }
    for (engine, metric, value, note) in rows {
        let unit = crate::report::unit_of(metric);
        ctx.results.records.push(Record {
            engine,
            family: A::LABEL.to_string(),
            scenario: "updates".to_string(),
            size,
            metric: metric.to_string(),
            value,
            unit: unit.to_string(),
            runs: 1,
            spread: 0.0,
            note,
        });
    }
    Ok(())
}
