//! Repeats (`--repeat K`): each point is measured K times with the engines interleaved (the
//! in-process engines and the harnesses take turns going first), and fibre is judged by the
//! ratio to the best peer *of the same repeat*. A neighbour that slows the machine for a while
//! then slows both sides of a ratio, and a result that holds in one process but not the next
//! shows as a wide range rather than hiding in a median of medians.
use super::{Record, Results};
use crate::stats::{mad, median};
use serde::{Deserialize, Serialize};

/// The cache probe's size (`host::dependent_load_ns`): a little more than fibre's largest FIB
/// (the IPv4 view's 3.4 MB), so a fast probe means the FIB could stay cached.
pub const PROBE_BYTES: usize = 4 << 20;
/// Loads the probe times.
pub const PROBE_STEPS: usize = 1 << 20;

/// The records one repeat of a point produced, and how busy the rest of the machine was.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Repeat {
    pub family: String,
    pub scenario: String,
    pub size: usize,
    /// 0-based.
    pub repeat: usize,
    /// Cores' worth of CPU that other processes used during the repeat.
    pub others_busy: f64,
    /// Cores' worth of CPU the hypervisor stole during the repeat.
    pub steal: f64,
    /// A dependent load over [`PROBE_BYTES`], ns, probed as the repeat began: far below the
    /// meta's memory probe where the process had its share of the L3 (17-21 ns against 130-160
    /// on the machine of issue 15), near it where neighbours had taken it.
    #[serde(default)]
    pub probe_ns: f64,
    pub records: Vec<Record>,
}

/// A fibre engine's time against the best peer of a class, repeat by repeat.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Ratio {
    pub engine: String,
    pub family: String,
    pub scenario: String,
    pub size: usize,
    pub metric: String,
    /// "dpdk" (the best DPDK engine of the repeat) or "peer" (the best engine that is not
    /// fibre's).
    pub against: String,
    /// fibre's value over the best peer's, per repeat.
    pub per_repeat: Vec<f64>,
    /// The peer that was best in each repeat.
    pub peers: Vec<String>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// The worst repeat over the median (the goal's consistency test: at most 1.5).
    pub worst_over_median: f64,
}

/// Timing metrics that ratios are taken of.
const TIMED: &[&str] = &[
    "w1_lookup",
    "w1_lookup_bulk",
    "w1_latency",
    "w2_lookup",
    "w2_lookup_bulk",
    "w2_latency",
    "lookup_time",
    "lookup_time_bulk",
    // The update benchmark's, against the peers that time changes (DPDK's).
    "update_median",
    "update_delete_median",
    "update_insert_median",
    "update_p999",
];

fn is_fibre(engine: &str) -> bool {
    engine.starts_with("fibre-")
}

fn in_class(engine: &str, class: &str) -> bool {
    match class {
        "dpdk" => engine.starts_with("dpdk-"),
        _ => !is_fibre(engine) && engine != "study-set" && engine != crate::engine::REFERENCE,
    }
}

/// Folds the repeats of one point into `results`: one record per engine and metric (the median
/// over repeats; the spread is the MAD over repeats when there are several), the repeats
/// themselves, and the ratios of fibre's engines to the best peers.
pub fn fold(results: &mut Results, repeats: Vec<Repeat>) {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in repeats.iter().flat_map(|r| &r.records) {
        let k = (r.engine.clone(), r.metric.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (engine, metric) in &keys {
        let found: Vec<&Record> = repeats
            .iter()
            .filter_map(|rep| {
                rep.records
                    .iter()
                    .find(|r| &r.engine == engine && &r.metric == metric)
            })
            .collect();
        let values: Vec<f64> = found.iter().map(|r| r.value).collect();
        let mut rec = found[0].clone();
        rec.value = median(&values);
        if found.len() > 1 {
            rec.spread = mad(&values);
            rec.runs = found.iter().map(|r| r.runs).sum();
        }
        results.records.push(rec);
    }
    if let Some(first) = repeats.first() {
        for metric in TIMED {
            for against in ["dpdk", "peer"] {
                let engines: Vec<&String> = keys
                    .iter()
                    .filter(|(e, m)| m == metric && is_fibre(e))
                    .map(|(e, _)| e)
                    .collect();
                for engine in engines {
                    if let Some(r) = ratio(&repeats, engine, metric, against) {
                        // Where the best peer was DPDK's in every repeat, the row would repeat
                        // the one against DPDK.
                        let same = results.ratios.iter().any(|d| {
                            d.engine == r.engine
                                && d.metric == r.metric
                                && d.family == first.family
                                && d.scenario == first.scenario
                                && d.size == first.size
                                && d.peers == r.peers
                        });
                        if same {
                            continue;
                        }
                        results.ratios.push(Ratio {
                            family: first.family.clone(),
                            scenario: first.scenario.clone(),
                            size: first.size,
                            ..r
                        });
                    }
                }
            }
        }
    }
    results.repeats.extend(repeats);
}

/// `engine`'s ratio to the best of `against` in each repeat where both were measured.
fn ratio(repeats: &[Repeat], engine: &str, metric: &str, against: &str) -> Option<Ratio> {
    let mut per_repeat = Vec::new();
    let mut peers = Vec::new();
    for rep in repeats {
        let at = |e: &str| {
            rep.records
                .iter()
                .find(|r| r.engine == e && r.metric == metric && r.value > 0.0)
                .map(|r| r.value)
        };
        let best = rep
            .records
            .iter()
            .filter(|r| r.metric == metric && r.value > 0.0 && in_class(&r.engine, against))
            .min_by(|a, b| a.value.total_cmp(&b.value));
        if let (Some(v), Some(best)) = (at(engine), best) {
            per_repeat.push(v / best.value);
            peers.push(best.engine.clone());
        }
    }
    if per_repeat.is_empty() {
        return None;
    }
    let m = median(&per_repeat);
    let min = per_repeat.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per_repeat.iter().copied().fold(0.0, f64::max);
    Some(Ratio {
        engine: engine.to_string(),
        metric: metric.to_string(),
        against: against.to_string(),
        per_repeat,
        peers,
        median: m,
        min,
        max,
        worst_over_median: if m > 0.0 { max / m } else { f64::NAN },
        ..Default::default()
    })
}

/// The ratios as a Markdown table, one row per engine, metric and peer class (the row against
/// the best peer only where that was not DPDK's best).
pub fn to_markdown(ratios: &[Ratio]) -> String {
    let mut s = String::from(
        "ratios to the best peer of the same repeat (fibre / peer; < 1: fibre faster)\n\n\
         | family | engine | metric | against | median | range | worst / median | repeats |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in ratios {
        s.push_str(&format!(
            "| {} | {} | {} | best {} | {:.2}× | {:.2}× … {:.2}× | {:.2} | {} |\n",
            r.family,
            r.engine,
            r.metric,
            r.against,
            r.median,
            r.min,
            r.max,
            r.worst_over_median,
            r.per_repeat.len()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::rec;

    fn rep(i: usize, records: Vec<Record>) -> Repeat {
        Repeat {
            family: "ipv4".into(),
            scenario: "full-view".into(),
            size: 1000,
            repeat: i,
            records,
            ..Default::default()
        }
    }

    #[test]
    fn ratios_are_taken_within_each_repeat() {
        // Repeat 0: the machine is fast for everyone; repeat 1: slow for everyone, and the
        // other DPDK engine is the best one there.
        let reps = vec![
            rep(
                0,
                vec![
                    rec("fibre-fib-x", "w1_lookup", 4.0),
                    rec("dpdk-a", "w1_lookup", 8.0),
                    rec("dpdk-b", "w1_lookup", 10.0),
                    rec("bart", "w1_lookup", 2.0),
                ],
            ),
            rep(
                1,
                vec![
                    rec("fibre-fib-x", "w1_lookup", 12.0),
                    rec("dpdk-a", "w1_lookup", 30.0),
                    rec("dpdk-b", "w1_lookup", 20.0),
                ],
            ),
            rep(2, vec![rec("fibre-fib-x", "w1_lookup", 5.0)]),
        ];
        let mut results = Results::default();
        fold(&mut results, reps);
        let dpdk = results.ratios.iter().find(|r| r.against == "dpdk").unwrap();
        assert_eq!(dpdk.per_repeat, vec![0.5, 0.6]);
        assert_eq!(dpdk.peers, vec!["dpdk-a", "dpdk-b"]);
        assert!((dpdk.median - 0.55).abs() < 1e-12);
        assert!((dpdk.worst_over_median - 0.6 / 0.55).abs() < 1e-12);
        let peer = results.ratios.iter().find(|r| r.against == "peer").unwrap();
        assert_eq!(peer.per_repeat, vec![2.0, 0.6]);
        // Combined records: the median over repeats, the MAD over repeats as spread.
        let fibre = results
            .records
            .iter()
            .find(|r| r.engine == "fibre-fib-x")
            .unwrap();
        assert_eq!(fibre.value, 5.0);
        assert_eq!(fibre.spread, 1.0);
        assert_eq!(fibre.runs, 9);
        let bart = results.records.iter().find(|r| r.engine == "bart").unwrap();
        // One repeat only: its own spread stands.
        assert_eq!((bart.value, bart.spread, bart.runs), (2.0, 0.1, 3));
        assert_eq!(results.repeats.len(), 3);
        assert!(to_markdown(&results.ratios).contains("| 0.55× | 0.50× … 0.60× | 1.09 | 2 |"));
    }

    #[test]
    fn no_second_row_where_the_best_peer_was_dpdk() {
        let reps = vec![rep(
            0,
            vec![
                rec("fibre-fib-x", "w1_latency", 3.0),
                rec("dpdk-a", "w1_latency", 6.0),
                rec("bart", "w1_latency", 9.0),
            ],
        )];
        let mut results = Results::default();
        fold(&mut results, reps);
        assert_eq!(results.ratios.len(), 1);
        assert_eq!(results.ratios[0].against, "dpdk");
        assert_eq!(results.ratios[0].per_repeat, vec![0.5]);
    }
}
