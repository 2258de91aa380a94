//! Next-hop objects where no kernel is needed: what the kernel does that a scenario cannot show
//! well (its id counter, flush's order and count, rollback), and what fibre refuses as not
//! modelled. The kernel's own answers are checked in `kernel_scenarios` (nexthops.batch) and in
//! the differential test.
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::Router;

const SETUP: &str = "\
link set lo up
link add va type veth peer name vb
link add wa type veth peer name wb
link set va up
link set vb up
link set wa up
link set wb up
addr add 192.0.2.1/24 dev va
addr add 198.51.100.1/24 dev wa
";

fn batch(mode: BatchMode) -> Batch {
    let mut b = Batch::new(Router::new());
    b.mode = mode;
    let out = b.run_text(SETUP);
    assert!(out.success(), "{}", out.stderr);
    b
}

fn ids(b: &mut Batch) -> Vec<u32> {
    b.run_text("nexthop show")
        .stdout
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect()
}

/// `nh_find_unused_id` counts on from the last id it gave, not from the lowest free one.
#[test]
fn ids_are_handed_out_from_a_counter() {
    let mut b = batch(BatchMode::Force);
    let out = b.run_text(
        "nexthop add id 1 via 192.0.2.2 dev va
nexthop add id 2 via 192.0.2.3 dev va
nexthop add via 192.0.2.4 dev va
nexthop add via 192.0.2.5 dev va
nexthop del id 3
nexthop add via 192.0.2.6 dev va",
    );
    assert!(out.success(), "{}", out.stderr);
    assert_eq!(ids(&mut b), [1, 2, 4, 5]);
    // The counter had reached 2 when the first request without an id came: 3, then 4 (a taken
    // id skipped on the way), and after the delete 5, not the freed 3.
    let out = b.run_text("nexthop add via 192.0.2.7 dev va");
    assert!(out.success());
    assert_eq!(ids(&mut b), [1, 2, 4, 5, 6]);
}

/// `ip nexthop flush` deletes groups first, then the rest, and says how many went.
#[test]
fn flush_deletes_groups_first_and_counts() {
    let mut b = batch(BatchMode::Force);
    let out = b.run_text(
        "nexthop add id 1 via 192.0.2.2 dev va
nexthop add id 2 via 198.51.100.2 dev wa
nexthop add id 3 group 1/2
route add 10.0.0.0/8 nhid 3
nexthop flush dev wa
route show",
    );
    assert!(out.success(), "{}", out.stderr);
    // Only id 2 is on wa: the group shrinks to id 1 and its route stays.
    assert!(out.stdout.contains("Flushed 1 nexthops"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("10.0.0.0/8 nhid 3 via 192.0.2.2 dev va"),
        "{}",
        out.stdout
    );
    let out = b.run_text("nexthop flush\nnexthop flush\nroute show");
    assert!(out.stdout.contains("Flushed 2 nexthops"), "{}", out.stdout);
    assert!(out.stdout.contains("Nothing to flush"), "{}", out.stdout);
    assert!(!out.stdout.contains("10.0.0.0/8"), "{}", out.stdout);
}

/// A failed atomic batch leaves objects, their groups and the routes through them as they were.
#[test]
fn a_failed_atomic_batch_keeps_objects_and_routes() {
    let mut b = batch(BatchMode::Atomic);
    let out = b.run_text(
        "nexthop add id 1 via 192.0.2.2 dev va
nexthop add id 2 via 198.51.100.2 dev wa
nexthop add id 3 group 1/2
route add 10.0.0.0/8 nhid 3",
    );
    assert!(out.success(), "{}", out.stderr);
    let before = b.run_text("nexthop show\nroute show").stdout;
    let out = b.run_text(
        "nexthop replace id 1 via 192.0.2.9 dev va
nexthop del id 2
link set wb down
nexthop add via 192.0.2.10 dev va
route add 10.1.0.0/16 nhid 99",
    );
    assert!(out.rolled_back, "{}", out.stderr);
    assert_eq!(b.run_text("nexthop show\nroute show").stdout, before);
    // The id counter was rolled back too: the next id is the one the failed batch took.
    let out = b.run_text("nexthop add via 192.0.2.10 dev va\nnexthop show id 4");
    assert!(out.success(), "{}", out.stderr);
}

/// What fibre does not model is refused, saying so, and the line alone fails.
#[test]
fn what_is_not_modelled_is_refused_by_name() {
    let mut b = batch(BatchMode::Force);
    let out = b.run_text(
        "nexthop add id 1 via 192.0.2.2 dev va
nexthop add id 2 group 1 type resilient buckets 8
nexthop add id 3 via 192.0.2.2 fdb
nexthop add id 4 via 2001:db8::2 dev va
nexthop add id 5 group 1/4
route add 10.0.0.0/8 nhid 4
nexthop show",
    );
    assert_eq!(out.failed, [2, 3, 4, 5, 6], "{}", out.stderr);
    assert!(out.stderr.contains("\"resilient\""), "{}", out.stderr);
    assert!(out.stderr.contains("\"fdb\""), "{}", out.stderr);
    assert_eq!(ids(&mut b), [1]);
    let out = b.run_text(
        "addr add 2001:db8::1/64 dev va nodad
nexthop add id 4 via 2001:db8::2 dev va
nexthop add id 5 group 1/4
route add 10.0.0.0/8 nhid 4",
    );
    assert_eq!(out.failed, [3, 4], "{}", out.stderr);
    assert!(
        out.stderr
            .contains("Groups mixing IPv4 and IPv6 next hops are not modelled"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("IPv4 routes through IPv6 next hops are not modelled"),
        "{}",
        out.stderr
    );
}

/// Lookups through a group report its members with their weights; losing a member's device
/// shrinks the group under the route.
#[test]
fn routes_follow_their_group() {
    let mut b = batch(BatchMode::Force);
    let out = b.run_text(
        "nexthop add id 1 via 192.0.2.2 dev va
nexthop add id 2 via 198.51.100.2 dev wa
nexthop add id 3 group 1,2/2,5
route add 10.0.0.0/8 nhid 3
route get fibmatch 10.1.2.3
link set wa down
route get fibmatch 10.1.2.3
nexthop show",
    );
    assert!(out.success(), "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "10.0.0.0/8 nhid 3 ",
            "\tnexthop via 192.0.2.2 dev va weight 2 ",
            "\tnexthop via 198.51.100.2 dev wa weight 5 ",
            "10.0.0.0/8 nhid 3 via 192.0.2.2 dev va ",
            "id 1 via 192.0.2.2 dev va scope link ",
            "id 3 group 1,2 ",
        ]
    );
}

/// A replace the routes through the object refuse changes nothing, even inside a change set
/// that the caller then commits.
#[test]
fn a_refused_replace_inside_a_change_set_changes_nothing() {
    use fibre::io::iproute2::{parse_line, Command};
    let mut b = batch(BatchMode::Force);
    let out = b.run_text(
        "nexthop add id 1 dev va
route add 10.0.0.0/8 nhid 1 scope host
nexthop show
route show",
    );
    assert!(out.success(), "{}", out.stderr);
    let mut router = b.router;
    // A gateway under a host-scope route: "Route with host scope can not have a gateway".
    let Command::Apply(change) =
        parse_line("nexthop replace id 1 via 192.0.2.2 dev va", None, &router).unwrap()
    else {
        panic!("a change")
    };
    router.begin();
    let e = router.change(&change).expect_err("refused");
    assert!(e.to_string().contains("host scope"), "{e}");
    router.commit();
    let mut b = Batch::new(router);
    assert_eq!(b.run_text("nexthop show\nroute show").stdout, out.stdout);
}
