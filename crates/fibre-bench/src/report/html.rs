//! The HTML report: summary tables, the plots, the notes, and every record.
use super::svg::{esc, Plot};
use super::{fmt_value, Results};
use std::fmt::Write as _;

pub fn render(results: &Results, plots: &[Plot]) -> String {
    let mut s = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>fibre bench</title>\n<style>\
         body{font-family:sans-serif;margin:2em;max-width:1400px}\
         table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
         th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
         .best{background:#e6f4e6;font-weight:bold}.plots img{width:620px;margin:4px;border:1px solid #eee}\
         </style></head><body>\n<h1>fibre bench: the Linux route-lookup study</h1>\n",
    );
    s.push_str("<table>");
    for (k, v) in &results.meta {
        let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    s.push_str("</table>\n<h2>Summary: the full view, W1/W2, each engine against the best</h2>\n");
    s.push_str(
        "<p>W1: random addresses inside random prefixes of the table; W2: uniform random \
         addresses (IPv6 inside 2000::/3). Throughput is ns per independent lookup; latency is \
         ns per lookup of a dependent chain. Ratios are to the best engine of each column \
         (1.00× is the best).</p>\n",
    );
    for t in results.summary() {
        let _ = write!(s, "<h3>{}</h3><table><tr><th>engine</th>", esc(&t.title));
        for c in &t.columns {
            let _ = write!(s, "<th>{}</th>", esc(c));
        }
        s.push_str("</tr>");
        for row in &t.rows {
            let _ = write!(s, "<tr><td>{}</td>", esc(&row.engine));
            for cell in &row.cells {
                match cell {
                    Some((v, r)) => {
                        let class = if (*r - 1.0).abs() < 1e-9 {
                            " class=\"best\""
                        } else {
                            ""
                        };
                        let _ = write!(s, "<td{class}>{} ({r:.2}×)</td>", fmt_value(*v));
                    }
                    None => s.push_str("<td>–</td>"),
                }
            }
            s.push_str("</tr>");
        }
        s.push_str("</table>\n");
    }
    if !results.notes.is_empty() {
        s.push_str("<h2>Notes</h2><ul>");
        for n in &results.notes {
            let _ = write!(s, "<li>{}</li>", esc(n));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("<h2>Plots</h2>\n");
    let mut group = String::new();
    for p in plots {
        let g = format!("{} {}", p.family, p.scenario);
        if g != group {
            if !group.is_empty() {
                s.push_str("</div>\n");
            }
            let _ = write!(s, "<h3>{}</h3><div class=\"plots\">", esc(&g));
            group = g;
        }
        let _ = write!(
            s,
            "<img src=\"{}\" alt=\"{}\" title=\"{}\">",
            esc(&p.file),
            esc(&p.title),
            esc(&p.metric)
        );
    }
    if !group.is_empty() {
        s.push_str("</div>\n");
    }
    s.push_str(
        "<h2>All records</h2><p>Also in results.json and results.csv. value is the median of \
         runs; spread is the median absolute deviation.</p><table><tr><th>engine</th><th>family</th>\
         <th>scenario</th><th>size</th><th>metric</th><th>value</th><th>unit</th><th>runs</th>\
         <th>spread</th><th>note</th></tr>",
    );
    for r in &results.records {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.engine),
            r.family,
            esc(&r.scenario),
            r.size,
            r.metric,
            fmt_value(r.value),
            esc(&r.unit),
            r.runs,
            fmt_value(r.spread),
            esc(r.note.as_deref().unwrap_or(""))
        );
    }
    s.push_str("</table></body></html>\n");
    s
}
