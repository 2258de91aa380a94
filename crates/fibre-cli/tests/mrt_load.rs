//! `fibre -mrt DUMP -mrt-dev DEV`: a RIB dump's routes installed after the batch.
//!
//! - Against the kernel: the RIB dumps of BIRD, Quagga and RIPE RIS (2000), installed by fibre
//!   and, as `ip route add ... onlink proto bgp` lines, by the kernel; the listings (`-j route
//!   show`, both families) must be equal.
//! - Against a naive model: the RIPE bview of 2000 loaded and saved as a snapshot; `route get
//!   ... fibmatch` from the snapshot must answer each probe with the longest prefix of the dump
//!   holding it, and that prefix's first next hop.
//! - Bad input: a truncated dump or a missing device is an error naming it, and no snapshot.
//!
//! The dumps are in `../shared/data/mrt`: tests skip without it (fail with FIBRE_DATA_REQUIRED);
//! the kernel test needs root and `ip netns` (fails without when FIBRE_KERNEL_TESTS=required).
use fibre::io::mrt::{rib_routes, RibRoute};
use kernel_oracle::{skip_or_fail, Netns};
use serde_json::Value;
use std::io::Read;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

#[path = "support/run.rs"]
mod run;
use run::{fibre, text};

const SETUP: &str = "link add eth0 type veth peer name eth1\nlink set eth0 up\nlink set eth1 up\n";

fn dump(name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/mrt")
        .join(name);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("FIBRE_DATA_REQUIRED").is_none(),
        "FIBRE_DATA_REQUIRED is set but {} is absent",
        path.display()
    );
    eprintln!(
        "skipped: {} absent (shared data not beside the repo)",
        path.display()
    );
    None
}

fn routes_of(path: &Path) -> Vec<RibRoute> {
    let bytes = std::fs::read(path).expect("read");
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut plain)
            .expect("gunzip");
        rib_routes(&plain[..]).expect("parse")
    } else {
        rib_routes(&bytes[..]).expect("parse")
    }
}

fn normalised(json: &str) -> Value {
    let mut v: Value = serde_json::from_str(json.trim()).expect("JSON");
    if let Value::Array(items) = &mut v {
        items.sort_by_key(|i| i.to_string());
    }
    v
}

#[test]
fn mrt_routes_are_installed_as_the_kernel_installs_them() {
    if skip_or_fail("mrt_routes_are_installed_as_the_kernel_installs_them") {
        return;
    }
    // (OpenBGPD's samples hold RIB_GENERIC records, which bgpkit-parser does not read: fibre
    // refuses them with its error; BIRD's IPv6 sample names no next hops.)
    for name in [
        "sample-bird-mrtdump_rib",
        "sample-quagga_rib",
        "ripe-rrc00-bview.20000111.0032.gz",
    ] {
        let Some(path) = dump(name) else { continue };
        let routes = routes_of(&path);
        let lines: String = routes
            .iter()
            .filter_map(|r| {
                let hop = r.next_hop.filter(|h| h.is_ipv4() == r.addr.is_ipv4())?;
                Some(format!(
                    "route add {}/{} via {hop} dev eth0 onlink proto bgp\n",
                    r.addr, r.len
                ))
            })
            .collect();
        assert!(!lines.is_empty(), "{name}: no route with a next hop");
        let ns = Netns::create("mrt-load").expect("namespace");
        let kernel = ns
            .ip_batch_str(&[], &format!("{SETUP}{lines}"))
            .expect("ip");
        assert!(
            kernel.success,
            "{name}: the kernel refused: {}",
            kernel.stderr
        );
        let file = path.to_str().expect("path");
        for family in ["-4", "-6"] {
            let ours = fibre(
                &[
                    family, "-j", "-batch", "-", "-mrt", file, "-mrt-dev", "eth0", "route", "show",
                ],
                SETUP,
            );
            assert!(ours.status.success(), "{name}: {}", text(&ours.stderr));
            let theirs = ns
                .ip(&[family, "-j", "route", "show"])
                .expect("ip route show");
            assert_eq!(
                normalised(&text(&ours.stdout)),
                normalised(&theirs),
                "{name} {family}"
            );
        }
    }
}

/// The longest prefix of `routes` (with a usable next hop) holding `addr`.
fn longest_match(routes: &[RibRoute], addr: IpAddr) -> Option<&RibRoute> {
    routes
        .iter()
        .filter(|r| r.next_hop.is_some_and(|h| h.is_ipv4() == r.addr.is_ipv4()))
        .filter(|r| match (r.addr, addr) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                r.len == 0 || (u32::from(p) ^ u32::from(a)) >> (32 - u32::from(r.len)) == 0
            }
            _ => false,
        })
        .max_by_key(|r| r.len)
}

#[test]
fn a_snapshot_after_an_mrt_load_answers_as_the_dump_says() {
    let Some(path) = dump("ripe-rrc00-bview.20000111.0032.gz") else {
        return;
    };
    let routes = routes_of(&path);
    let snap = std::env::temp_dir().join(format!("fibre-mrt-{}.snap", std::process::id()));
    let (file, snap_name) = (path.to_str().expect("path"), snap.to_str().expect("path"));
    let saved = fibre(
        &[
            "-batch", "-", "-mrt", file, "-mrt-dev", "eth0", "snapshot", "save", snap_name,
        ],
        SETUP,
    );
    assert!(saved.status.success(), "{}", text(&saved.stderr));
    // Probes: an address inside every 97th IPv4 prefix that has a next hop (the dump is all
    // IPv4), with host bits set within the prefix.
    let probes: Vec<IpAddr> = routes
        .iter()
        .filter(|r| r.next_hop.is_some())
        .step_by(97)
        .filter_map(|r| match r.addr {
            IpAddr::V4(a) => {
                let host = u32::MAX.checked_shr(u32::from(r.len)).unwrap_or(0);
                Some(IpAddr::V4((u32::from(a) | (0x2a & host)).into()))
            }
            IpAddr::V6(_) => None,
        })
        .collect();
    assert!(probes.len() > 500, "{} probes", probes.len());
    let lines: String = probes
        .iter()
        .map(|a| format!("route get {a} fibmatch\n"))
        .collect();
    let answers = fibre(
        &["-j", "-force", "-snapshot", snap_name, "-batch", "-"],
        &lines,
    );
    let _ = std::fs::remove_file(&snap);
    let out = text(&answers.stdout);
    let answers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(answers.len(), probes.len(), "{out}");
    for (addr, answer) in probes.iter().zip(&answers) {
        let want = longest_match(&routes, *addr).expect("a probe inside a prefix");
        let dst = if want.len == 0 {
            "default".to_string()
        } else if want.len == 32 {
            want.addr.to_string()
        } else {
            format!("{}/{}", want.addr, want.len)
        };
        assert_eq!(answer[0]["dst"], dst.as_str(), "{addr}: {answer}");
        assert_eq!(
            answer[0]["gateway"],
            want.next_hop.expect("usable").to_string().as_str(),
            "{addr}: {answer}"
        );
        assert_eq!(answer[0]["protocol"], "bgp", "{addr}: {answer}");
    }
}

#[test]
fn a_bad_dump_or_device_is_an_error_and_saves_nothing() {
    let Some(path) = dump("sample-quagga_rib") else {
        return;
    };
    let bytes = std::fs::read(&path).expect("read");
    let cut = std::env::temp_dir().join(format!("fibre-mrt-cut-{}.mrt", std::process::id()));
    std::fs::write(&cut, &bytes[..bytes.len() - 7]).expect("write");
    let snap = std::env::temp_dir().join(format!("fibre-mrt-bad-{}.snap", std::process::id()));
    let (cut_name, snap_name) = (cut.to_str().expect("path"), snap.to_str().expect("path"));
    let out = fibre(
        &[
            "-batch", "-", "-mrt", cut_name, "-mrt-dev", "eth0", "snapshot", "save", snap_name,
        ],
        SETUP,
    );
    let _ = std::fs::remove_file(&cut);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(cut_name),
        "{}",
        text(&out.stderr)
    );
    assert!(!snap.exists(), "a snapshot after a failed load");

    let file = path.to_str().expect("path");
    let out = fibre(
        &[
            "-batch", "-", "-mrt", file, "-mrt-dev", "eth9", "snapshot", "save", snap_name,
        ],
        SETUP,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "fibre: -mrt-dev eth9: Cannot find device \"eth9\"\n"
    );
    assert!(!snap.exists(), "a snapshot after a failed load");
    // A prefix the router already routes (here its own connected subnet, as `ip route add`
    // would refuse it) is left alone, and said so; the rest is installed.
    let out = fibre(
        &[
            "-j",
            "-batch",
            "-",
            "-mrt",
            file,
            "-mrt-dev",
            "eth0",
            "route",
            "show",
            "172.17.0.0/24",
        ],
        &format!("{SETUP}addr add 172.17.0.1/24 dev eth0\n"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 prefixes the router already routes left alone"),
        "{}",
        text(&out.stderr)
    );
    let shown: Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON");
    assert_eq!(shown[0]["protocol"], "kernel", "{shown}");
    // -mrt without the device it needs is a usage error.
    let out = fibre(&["-mrt", file, "route", "show"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--mrt-dev"),
        "{}",
        text(&out.stderr)
    );
}
