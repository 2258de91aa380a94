//! The live Linux kernel, confined to a network namespace this crate creates, used as an oracle for
//! route lookups.
//!
//! fibre reimplements the kernel's FIB in userspace; the only trustworthy definition of "correct" is
//! what the kernel itself answers for the same tables, rules and probe. A private namespace keeps the
//! host's routing untouched and lets tests build arbitrary tables with plain `ip` batch files, while
//! [`Oracle`] asks `RTM_GETROUTE` over netlink, pipelined, so that differential tests can afford
//! hundreds of thousands of probes.

#![warn(missing_docs)]

mod netns;
mod oracle;

pub use netns::{skip_or_fail, unavailable_reason, BatchOutcome, Netns, REQUIRE_ENV};
pub use oracle::{Answer, KernelNextHop, KernelRoute, Oracle, Probe};
