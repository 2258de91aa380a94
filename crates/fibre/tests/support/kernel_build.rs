//! A router modelling the oracle's kernel build, for tests that compare fibre with the live
//! kernel (see `kernel_oracle::has_ipv6_multicast_routing`).
use fibre::Router;

/// A new router whose model of the kernel build is the running kernel's.
pub fn router_like_the_kernel() -> Router {
    let mut router = Router::new();
    router.set_ipv6_multicast_routing(kernel_oracle::has_ipv6_multicast_routing());
    router
}
