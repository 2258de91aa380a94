//! Results: one [`Record`] per engine × family × scenario × size × metric, written as JSON and
//! CSV, drawn as SVG plots in the study's style, and put together in an HTML report with a
//! summary table of ratios against the best peer.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub mod html;
pub mod repeats;
pub mod svg;

use repeats::{Ratio, Repeat};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub engine: String,
    pub family: String,
    pub scenario: String,
    pub size: usize,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub runs: usize,
    pub spread: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Everything a run produced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Results {
    /// Machine, configuration and data source.
    pub meta: BTreeMap<String, String>,
    /// Engines skipped and why, data caveats.
    pub notes: Vec<String>,
    pub records: Vec<Record>,
    /// Each repeat's own records (`--repeat K`), with the load of the machine during it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<Repeat>,
    /// fibre's engines against the best peers, repeat by repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ratios: Vec<Ratio>,
}

/// Metrics, their units and how the report names them. Lower is better for all of them but
/// `replay_rate`.
pub const METRICS: &[(&str, &str, &str)] = &[
    ("lookup_time", "ns", "lookup time (study set, hits only)"),
    ("lookup_time_bulk", "ns", "lookup time, bulk API"),
    ("insert_time", "s", "insertion time, whole table"),
    ("memory", "bytes/route", "memory per route"),
    (
        "memory_structure",
        "bytes/route",
        "memory per route, lookup structure only",
    ),
    ("depth_max", "nodes", "tree depth, max"),
    ("depth_mean", "nodes", "tree depth, mean"),
    ("w1_lookup", "ns", "W1 throughput, single lookups"),
    ("w1_lookup_bulk", "ns", "W1 throughput, bulk API"),
    ("w1_latency", "ns", "W1 dependent-chain latency"),
    ("w2_lookup", "ns", "W2 throughput, single lookups"),
    ("w2_lookup_bulk", "ns", "W2 throughput, bulk API"),
    ("w2_latency", "ns", "W2 dependent-chain latency"),
    ("update_median", "ns", "update, median per change"),
    ("update_p999", "ns", "update, 99.9th percentile per change"),
    ("update_delete_median", "ns", "update, median per delete"),
    ("update_insert_median", "ns", "update, median per insert"),
    (
        "update_reader_lookup",
        "ns",
        "reader lookup time during updates",
    ),
    (
        "update_p999_floor",
        "ns",
        "fixed work as long as the median change, 99.9th percentile: the machine's floor",
    ),
    ("router_load", "s", "whole table into a router"),
    (
        "replay_rate",
        "updates/s",
        "BGP updates replayed per second (higher is better)",
    ),
    ("replay_median", "ns", "replayed update, median"),
    ("replay_p999", "ns", "replayed update, 99.9th percentile"),
    ("replay_max", "ns", "replayed update, slowest"),
    (
        "replay_reader_lookup",
        "ns",
        "reader lookup time during the replay",
    ),
    ("route_get_fib", "ns", "route get through the FIB"),
    (
        "route_get_rib",
        "ns",
        "route get through the RIB (fallback)",
    ),
];

/// The unit [`METRICS`] gives `metric` (empty for one it does not list).
pub fn unit_of(metric: &str) -> &'static str {
    METRICS.iter().find(|m| m.0 == metric).map_or("", |m| m.1)
}

impl Results {
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).expect("results serialise");
        std::fs::write(path, text + "\n")
    }

    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        let mut out =
            String::from("engine,family,scenario,size,metric,value,unit,runs,spread,note\n");
        for r in &self.records {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{}",
                csv_field(&r.engine),
                r.family,
                csv_field(&r.scenario),
                r.size,
                r.metric,
                r.value,
                r.unit,
                r.runs,
                r.spread,
                csv_field(r.note.as_deref().unwrap_or(""))
            );
        }
        std::fs::write(path, out)
    }

    /// The summary: for each family, the W1/W2 point (the largest full view of the run), then
    /// the update benchmark; one row per engine, each cell with its ratio to the best engine of
    /// that column.
    pub fn summary(&self) -> Vec<SummaryTable> {
        const LOOKUPS: &[&str] = &[
            "w1_lookup",
            "w1_lookup_bulk",
            "w2_lookup",
            "w2_lookup_bulk",
            "w1_latency",
            "w2_latency",
            "lookup_time",
            "insert_time",
            "memory",
        ];
        const UPDATES: &[&str] = &[
            "update_median",
            "update_p999",
            "update_p999_floor",
            "update_delete_median",
            "update_insert_median",
            "update_reader_lookup",
            "router_load",
            "route_get_fib",
            "route_get_rib",
        ];
        const REPLAY: &[&str] = &[
            "replay_rate",
            "replay_median",
            "replay_p999",
            "replay_max",
            "replay_reader_lookup",
        ];
        let mut tables = Vec::new();
        for family in ["ipv4", "ipv6"] {
            let largest = |scenario: &str, metric: &str| {
                self.records
                    .iter()
                    .filter(|r| r.family == family && r.scenario == scenario && r.metric == metric)
                    .map(|r| r.size)
                    .max()
            };
            if let Some(size) = largest("full-view", "w1_lookup") {
                let title = format!(
                    "{family} full view, {size} routes (ns per lookup; s; bytes/route; \
                     × = ratio to the best)"
                );
                tables.extend(self.table(title, family, "full-view", size, LOOKUPS));
            }
            if let Some(size) = largest("replay", "replay_median") {
                let title = format!(
                    "{family} BGP updates replayed on the full view, {size} routes (updates/s; ns \
                     per update, a reader on the other core)"
                );
                tables.extend(self.table(title, family, "replay", size, REPLAY));
            }
            if let Some(size) = largest("updates", "update_median") {
                let title = format!(
                    "{family} updates on the full view, {size} routes (ns per change, a reader \
                     on the other core; s; ns per route get; × = ratio to the best)"
                );
                tables.extend(self.table(title, family, "updates", size, UPDATES));
            }
        }
        tables
    }

    /// The records of one point as a table of `cols`; `None` when no engine has any.
    fn table(
        &self,
        title: String,
        family: &str,
        scenario: &str,
        size: usize,
        cols: &[&str],
    ) -> Option<SummaryTable> {
        let at = |r: &&Record| r.family == family && r.scenario == scenario && r.size == size;
        let mut engines: Vec<String> = Vec::new();
        for r in self.records.iter().filter(at) {
            if !engines.contains(&r.engine) {
                engines.push(r.engine.clone());
            }
        }
        let value = |e: &str, m: &str| {
            self.records
                .iter()
                .filter(at)
                .find(|r| r.engine == e && r.metric == m)
                .map(|r| r.value)
        };
        let best: Vec<Option<f64>> = cols
            .iter()
            .map(|m| {
                engines
                    .iter()
                    .filter_map(|e| value(e, m))
                    .filter(|v| *v > 0.0)
                    .min_by(f64::total_cmp)
            })
            .collect();
        let rows: Vec<SummaryRow> = engines
            .iter()
            .filter(|e| cols.iter().any(|m| value(e, m).is_some()))
            .map(|e| SummaryRow {
                engine: e.clone(),
                cells: cols
                    .iter()
                    .zip(&best)
                    .map(|(m, b)| value(e, m).map(|v| (v, b.map_or(1.0, |b| v / b))))
                    .collect(),
            })
            .collect();
        (!rows.is_empty()).then(|| SummaryTable {
            title,
            family: family.to_string(),
            size,
            columns: cols.iter().map(|c| c.to_string()).collect(),
            rows,
        })
    }
}

pub struct SummaryTable {
    /// What the table shows, with its units.
    pub title: String,
    pub family: String,
    pub size: usize,
    pub columns: Vec<String>,
    pub rows: Vec<SummaryRow>,
}

pub struct SummaryRow {
    pub engine: String,
    /// (value, ratio to the column's best)
    pub cells: Vec<Option<(f64, f64)>>,
}

impl SummaryTable {
    /// A Markdown table (what the terminal and closing notes show).
    pub fn to_markdown(&self) -> String {
        let mut s = format!("{}\n\n| engine |", self.title);
        for c in &self.columns {
            let _ = write!(s, " {c} |");
        }
        s.push_str("\n|---|");
        for _ in &self.columns {
            s.push_str("---|");
        }
        s.push('\n');
        for row in &self.rows {
            let _ = write!(s, "| {} |", row.engine);
            for cell in &row.cells {
                match cell {
                    Some((v, r)) => {
                        let _ = write!(s, " {} ({r:.2}×) |", fmt_value(*v));
                    }
                    None => s.push_str(" – |"),
                }
            }
            s.push('\n');
        }
        s
    }
}

/// Three significant digits, no exponent for the ranges the bench produces.
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.2e}")
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes results.json, results.csv, the plots and report.html into `dir`; returns the report.
pub fn write_all(results: &Results, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    results.write_json(&dir.join("results.json"))?;
    results.write_csv(&dir.join("results.csv"))?;
    let plots = svg::write_plots(results, dir)?;
    let report = dir.join("report.html");
    std::fs::write(&report, html::render(results, &plots))?;
    Ok(report)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A full-view IPv4 record of 1000 routes (also the repeats' tests' maker).
    pub(crate) fn rec(engine: &str, metric: &str, value: f64) -> Record {
        Record {
            engine: engine.into(),
            family: "ipv4".into(),
            scenario: "full-view".into(),
            size: 1000,
            metric: metric.into(),
            value,
            unit: "ns".into(),
            runs: 3,
            spread: 0.1,
            note: None,
        }
    }

    #[test]
    fn summary_ratios_are_against_the_best_engine() {
        let results = Results {
            records: vec![
                rec("a", "w1_lookup", 10.0),
                rec("b", "w1_lookup", 5.0),
                rec("a", "memory", 8.0),
            ],
            ..Default::default()
        };
        let t = &results.summary()[0];
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].cells[0], Some((10.0, 2.0)));
        assert_eq!(t.rows[1].cells[0], Some((5.0, 1.0)));
        assert!(t.to_markdown().contains("| a | 10.0 (2.00×) |"));
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let mut r = rec("x", "memory", 1.0);
        r.note = Some("a, \"b\"".into());
        let results = Results {
            records: vec![r],
            ..Default::default()
        };
        let p = std::env::temp_dir().join(format!("fibre-bench-csv-{}", std::process::id()));
        results.write_csv(&p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert!(text.ends_with(",\"a, \"\"b\"\"\"\n"), "{text}");
    }
}
