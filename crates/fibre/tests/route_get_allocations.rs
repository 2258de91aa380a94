//! `route get` answers without allocating (issue 15): the answer holds the matched route and
//! up to two next hops inline, and the lookup path walks on the stack. The oracle is the
//! allocator itself: this test binary counts every allocation made on the test's thread.
use fibre::io::iproute2::Batch;
use fibre::{RouteQuery, Router};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed on unchanged to the system allocator; the count is a
// thread-local `Cell` without a destructor, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCATIONS.with(|c| c.get());
    let r = f();
    (r, ALLOCATIONS.with(|c| c.get()) - before)
}

fn router() -> Router {
    let mut b = Batch::new(Router::new());
    let out = b.run_text(
        "link set lo up\nlink add veth0 type veth peer name veth1\nlink set veth0 up\n\
         link set veth1 up\naddr add 10.0.0.1/24 dev veth0\naddr add 2001:db8::1/64 dev veth0\n\
         route add 198.51.100.0/24 via 10.0.0.2\n\
         route add 203.0.113.0/24 nexthop via 10.0.0.2 nexthop via 10.0.0.3 weight 2\n\
         route add 192.0.2.0/24 tos 0x10 via 10.0.0.3\n\
         route add 2001:db8:1::/48 via 2001:db8::2\n\
         route add 2001:db8:2::/48 nexthop via 2001:db8::2 nexthop via 2001:db8::3\n",
    );
    assert!(out.success(), "{}", out.stderr);
    b.router
}

fn query(text: &str) -> RouteQuery<IpAddr> {
    RouteQuery::to(text.parse().expect("an address"))
}

#[test]
fn route_get_does_not_allocate() {
    let r = router();
    let veth1 = r.links().by_name("veth1").expect("veth1").index;
    let mut cases: Vec<(&str, RouteQuery<IpAddr>)> = vec![
        ("IPv4 via a gateway", query("198.51.100.7")),
        ("IPv4 multipath", query("203.0.113.9")),
        ("IPv4 connected", query("10.0.0.9")),
        ("IPv4 local", query("10.0.0.1")),
        ("IPv4 without a route", query("233.252.0.1")),
        ("IPv4 unreachable", query("100.64.0.1")),
        ("IPv6 via a gateway", query("2001:db8:1::5")),
        ("IPv6 ECMP siblings", query("2001:db8:2::5")),
        ("IPv6 connected", query("2001:db8::9")),
    ];
    let mut tos = query("192.0.2.4");
    tos.tos = 0x10;
    cases.push(("IPv4 TOS route (the RIB's walk)", tos));
    let mut fibmatch = query("198.51.100.7");
    fibmatch.fibmatch = true;
    cases.push(("IPv4 fibmatch", fibmatch));
    let mut input = query("198.51.100.7");
    input.iif = Some(veth1);
    input.src = Some("10.0.0.5".parse().unwrap());
    cases.push(("IPv4 input path", input));
    let mut answered = 0;
    for (what, q) in &cases {
        let (outcome, n) = match q.dst {
            IpAddr::V4(_) => {
                let q4 = q.narrow::<Ipv4Addr>().expect("IPv4");
                allocations(|| r.route_get(&q4).map(|a| a.route.is_some()))
            }
            IpAddr::V6(_) => {
                let q6 = q.narrow::<Ipv6Addr>().expect("IPv6");
                allocations(|| r.route_get(&q6).map(|a| a.route.is_some()))
            }
        };
        assert_eq!(n, 0, "{what}: route get allocated {n} times ({outcome:?})");
        answered += usize::from(outcome == Ok(true));
    }
    assert_eq!(
        answered, 10,
        "all but the two destinations without a route match one"
    );
    // The count is live: spelling the answer out as a `RouteSpec` allocates its hop list.
    let a = r
        .route_get(&query("198.51.100.7").narrow::<Ipv4Addr>().unwrap())
        .expect("answered");
    let (spec, n) = allocations(|| a.route_spec());
    assert!(spec.is_some() && n > 0, "the counter sees allocations");
}
