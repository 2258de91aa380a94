//! A router modelling the oracle's kernel build, for tests that compare fibre with the live
//! kernel: the test of the netlink mirror, which models the kernel it follows
//! (`fibre::io::netlink::kernel_has_ipv6_multicast_routing`), serves the oracle's too.
use fibre::Router;

/// A new router whose model of the kernel build is the running kernel's.
pub fn router_like_the_kernel() -> Router {
    let mut router = Router::new();
    router.set_ipv6_multicast_routing(fibre::io::netlink::kernel_has_ipv6_multicast_routing());
    router
}
