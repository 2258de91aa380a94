//! The devices most tests start from, as `ip -batch` lines: three veth pairs, `va`, `wa` and
//! `xa` up (`xb` down: `xa` has no carrier, so routes through it are `linkdown`), with one
//! IPv4 subnet on each and IPv6 subnets on `va` and `wa`. Tests append what they need more.
pub const THREE_VETHS: &str = "\
link set lo up
link add va type veth peer name vb
link add wa type veth peer name wb
link add xa type veth peer name xb
link set va up
link set vb up
link set wa up
link set wb up
link set xa up
addr add 192.0.2.1/24 dev va
addr add 198.51.100.1/24 dev wa
addr add 203.0.113.1/24 dev xa
addr add 2001:db8:1::1/64 dev va nodad
addr add 2001:db8:2::1/64 dev wa nodad
";

/// A namespace configured with `setup` (`ip -batch`), once carrier and the IPv6 prefix routes,
/// which the kernel brings up on its own time, have settled.
#[allow(dead_code)] // Tests without the kernel use the devices only.
pub fn namespace(tag: &str, setup: &str) -> kernel_oracle::Netns {
    let ns = kernel_oracle::Netns::create(tag).expect("namespace");
    let out = ns.ip_batch_str(&[], setup).expect("ip -batch");
    assert!(out.success, "{}", out.stderr);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    ns
}
