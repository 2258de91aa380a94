//! `fibre mirror` as a user runs it: following a namespace while the kernel churns, eight
//! clients ask 10^4 commands each (more if the churn has not yet made 2,000 changes per
//! family) on its socket. Every answer must be one whole JSON line, and
//! a state the kernel was in: the churn replaces K ECMP routes per family in turn, step j
//! writing value j into both legs' gateways, so a listing is a kernel state exactly when its
//! values are one window of K consecutive steps (each route's latest), and a torn or lost
//! change shows. A client never sees the table go back in time. Once the churn stops the
//! mirror's listings equal `ip -j`'s. Writes are refused, the socket is 0600, and SIGTERM ends
//! the mirror cleanly, leaving a snapshot that answers as the mirror did.
//!
//! Needs root and `ip netns`; skips with a message elsewhere, fails when FIBRE_KERNEL_TESTS=required.
use fibre::io::iproute2::Query;
use fibre_bench::mirror::client::{Client, MirrorProcess};
use kernel_oracle::{skip_or_fail, Netns};
use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Listings compared as multisets (dump order is not part of the contract), as the library's
/// mirror tests compare them.
#[path = "../../fibre/tests/support/listings.rs"]
#[allow(dead_code)]
mod listings;
use listings::normalise;

/// Routes per family that churn.
const K: usize = 16;
const CLIENTS: usize = 8;
const COMMANDS: usize = 10_000;
/// Steps per family at most (values are written into gateway addresses: below 65,000).
const MAX_STEPS: usize = 60_000;
/// Steps per family per chunk, a chunk per 10 ms: at most about 5,000 changes/s in all.
const CHUNK: usize = 25;
/// Steps per family the clients see at least: they go on past COMMANDS until the churn has
/// made this many, so that a fast machine does not end the check before the churn has begun.
const MIN_STEPS: usize = 2_000;

const SETUP: &str = "\
link add va type veth peer name vb
link set va up
link set vb up
addr add 10.9.0.1/16 dev va
addr add 10.10.0.1/16 dev va
addr add 2001:db8:9::1/64 dev va nodad
rule add pref 100 lookup 100
";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fam {
    V4,
    V6,
}

/// Step `j` of a family: route `j % K` gets value `j` in both legs.
fn step(fam: Fam, j: usize) -> String {
    let p = j % K;
    match fam {
        Fam::V4 => {
            let v = j + 256;
            let (h, l) = (v >> 8, v & 255);
            format!("route replace 10.0.{p}.0/24 table 100 nexthop via 10.9.{h}.{l} dev va nexthop via 10.10.{h}.{l} dev va")
        }
        Fam::V6 => format!(
            "route replace 2001:db8:100:{p:x}::/64 table 100 nexthop via 2001:db8:9::1:{j:x} dev va nexthop via 2001:db8:9::2:{j:x} dev va"
        ),
    }
}

/// The route index and the leg (0 or 1) a destination and gateway spell, and the value.
fn decode(fam: Fam, dst: &str, gateway: &str) -> Option<(usize, usize, usize)> {
    match fam {
        Fam::V4 => {
            let p: usize = dst.strip_prefix("10.0.")?.split('.').next()?.parse().ok()?;
            let o: Vec<usize> = gateway.split('.').filter_map(|x| x.parse().ok()).collect();
            let leg = match o.as_slice() {
                [10, 9, _, _] => 0,
                [10, 10, _, _] => 1,
                _ => return None,
            };
            Some((p, leg, (o[2] * 256 + o[3]).checked_sub(256)?))
        }
        Fam::V6 => {
            // Route 0 is spelled 2001:db8:100::/64.
            let p = dst
                .strip_prefix("2001:db8:100:")?
                .split([':', '/'])
                .next()?;
            let p = if p.is_empty() {
                0
            } else {
                usize::from_str_radix(p, 16).ok()?
            };
            let tail = gateway.strip_prefix("2001:db8:9::")?;
            let (leg, v) = tail.split_once(':')?;
            let leg = usize::from_str_radix(leg, 16).ok()?.checked_sub(1)?;
            Some((p, leg, usize::from_str_radix(v, 16).ok()?))
        }
    }
}

/// What one client has seen of one family: the newest state, and each route's newest value.
#[derive(Default, Clone)]
struct Seen {
    state: usize,
    values: [usize; K],
}

/// A listing of table 100: exactly the K routes, each with two legs of one value that is its
/// own, all within one window of K steps, and not older than what this client saw before.
fn check_listing(fam: Fam, answer: &Value, seen: &mut Seen) -> Result<(), String> {
    let routes = answer.as_array().ok_or("not an array")?;
    let mut values = [usize::MAX; K];
    for r in routes {
        let dst = r["dst"].as_str().ok_or("no dst")?;
        let legs = r["nexthops"].as_array().ok_or("no nexthops")?;
        let mut found = [None, None];
        for leg in legs {
            let (p, l, v) = decode(fam, dst, leg["gateway"].as_str().ok_or("no gateway")?)
                .ok_or("a route the churn does not write")?;
            if l > 1 || found[l].replace(v).is_some() {
                return Err("a leg twice".into());
            }
            if values[p] != usize::MAX && values[p] != v {
                return Err("a route twice".into());
            }
            values[p] = v;
        }
        if found[0].is_none() || found[0] != found[1] {
            return Err(format!("legs of different steps: {found:?}"));
        }
    }
    let top = *values.iter().max().expect("K > 0");
    for (p, v) in values.iter().enumerate() {
        if *v == usize::MAX {
            return Err(format!("route {p} missing"));
        }
        if v % K != p || top - v >= K {
            return Err(format!(
                "route {p} has value {v}, newest is {top}: not one state"
            ));
        }
        if *v < seen.values[p] {
            return Err(format!(
                "route {p} went back from {} to {v}",
                seen.values[p]
            ));
        }
    }
    seen.state = top;
    seen.values = values;
    Ok(())
}

/// A `route get` answer: a leg of the route asked about, not older than what this client saw.
fn check_get(fam: Fam, p: usize, answer: &Value, seen: &mut Seen) -> Result<(), String> {
    let a = &answer[0];
    let dst = match fam {
        Fam::V4 => format!("10.0.{p}.0"),
        Fam::V6 => format!("2001:db8:100:{p:x}::"),
    };
    let (q, _, v) = decode(fam, &dst, a["gateway"].as_str().ok_or("no gateway")?)
        .ok_or("a gateway the churn does not write")?;
    if q != p || v % K != p {
        return Err(format!("route {p} answered with value {v}"));
    }
    if v < seen.values[p] {
        return Err(format!(
            "route {p} went back from {} to {v}",
            seen.values[p]
        ));
    }
    seen.values[p] = v;
    Ok(())
}

/// One command, one answer line, read as JSON.
fn ask(c: &mut Client, command: &str) -> Value {
    let line = c.ask(command).unwrap_or_else(|e| panic!("{command}: {e}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{command}: {e}: {line}"))
}

/// One client's run: a mix of listings, route gets, static listings and refused writes.
/// Returns the distinct states it saw per family.
fn client(path: &Path, id: usize, made: &AtomicUsize) -> Result<[usize; 2], String> {
    let mut c = Client::connect(path)?;
    let mut seen = [Seen::default(), Seen::default()];
    let mut states = [std::collections::BTreeSet::new(), Default::default()];
    let statics: Vec<(&str, Value)> = ["rule show", "-6 rule show", "link show", "addr show"]
        .into_iter()
        .map(|cmd| (cmd, ask(&mut c, cmd)))
        .collect();
    let began = Instant::now();
    for n in 0.. {
        let churned = made.load(Ordering::SeqCst) >= K + MIN_STEPS;
        if n >= COMMANDS && (churned || began.elapsed() > Duration::from_secs(120)) {
            break;
        }
        let p = (n * 7 + id) % K;
        let (what, result) = match n % 8 {
            0 => {
                let a = ask(&mut c, "route show table 100");
                let r = check_listing(Fam::V4, &a, &mut seen[0]);
                states[0].insert(seen[0].state);
                ("IPv4 listing", r.map_err(|e| format!("{e}: {a}")))
            }
            1 => {
                let a = ask(&mut c, "-6 route show table 100");
                let r = check_listing(Fam::V6, &a, &mut seen[1]);
                states[1].insert(seen[1].state);
                ("IPv6 listing", r.map_err(|e| format!("{e}: {a}")))
            }
            2 | 3 | 7 if n % 800 != 7 => {
                let a = ask(&mut c, &format!("route get 10.0.{p}.1"));
                let r = check_get(Fam::V4, p, &a, &mut seen[0]);
                ("IPv4 route get", r.map_err(|e| format!("{e}: {a}")))
            }
            4 | 5 => {
                let a = ask(&mut c, &format!("route get 2001:db8:100:{p:x}::1"));
                let r = check_get(Fam::V6, p, &a, &mut seen[1]);
                ("IPv6 route get", r.map_err(|e| format!("{e}: {a}")))
            }
            6 => {
                let (cmd, expected) = &statics[(n / 8) % statics.len()];
                let a = ask(&mut c, cmd);
                let r = (a == *expected)
                    .then_some(())
                    .ok_or_else(|| format!("{a} after {expected}"));
                ("static listing", r)
            }
            _ => {
                let a = ask(&mut c, "route add 192.0.2.0/24 dev va");
                let r = (a["errno"] == 95 && a["error"] == "EOPNOTSUPP")
                    .then_some(())
                    .ok_or_else(|| format!("a write was not refused: {a}"));
                ("write", r)
            }
        };
        result.map_err(|e| format!("client {id}, command {n} ({what}): {e}"))?;
    }
    Ok([states[0].len(), states[1].len()])
}

fn kernel_listing(ns: &Netns, fam: &str) -> Value {
    let text = ns
        .ip(&[fam, "-j", "route", "show", "table", "100"])
        .expect("ip route show");
    let mut v: Value = serde_json::from_str(&text).expect("ip -j");
    normalise(&mut v);
    v
}

fn temp_path(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!("fibre-mirror-test-{}.{what}", std::process::id()))
}

#[test]
fn clients_see_whole_kernel_states_while_the_mirror_follows_churn() {
    if skip_or_fail("clients_see_whole_kernel_states_while_the_mirror_follows_churn") {
        return;
    }
    let ns = Netns::create("mirror-socket").expect("namespace");
    let start: String = (0..K)
        .flat_map(|j| [step(Fam::V4, j), step(Fam::V6, j)])
        .map(|l| l + "\n")
        .collect();
    let setup = ns
        .ip_batch_str(&[], &format!("{SETUP}{start}"))
        .expect("ip");
    assert!(setup.success, "setup: {}", setup.stderr);
    assert!(
        ns.ip_batch_str(&["-6"], "rule add pref 100 lookup 100\n")
            .expect("ip")
            .success
    );

    let (socket, snapshot) = (temp_path("sock"), temp_path("snap"));
    let extra: Vec<String> = [
        "--status-every",
        "1",
        "--snapshot",
        snapshot.to_str().expect("path"),
    ]
    .map(String::from)
    .to_vec();
    let fibre = Path::new(env!("CARGO_BIN_EXE_fibre"));
    let mut mirror = MirrorProcess::start(
        fibre,
        ns.name(),
        socket.clone(),
        &extra,
        Duration::from_secs(30),
    )
    .expect("fibre mirror answers");
    let mode = std::fs::metadata(&socket)
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the socket's mode");

    // The churn: replaces in chunks while the clients run (bounded in steps and time).
    let clients_done = Arc::new(AtomicBool::new(false));
    let mut ip = Command::new("ip")
        .args(["-n", ns.name(), "-force", "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ip -batch -");
    let mut ip_in = ip.stdin.take().expect("stdin");
    let done = Arc::clone(&clients_done);
    let made = Arc::new(AtomicUsize::new(K));
    let made_by_churn = Arc::clone(&made);
    let generator = std::thread::spawn(move || {
        let began = Instant::now();
        let mut next = K;
        made_by_churn.store(next, Ordering::SeqCst);
        while !done.load(Ordering::SeqCst)
            && next + CHUNK <= MAX_STEPS
            && began.elapsed() < Duration::from_secs(120)
        {
            let chunk: String = (next..next + CHUNK)
                .flat_map(|j| [step(Fam::V4, j), step(Fam::V6, j)])
                .map(|l| l + "\n")
                .collect();
            ip_in.write_all(chunk.as_bytes()).expect("feed ip");
            next += CHUNK;
            made_by_churn.store(next, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(10));
        }
        next
    });

    let began = Instant::now();
    let runs: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let path = socket.clone();
            let made = Arc::clone(&made);
            std::thread::spawn(move || client(&path, id, &made))
        })
        .collect();
    let results: Vec<_> = runs
        .into_iter()
        .map(|r| r.join().expect("client"))
        .collect();
    clients_done.store(true, Ordering::SeqCst);
    let steps = generator.join().expect("generator");
    let ip_out = ip.wait_with_output().expect("ip");
    assert!(
        ip_out.status.success(),
        "the churn failed: {}",
        String::from_utf8_lossy(&ip_out.stderr)
    );
    let elapsed = began.elapsed();
    let mut states = [0, 0];
    for r in results {
        let s = r.unwrap_or_else(|e| panic!("{e}"));
        states = [states[0] + s[0], states[1] + s[1]];
    }
    eprintln!(
        "{CLIENTS} clients × {COMMANDS} commands in {:.1} s while {} changes per family were made; distinct states seen (summed over clients): IPv4 {}, IPv6 {}",
        elapsed.as_secs_f64(),
        steps - K,
        states[0],
        states[1]
    );
    // The check is only as good as the churn the clients saw.
    assert!(steps - K >= MIN_STEPS, "the churn was too short: {steps}");
    assert!(
        states.iter().all(|s| *s >= 2 * CLIENTS),
        "too few states seen: {states:?}"
    );

    // Quiet: the mirror settles on the kernel's state.
    let mut c = Client::connect(&socket).expect("connect");
    let want = [kernel_listing(&ns, "-4"), kernel_listing(&ns, "-6")];
    let deadline = Instant::now() + Duration::from_secs(10);
    let got = loop {
        let mut got = [
            ask(&mut c, "route show table 100"),
            ask(&mut c, "-6 route show table 100"),
        ];
        got.iter_mut().for_each(normalise);
        if got == want || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(got, want, "the mirror did not settle on the kernel's state");

    let (status, log) = mirror.stop();
    eprintln!("{log}");
    assert!(
        status.is_some_and(|s| s.success()),
        "the mirror's exit on SIGTERM: {status:?}\n{log}"
    );
    assert!(!socket.exists(), "the socket was left behind");
    assert!(log.contains("IPv4 and") && log.trim_end().ends_with("fibre mirror: stopped"));
    // The snapshot written on exit answers as the mirror did.
    let router = fibre::io::snapshot::load(&snapshot).expect("snapshot");
    let _ = std::fs::remove_file(&snapshot);
    let q = Query::new(&router, true);
    let mut saved = [
        serde_json::from_str(&q.answer("route show table 100")).expect("JSON"),
        serde_json::from_str(&q.answer("-6 route show table 100")).expect("JSON"),
    ];
    saved.iter_mut().for_each(normalise);
    assert_eq!(saved, want, "the snapshot saved on exit");
}
