//! Adapters between fibre and the formats other tools speak; each behind a feature.
#[cfg(feature = "agentx")]
pub mod agentx;
#[cfg(feature = "iproute2")]
pub mod iproute2;
#[cfg(feature = "mrt")]
pub mod mrt;
#[cfg(feature = "netlink")]
pub mod netlink;
#[cfg(feature = "snapshot")]
pub mod snapshot;
