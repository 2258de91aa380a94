//! Plots in the study's style: a metric against the number of routes on a log axis, one line per
//! engine, error bars of one MAD.
//!
//! Written out by hand as plain SVG: a plotting crate would bring font discovery and raster
//! dependencies for what is a few dozen lines of path data, and the report must build anywhere.
use super::{Record, Results, METRICS};
use std::fmt::Write as _;
use std::path::Path;

/// A plot written to disk.
pub struct Plot {
    pub family: String,
    pub scenario: String,
    pub metric: String,
    pub title: String,
    pub file: String,
}

const PALETTE: &[&str] = &[
    "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#000000",
];

/// The metrics plotted per scenario, with whether the y axis is logarithmic.
const PLOTTED: &[(&str, bool)] = &[
    ("lookup_time", false),
    ("depth_mean", false),
    ("depth_max", false),
    ("insert_time", true),
    ("memory", true),
];

pub fn write_plots(results: &Results, dir: &Path) -> std::io::Result<Vec<Plot>> {
    // Engines in first-seen order give each a stable colour across plots.
    let mut engines: Vec<&str> = Vec::new();
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for r in &results.records {
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
        if !groups.contains(&(r.family.as_str(), r.scenario.as_str())) {
            groups.push((&r.family, &r.scenario));
        }
    }
    let mut plots = Vec::new();
    for (family, scenario) in groups {
        for &(metric, log_y) in PLOTTED {
            let recs: Vec<&Record> = results
                .records
                .iter()
                .filter(|r| r.family == family && r.scenario == scenario && r.metric == metric)
                .filter(|r| r.value.is_finite() && r.size > 0)
                .collect();
            if recs.is_empty() {
                continue;
            }
            let label = METRICS
                .iter()
                .find(|m| m.0 == metric)
                .map_or(metric, |m| m.2);
            let unit = &recs[0].unit;
            let title = format!("{family} {scenario}: {label}");
            let file = format!("{family}-{scenario}-{metric}.svg");
            let svg = render(&title, unit, &recs, &engines, log_y);
            std::fs::write(dir.join(&file), svg)?;
            plots.push(Plot {
                family: family.into(),
                scenario: scenario.into(),
                metric: metric.into(),
                title,
                file,
            });
        }
    }
    Ok(plots)
}

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 50.0;

/// One plot: x = routes (log10), y = value (linear from 0, or log10).
pub fn render(title: &str, unit: &str, recs: &[&Record], engines: &[&str], log_y: bool) -> String {
    let xs: Vec<f64> = recs.iter().map(|r| (r.size as f64).log10()).collect();
    let (mut x0, mut x1) = (
        xs.iter().cloned().fold(f64::INFINITY, f64::min).floor(),
        xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max).ceil(),
    );
    if x1 <= x0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let hi = recs
        .iter()
        .map(|r| r.value + r.spread)
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let lo_pos = recs
        .iter()
        .map(|r| r.value)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let (y0, y1) = if log_y {
        let a = if lo_pos.is_finite() {
            lo_pos.log10().floor()
        } else {
            -1.0
        };
        (a, hi.log10().ceil().max(a + 1.0))
    } else {
        (0.0, nice_ceiling(hi * 1.05))
    };
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |v: f64| {
        let y = if log_y {
            v.max(10f64.powf(y0)).log10()
        } else {
            v
        };
        H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM)
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = write!(
        s,
        r#"<text x="{}" y="20" font-size="13" text-anchor="middle">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        esc(title)
    );
    // Axes and grid.
    let (ax0, ax1, ay0, ay1) = (px(x0), px(x1), py_axis(y0, y0, y1), py_axis(y1, y0, y1));
    let _ = write!(
        s,
        r##"<path d="M{ax0},{ay1}V{ay0}H{ax1}" fill="none" stroke="#333"/>"##
    );
    let mut d = x0;
    while d <= x1 + 1e-9 {
        let x = px(d);
        let _ = write!(
            s,
            r##"<path d="M{x},{ay0}V{ay1}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            ay0 + 16.0,
            pow10_label(d)
        );
        d += 1.0;
    }
    let yticks: Vec<f64> = if log_y {
        (y0 as i32..=y1 as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=5).map(|i| y1 * i as f64 / 5.0).collect()
    };
    for v in yticks {
        let y = py(v);
        let _ = write!(
            s,
            r##"<path d="M{ax0},{y}H{ax1}" stroke="#eee"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            ax0 - 6.0,
            y + 4.0,
            // Powers of ten read best written out (0.001, 1000).
            if log_y {
                format!("{v}")
            } else {
                super::fmt_value(v)
            }
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">routes</text>"#,
        (ax0 + ax1) / 2.0,
        H - 12.0
    );
    let _ = write!(
        s,
        r#"<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"#,
        (ay0 + ay1) / 2.0,
        (ay0 + ay1) / 2.0,
        esc(unit)
    );
    // One line per engine, error bars of one MAD, legend on the right.
    let mut legend_y = TOP + 10.0;
    for (i, engine) in engines.iter().enumerate() {
        let mut pts: Vec<&&Record> = recs.iter().filter(|r| r.engine == *engine).collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by_key(|r| r.size);
        let colour = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|r| format!("{:.1},{:.1}", px((r.size as f64).log10()), py(r.value)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="1.5"/>"#,
            path.join(" ")
        );
        for r in &pts {
            let x = px((r.size as f64).log10());
            if r.spread > 0.0 {
                let (a, b) = (py(r.value - r.spread), py(r.value + r.spread));
                let _ = write!(
                    s,
                    r#"<path d="M{x:.1},{a:.1}V{b:.1}M{:.1},{a:.1}h6M{:.1},{b:.1}h6" stroke="{colour}"/>"#,
                    x - 3.0,
                    x - 3.0
                );
            }
            let _ = write!(
                s,
                r#"<circle cx="{x:.1}" cy="{:.1}" r="2.5" fill="{colour}"><title>{} {}: {} {}</title></circle>"#,
                py(r.value),
                esc(engine),
                r.size,
                super::fmt_value(r.value),
                esc(unit)
            );
        }
        let _ = write!(
            s,
            r#"<path d="M{},{legend_y}h18" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            W - RIGHT + 12.0,
            W - RIGHT + 36.0,
            legend_y + 4.0,
            esc(engine)
        );
        legend_y += 16.0;
    }
    s.push_str("</svg>\n");
    s
}

fn py_axis(y: f64, y0: f64, y1: f64) -> f64 {
    H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM)
}

fn pow10_label(e: f64) -> String {
    match e as i32 {
        0 => "1".into(),
        1 => "10".into(),
        2 => "100".into(),
        3 => "1k".into(),
        4 => "10k".into(),
        5 => "100k".into(),
        6 => "1M".into(),
        7 => "10M".into(),
        n => format!("1e{n}"),
    }
}

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let e = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * e >= v {
            return m * e;
        }
    }
    10.0 * e
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.9), 1.0);
        assert_eq!(nice_ceiling(130.0), 200.0);
        assert_eq!(nice_ceiling(2.2), 2.5);
    }

    #[test]
    fn a_plot_has_one_line_per_engine_and_escapes_text() {
        let r = |e: &str, size, v| Record {
            engine: e.into(),
            family: "ipv6".into(),
            scenario: "full-view".into(),
            size,
            metric: "lookup_time".into(),
            value: v,
            unit: "ns".into(),
            runs: 5,
            spread: 1.0,
            note: None,
        };
        let recs = [r("a<b", 100, 10.0), r("a<b", 1000, 20.0), r("c", 100, 5.0)];
        let refs: Vec<&Record> = recs.iter().collect();
        let svg = render("t", "ns", &refs, &["a<b", "c"], false);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b") && !svg.contains("a<b"));
        assert!(svg.ends_with("</svg>\n"));
    }
}
