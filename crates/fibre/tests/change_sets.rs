//! Change sets are all or nothing: a failure anywhere leaves links, addresses, routes, rules and
//! the interned next hops exactly as they were.
use fibre::io::iproute2::{parse_line, Batch, BatchMode, Command};
use fibre::{Change, Errno, Router};
use proptest::prelude::*;

fn router() -> Router {
    let mut b = Batch::new(Router::new());
    let out = b.run_text(
        "link set lo up\nlink add veth0 type veth peer name veth1\nlink set veth0 up\nlink set veth1 up\n\
         addr add 10.0.0.1/24 dev veth0\naddr add 2001:db8::1/64 dev veth0\n\
         route add 198.51.100.0/24 via 10.0.0.2\nroute add 2001:db8:1::/48 via 2001:db8::2\nrule add from 10.9.0.0/16 lookup 7 pref 5\n",
    );
    assert!(out.success(), "{}", out.stderr);
    b.router
}

/// Everything observable, for before/after comparisons.
fn state(r: &Router) -> String {
    let mut b = Batch::new(r.clone());
    b.run_text("route show table all\n-6 route show table all\nrule show\n-6 rule show\nlink show\naddr show\n").stdout
        + &format!("groups {} {}", r.v4.nhs.len(), r.v6.nhs.len())
}

fn changes(r: &Router, lines: &str) -> Vec<Change> {
    lines
        .lines()
        .map(|l| match parse_line(l, None, r).expect("parses") {
            Command::Apply(c) => c,
            other => panic!("not a change: {other:?}"),
        })
        .collect()
}

#[test]
fn a_failing_change_rolls_back_the_whole_set() {
    let mut r = router();
    let before = state(&r);
    let set = changes(
        &r,
        "route add 203.0.113.0/24 via 10.0.0.3\nroute replace 198.51.100.0/24 via 10.0.0.4\nroute del 2001:db8:1::/48\nrule add from 10.8.0.0/16 lookup 8 pref 6\naddr del 10.0.0.1/24 dev veth0\nroute add 198.51.100.0/24 via 10.0.0.9",
    );
    // The last change fails: the address it needs for its gateway was removed by the one before.
    let (i, e) = r.apply(&set).unwrap_err();
    assert_eq!(i, 5);
    assert_eq!(e.errno, Errno::EINVAL);
    assert_eq!(state(&r), before);
    // Without the failing change the same set lands.
    r.apply(&set[..5]).unwrap();
    assert_ne!(state(&r), before);
}

#[test]
fn atomic_batches_keep_nothing_of_a_failed_batch() {
    let r = router();
    let before = state(&r);
    let mut b = Batch::new(r);
    b.mode = BatchMode::Atomic;
    let out = b.run_text("route add 203.0.113.0/24 via 10.0.0.3\nlink add veth2 type veth peer name veth3\nroute add 192.0.2.0/24 dev nosuch\n");
    assert_eq!(out.failed, vec![3]);
    assert!(out.rolled_back);
    assert_eq!(state(&b.router), before);
    // ip's own mode keeps what came before the failing line.
    b.mode = BatchMode::StopOnError;
    let out = b.run_text("route add 203.0.113.0/24 via 10.0.0.3\nroute add 192.0.2.0/24 dev nosuch\nroute add 192.0.3.0/24 via 10.0.0.3\n");
    assert_eq!(out.failed, vec![2]);
    let shown = b.run_text("route show\n").stdout;
    assert!(
        shown.contains("203.0.113.0/24") && !shown.contains("192.0.3.0/24"),
        "{shown}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Random change sets ending in a change that must fail: nothing of them stays.
    #[test]
    fn rollback_restores_everything(picks in prop::collection::vec(0usize..12, 0..12)) {
        const LINES: [&str; 12] = [
            "route add 203.0.113.0/24 via 10.0.0.3",
            "route append 198.51.100.0/24 via 10.0.0.5",
            "route prepend 198.51.100.0/24 nexthop via 10.0.0.6 weight 2 nexthop via 10.0.0.7",
            "route del 198.51.100.0/24",
            "route replace 2001:db8:1::/48 via 2001:db8::3",
            "route append 2001:db8:1::/48 via 2001:db8::4",
            "route del 2001:db8:1::/48",
            "rule add from 10.8.0.0/16 lookup 8 pref 6",
            "rule del pref 5",
            "addr add 10.0.1.1/24 dev veth1",
            "link set veth1 down",
            "route add blackhole 2001:db8:5::/48 table 9",
        ];
        let mut r = router();
        let before = state(&r);
        let mut set = Vec::new();
        for p in picks {
            // Some picks fail on their own in a given state; keep those that apply, in order.
            let c = changes(&r, LINES[p]).remove(0);
            let mut attempt = set.clone();
            attempt.push(c);
            if r.clone().apply(&attempt).is_ok() {
                set = attempt;
            }
        }
        set.push(Change::LinkDel { dev: 999 });
        prop_assert!(r.apply(&set).is_err());
        prop_assert_eq!(state(&r), before);
    }
}
