//! Snapshots: a router loaded from a snapshot answers as the router that was saved (every
//! listing, and `route get` probes of both families), and no damaged or foreign file is ever
//! more than an error naming what is wrong.
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::io::snapshot::{self, SnapshotErrorKind};
use fibre::Router;
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
#[path = "support/veths.rs"]
mod veths;

/// Random lines of every kind the router keeps (many refused, which is fine): routes of both
/// families with types, metrics, tables, TOS, multipath and `nhid`, rules, addresses,
/// next-hop objects, deletes, and a device going down.
fn lines(seed: u64, n: usize) -> String {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut t = String::new();
    let gw4 = |rng: &mut SmallRng| {
        let (net, dev) =
            [("192.0.2", "va"), ("198.51.100", "wa"), ("203.0.113", "xa")][rng.gen_range(0..3)];
        (format!("{net}.{}", rng.gen_range(2..250)), dev)
    };
    for _ in 0..n {
        let line = match rng.gen_range(0..16) {
            0..=5 => {
                let (g, d) = gw4(&mut rng);
                let kind =
                    ["", "", "", "blackhole ", "unreachable ", "prohibit "][rng.gen_range(0..6)];
                let hop = if kind.is_empty() {
                    match rng.gen_range(0..4) {
                        0 => format!(" via {g}"),
                        1 => format!(" dev {d}"),
                        2 => format!(" nhid {}", rng.gen_range(1..12)),
                        _ => {
                            let (h, _) = gw4(&mut rng);
                            format!(" nexthop via {g} weight 2 nexthop via {h}")
                        }
                    }
                } else {
                    String::new()
                };
                // Next hops last: after a `nexthop`, ip takes nothing else.
                format!(
                    "route {} {kind}10.{}.{}.0/24 metric {} table {} tos {}{hop}",
                    ["add", "append", "prepend", "replace"][rng.gen_range(0..4)],
                    rng.gen_range(0..4),
                    rng.gen_range(0..4),
                    [0, 0, 5, 100][rng.gen_range(0..4)],
                    ["main", "main", "100"][rng.gen_range(0..3)],
                    ["0", "0", "0x10"][rng.gen_range(0..3)]
                )
            }
            6..=8 => {
                let via = ["2001:db8:1::9", "2001:db8:2::9", "2001:db8:1::a"][rng.gen_range(0..3)];
                let hop = match rng.gen_range(0..3) {
                    0 => format!("via {via}"),
                    1 => format!("nhid {}", 20 + rng.gen_range(0..4)),
                    _ => "dev va".to_string(),
                };
                format!(
                    "route {} 2001:db8:{:x}::/48 {hop} metric {}",
                    ["add", "append", "replace"][rng.gen_range(0..3)],
                    0x100 + rng.gen_range(0..4),
                    [256, 1024, 1024][rng.gen_range(0..3)]
                )
            }
            9 => format!(
                "rule add from 10.{}.0.0/16 lookup 100 pref {}",
                rng.gen_range(0..4),
                1000 + rng.gen_range(0..5)
            ),
            10 => {
                let (g, d) = gw4(&mut rng);
                format!("nexthop add id {} via {g} dev {d}", rng.gen_range(1..10))
            }
            11 => format!(
                "nexthop add id {} via 2001:db8:{}::7 dev {}",
                20 + rng.gen_range(0..3),
                rng.gen_range(1..3),
                ["va", "wa"][rng.gen_range(0..2)]
            ),
            12 => format!(
                "nexthop add id {} group {}/{},3",
                10 + rng.gen_range(0..2),
                rng.gen_range(1..5),
                rng.gen_range(5..10)
            ),
            13 => format!(
                "route del 10.{}.{}.0/24 table main",
                rng.gen_range(0..4),
                rng.gen_range(0..4)
            ),
            14 => format!("addr add 10.9.{}.1/24 dev xa", rng.gen_range(0..4)),
            _ => ["link set xb down", "nexthop del id 2", "rule del pref 1001"]
                [rng.gen_range(0..3)]
            .to_string(),
        };
        t.push_str(&line);
        t.push('\n');
    }
    t
}

/// Everything a router prints about itself, and its answers to `route get` probes.
fn describe(router: Router, seed: u64) -> String {
    let mut b = Batch::new(router);
    b.mode = BatchMode::Force;
    let mut q = String::from(
        "route show table all\n-6 route show table all\nrule show\n-6 rule show\n\
         nexthop show\naddr show\nlink show\n",
    );
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x9e7);
    for _ in 0..300 {
        let oif = ["", " oif va", " oif wa", " oif xa"][rng.gen_range(0..4)];
        q += &format!(
            "route get 10.{}.{}.{}{oif} fibmatch\n",
            rng.gen_range(0..4),
            rng.gen_range(0..4),
            rng.gen_range(0..256)
        );
        q += &format!(
            "route get 2001:db8:{:x}::{:x}{oif}\n",
            0x100 + rng.gen_range(0..4),
            rng.gen_range(1..0xffff)
        );
    }
    let out = b.run_text(&q);
    format!("{}\n--\n{}", out.stdout, out.stderr)
}

fn built(seed: u64) -> Router {
    let mut b = Batch::new(Router::new());
    b.mode = BatchMode::Force;
    assert!(b.run_text(veths::THREE_VETHS).success());
    b.run_text(&lines(seed, 400));
    b.router
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_loaded_snapshot_answers_as_the_saved_router(seed in any::<u64>()) {
        let router = built(seed);
        let bytes = snapshot::to_bytes(&router);
        let loaded = snapshot::from_bytes(&bytes).expect("its own snapshot loads");
        prop_assert_eq!(snapshot::to_bytes(&loaded), bytes, "a reload saves the same bytes");
        prop_assert_eq!(describe(loaded, seed), describe(router, seed));
    }
}

/// The random routers hold what snapshots must carry (taken together, as the property test
/// takes them): next-hop objects and groups, routes through them, rules, several tables,
/// IPv6 ECMP legs.
#[test]
fn the_random_routers_hold_every_kind_of_state() {
    let text: String = (0..8).map(|seed| describe(built(seed), 0)).collect();
    for want in [
        "nhid",
        "table 100",
        "\tnexthop via 2001",
        "lookup 100",
        "group",
    ] {
        assert!(
            text.contains(want),
            "no {want:?} in the routers of seeds 0..8"
        );
    }
}

/// A router built from a loaded snapshot goes on as the saved one would.
#[test]
fn a_loaded_router_takes_further_changes_alike() {
    let router = built(7);
    let loaded = snapshot::from_bytes(&snapshot::to_bytes(&router)).unwrap();
    let more = lines(8, 200);
    let (mut a, mut b) = (Batch::new(router), Batch::new(loaded));
    a.mode = BatchMode::Force;
    b.mode = BatchMode::Force;
    let (x, y) = (a.run_text(&more), b.run_text(&more));
    assert_eq!(
        (x.stdout, x.stderr, x.failed),
        (y.stdout, y.stderr, y.failed)
    );
    assert_eq!(describe(a.router, 9), describe(b.router, 9));
}

#[test]
fn every_truncation_is_an_error_that_says_so() {
    let bytes = snapshot::to_bytes(&built(3));
    for n in 0..bytes.len() {
        let e = snapshot::from_bytes(&bytes[..n]).expect_err("truncated");
        assert!(
            matches!(
                e.kind,
                SnapshotErrorKind::Truncated { .. } | SnapshotErrorKind::NotASnapshot
            ),
            "{n}: {e}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        snapshot::from_bytes(&longer).unwrap_err().kind,
        SnapshotErrorKind::TrailingBytes
    ));
}

#[test]
fn damage_foreign_files_and_other_versions_are_refused_by_name() {
    let bytes = snapshot::to_bytes(&built(4));
    let mut damaged = bytes.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    assert!(matches!(
        snapshot::from_bytes(&damaged).unwrap_err().kind,
        SnapshotErrorKind::Checksum
    ));
    let mut other = bytes.clone();
    other[8] = 99;
    let e = snapshot::from_bytes(&other).unwrap_err();
    assert!(e.to_string().contains("format version 99"), "{e}");
    assert!(matches!(
        snapshot::from_bytes(b"route add 10.0.0.0/8 dev lo\n")
            .unwrap_err()
            .kind,
        SnapshotErrorKind::NotASnapshot
    ));
    // Files are named in their errors, and a missing one is an I/O error.
    let dir = std::env::temp_dir().join(format!("fibre-snapshot-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("damaged.snap");
    std::fs::write(&path, &damaged).unwrap();
    let e = snapshot::load(&path).unwrap_err();
    assert!(
        e.to_string().contains("damaged.snap") && e.to_string().contains("checksum"),
        "{e}"
    );
    let e = snapshot::load(&dir.join("missing.snap")).unwrap_err();
    assert!(matches!(e.kind, SnapshotErrorKind::Io(_)), "{e}");
    snapshot::save(&built(4), &path).unwrap();
    assert!(snapshot::load(&path).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bodies altered behind a checksum that fits them (as a hand-made file could be): each
/// decodes to a router that hangs together or is refused; none panics.
#[test]
fn altered_bodies_with_fitting_checksums_never_panic() {
    let bytes = snapshot::to_bytes(&built(5));
    let mut rng = SmallRng::seed_from_u64(11);
    let (mut refused, mut loaded) = (0, 0);
    for _ in 0..3000 {
        let mut b = bytes.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(24..b.len());
            b[i] = rng.gen();
        }
        let crc = crc32fast::hash(&b[24..]).to_le_bytes();
        b[20..24].copy_from_slice(&crc);
        match snapshot::from_bytes(&b) {
            Ok(r) => {
                // What loads is a router: it saves again and answers.
                let _ = snapshot::to_bytes(&r);
                let _ = describe(r, 1);
                loaded += 1;
            }
            Err(e) => {
                assert!(
                    matches!(
                        e.kind,
                        SnapshotErrorKind::Corrupt(_) | SnapshotErrorKind::Inconsistent(_)
                    ),
                    "{e}"
                );
                refused += 1;
            }
        }
    }
    assert!(refused > 0, "{refused} refused, {loaded} loaded");
}
