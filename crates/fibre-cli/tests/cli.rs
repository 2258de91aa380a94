//! The `fibre` command as a user runs it: options spelled as ip spells them, exit statuses,
//! error messages on standard error, JSON lines on standard output.
#[path = "support/run.rs"]
mod run;
use run::{fibre, text};

const SETUP: &str = "link add veth0 type veth peer name veth1\nlink set veth0 up\nlink set veth1 up\naddr add 192.0.2.1/24 dev veth0\n";

#[test]
fn stops_at_the_first_error_like_ip() {
    let input = format!("{SETUP}route add 198.51.100.0/24 via 192.0.2.9\nroute get 203.0.113.1\nroute get 198.51.100.1 fibmatch\n");
    let out = fibre(&["-batch", "-"], &input);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "RTNETLINK answers: Network is unreachable\nCommand failed -:6\n"
    );
    assert_eq!(
        text(&out.stdout),
        "",
        "the line after the failure did not run"
    );
}

#[test]
fn force_goes_on_and_reports_failure_in_the_status() {
    let input = format!("{SETUP}route add 198.51.100.0/24 via 192.0.2.9\nroute get 203.0.113.1\nroute get 198.51.100.1 fibmatch\n");
    let out = fibre(&["-force", "-batch", "-"], &input);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "198.51.100.0/24 via 192.0.2.9 dev veth0 \n"
    );
    let ok = fibre(&["-force", "-batch", "-"], SETUP);
    assert_eq!(ok.status.code(), Some(0));
}

#[test]
fn json_prints_one_line_per_printing_or_failing_command() {
    let input = format!("{SETUP}route add blackhole 203.0.113.0/24\nroute get 203.0.113.1 fibmatch\nroute get 192.0.2.7 fibmatch\nroute add 10.0.0.0/33 dev veth0\n");
    let out = fibre(&["-j", "-force", "-batch", "-"], &input);
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["error"], "EINVAL");
    assert_eq!(lines[0]["errno"], 22);
    assert_eq!(lines[0]["line"], 6);
    assert_eq!(lines[0]["command"], "route get 203.0.113.1 fibmatch");
    assert_eq!(lines[1][0]["dst"], "192.0.2.0/24");
    assert_eq!(lines[1][0]["protocol"], "kernel");
    assert_eq!(lines[2]["line"], 8);
    // A syntax error ends the batch as ip exits: no "Command failed" line after it.
    let err = text(&out.stderr);
    assert!(
        err.ends_with("Error: any valid prefix is expected rather than \"10.0.0.0/33\".\n"),
        "{err}"
    );
}

#[test]
fn atomic_keeps_nothing_when_a_line_fails() {
    let input = format!(
        "{SETUP}route add 198.51.100.0/24 via 192.0.2.9\nroute add 203.0.113.0/24 dev nosuch\n"
    );
    let out = fibre(&["--atomic", "-batch", "-"], &input);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("Cannot find device \"nosuch\"\nCommand failed -:6"),
        "{err}"
    );
    assert!(err.contains("rolled back"), "{err}");
}

#[test]
fn a_trailing_command_runs_after_the_batch_file() {
    let dir = std::env::temp_dir().join(format!("fibre-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("setup.batch");
    std::fs::write(&file, format!("{SETUP}route add default via 192.0.2.254")).unwrap();
    let out = fibre(
        &[
            "-batch",
            file.to_str().unwrap(),
            "route",
            "get",
            "8.8.8.8",
            "fibmatch",
        ],
        "",
    );
    assert_eq!(
        text(&out.stdout),
        "default via 192.0.2.254 dev veth0 \n",
        "{}",
        text(&out.stderr)
    );
    // One command fails as `ip` reports it outside a batch.
    let out = fibre(&["-6", "route", "get", "2001:db8::1"], "");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "RTNETLINK answers: Network is unreachable\n"
    );
    // After a batch file, the failing command is not numbered as a line of the file.
    let out = fibre(
        &[
            "-batch",
            file.to_str().unwrap(),
            "route",
            "get",
            "10.9.9.9",
            "oif",
            "nosuch",
        ],
        "",
    );
    assert_eq!(text(&out.stderr), "Cannot find device \"nosuch\"\n");
    let out = fibre(&["-6", "route", "show", "table", "100"], "");
    assert_eq!(
        text(&out.stderr),
        "Error: ipv6: FIB table does not exist.\nDump terminated\n"
    );
    let missing = fibre(&["-batch", "/nonexistent/file"], "");
    assert_eq!(missing.status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_refuses_bad_options_with_status_2_naming_them() {
    let out = fibre(&["bench", "--scenarios", "full-view,spread48-d7"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown scenario \"spread48-d7\""),
        "{}",
        text(&out.stderr)
    );
    let out = fibre(&["bench", "--sizes", "100,0"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--sizes"));
    let out = fibre(&["bench", "--family", "5"], "");
    assert_eq!(out.status.code(), Some(2));
}

/// A tiny study through the command: the summary on stdout, the report on disk, memory measured
/// by the counting allocator the binary installs.
#[test]
fn bench_runs_a_tiny_study_and_names_its_report() {
    let dir = std::env::temp_dir().join(format!("fibre-cli-bench-{}", std::process::id()));
    let out = fibre(
        &[
            "bench",
            "--synthetic",
            "--family",
            "4",
            "--scenarios",
            "full-view",
            "--sizes",
            "500",
            "--runs",
            "1",
            "--w-count",
            "1000",
            "--engines",
            "fibre-rib,prefix-trie",
            "--updates",
            "200",
            "--out",
            dir.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Not on a terminal: a line per phase and per finished point, never silence.
    let progress = text(&out.stderr);
    for line in [
        "fibre bench: loading the full-view table",
        "fibre bench: [1/2] ipv4 full-view 500 routes: ",
        "fibre bench: [2/2] ipv4 updates (400 changes): ",
    ] {
        assert!(
            progress.contains(line),
            "{line:?} missing from:\n{progress}"
        );
    }
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ipv4 full view, 500 routes"), "{stdout}");
    assert!(stdout.contains("| fibre-rib |") && stdout.contains("| prefix-trie |"));
    // The update benchmark's summary: the router and the bare FIB, per change.
    assert!(stdout.contains("ipv4 updates on the full view"), "{stdout}");
    assert!(stdout.contains("| fibre-router |") && stdout.contains("| fibre-fib-poptrie |"));
    assert!(stdout.contains(&format!("report: {}", dir.join("report.html").display())));
    let results = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&results).unwrap();
    let memory = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["engine"] == "fibre-rib" && r["metric"] == "memory")
        .expect("memory measured");
    assert!(memory["value"].as_f64().unwrap() > 8.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn help_names_every_form_and_bench() {
    let out = fibre(&["--help"], "");
    let help = text(&out.stdout);
    for word in ["-batch", "-force", "fibre bench", "OBJECT COMMAND", "-6"] {
        assert!(help.contains(word), "{word} missing from:\n{help}");
    }
    assert_eq!(
        text(&fibre(&["help"], "").stdout),
        help,
        "fibre help is fibre --help"
    );
    let bench = text(&fibre(&["bench", "--help"], "").stdout);
    assert!(bench.contains("Usage: fibre bench [OPTIONS]"), "{bench}");
}

#[test]
fn connected_prints_the_answer_twice_as_iproute2_does() {
    let out = fibre(
        &["-batch", "-", "route", "get", "192.0.2.7", "connected"],
        SETUP,
    );
    assert_eq!(
        text(&out.stdout),
        "192.0.2.7 dev veth0 src 192.0.2.1 uid 0 \n    cache \n".repeat(2),
        "{}",
        text(&out.stderr)
    );
}

/// `snapshot save FILE` after a batch, `-snapshot FILE` to start from it; a failed batch
/// writes nothing, and a damaged file is an error that names it.
#[test]
fn snapshots_save_after_a_batch_and_start_the_next_run() {
    let dir = std::env::temp_dir().join(format!("fibre-cli-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let snap = dir.join("state.snap");
    let s = snap.to_str().unwrap();
    let batch = format!(
        "{SETUP}nexthop add id 1 via 192.0.2.2 dev veth0\nroute add 10.0.0.0/8 nhid 1\n\
         route add default via 192.0.2.254\nrule add from 10.1.0.0/16 lookup 100\n"
    );
    let out = fibre(&["-batch", "-", "snapshot", "save", s], &batch);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let show = "route show table all\nrule show\nnexthop show\naddr show\nlink show\n";
    let fresh = fibre(&["-batch", "-"], &format!("{batch}{show}"));
    let loaded = fibre(&["-snapshot", s, "-batch", "-"], show);
    assert!(loaded.status.success(), "{}", text(&loaded.stderr));
    assert_eq!(text(&loaded.stdout), text(&fresh.stdout));
    let get = fibre(&["-snapshot", s, "route", "get", "10.1.2.3"], "");
    assert_eq!(
        text(&get.stdout),
        "10.1.2.3 via 192.0.2.2 dev veth0 src 192.0.2.1 uid 0 \n    cache \n"
    );
    // A batch that fails leaves the file as it was.
    let before = std::fs::read(&snap).unwrap();
    let out = fibre(
        &["-snapshot", s, "-batch", "-", "snapshot", "save", s],
        "route add 10.0.0.0/8 via 192.0.2.3\n",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no snapshot written"));
    assert_eq!(std::fs::read(&snap).unwrap(), before);
    // A damaged file is named.
    let mut bytes = before.clone();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&snap, bytes).unwrap();
    let out = fibre(&["-snapshot", s, "route", "show"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("state.snap") && text(&out.stderr).contains("truncated"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
