//! `fibre bench mirror` runs end to end on a small table: every record is written, and the
//! mirror lost nothing under the kernel's churn (every probe seen, the churned table equal to
//! the kernel's at the end). Timings are reported, never asserted.
//!
//! Needs root and `ip netns`; skips with a message elsewhere, fails when FIBRE_KERNEL_TESTS=required.
use kernel_oracle::skip_or_fail;
use serde_json::Value;
use std::process::Command;

#[test]
fn the_mirror_benchmark_records_everything_and_loses_nothing() {
    if skip_or_fail("the_mirror_benchmark_records_everything_and_loses_nothing") {
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("fibre-bench-mirror-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_fibre"))
        .args([
            "bench",
            "mirror",
            "--synthetic",
            "--limit",
            "3000",
            "--runs",
            "1",
        ])
        .args(["--lag-secs", "1", "--requests", "300", "--clients", "1,3"])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("run fibre bench mirror");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
    let text = std::fs::read_to_string(out_dir.join("mirror.json")).expect("mirror.json");
    let _ = std::fs::remove_dir_all(&out_dir);
    let results: Value = serde_json::from_str(&text).expect("JSON");
    let records = results["records"].as_array().expect("records");
    let value = |metric: &str, scenario: &str| {
        records
            .iter()
            .find(|r| r["metric"] == metric && r["scenario"] == scenario)
            .and_then(|r| r["value"].as_f64())
            .unwrap_or_else(|| panic!("no {metric} record for {scenario}"))
    };
    for metric in [
        "kernel_dump",
        "mirror_sync",
        "snapshot_save",
        "snapshot_load",
    ] {
        assert!(value(metric, "full-view") > 0.0, "{metric}");
    }
    for clients in ["clients-1", "clients-3"] {
        assert!(value("socket_route_get", clients) > 0.0);
    }
    assert!(value("event_lag_median", "churn") > 0.0);
    assert_eq!(value("events_lost", "churn"), 0.0, "{stdout}");
    // Every record covers the whole table installed: 3000 routes per family.
    assert!(records.iter().all(|r| r["size"] == 6000));
}
