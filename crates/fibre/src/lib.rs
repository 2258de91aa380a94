//! fibre: the Linux routing table, in userspace.
//!
//! A tour, bottom up:
//! - [`addr`] and [`prefix`]: addresses as fixed-width integer keys, one generic implementation
//!   for IPv4 (`u32`) and IPv6 (`u128`).
//! - [`route`] and [`nexthop`]: routes with the kernel's attributes; next-hop groups interned and
//!   shared, referred to by small ids.
//! - [`packed`] and [`prefix_map`]: prefixes packed into small ordered keys, and the map the RIB
//!   keeps its destinations in (a B-tree of packed prefixes over stable value slots).
//! - [`fib`]: compiled lookup structures (Poptrie) built from a RIB and patched as it changes,
//!   published RCU-style to lock-free readers.
//! - [`rib`]: one table of one family, a prefix map of ordered route lists with the
//!   kernel's insert, delete and selection rules (`rib::ipv4`, `rib::ipv6`).
//! - [`rules`]: policy rules (`ip rule`).
//! - [`router`]: links, addresses, tables and rules together; `ip route get` with the kernel's
//!   answers; atomic change sets.
//! - [`io`]: adapters; `io::iproute2` reads and writes what `ip` reads and writes.
//!
//! ```
//! use fibre::io::iproute2::Batch;
//! let mut batch = Batch::new(fibre::Router::new());
//! let out = batch.run_text("link add veth0 type veth peer name veth1\n\
//!     link set veth0 up\n\
//!     link set veth1 up\n\
//!     addr add 192.0.2.1/24 dev veth0\n\
//!     route add 198.51.100.0/24 via 192.0.2.254\n\
//!     route get 198.51.100.7 fibmatch\n");
//! assert_eq!(out.stdout.trim(), "198.51.100.0/24 via 192.0.2.254 dev veth0");
//! ```
#![deny(missing_docs)]
pub mod addr;
pub mod error;
pub mod fib;
pub mod flow;
pub mod io;
pub mod link;
pub mod nexthop;
pub mod packed;
pub mod prefix;
pub mod prefix_map;
pub mod rib;
pub mod route;
pub mod router;
pub mod rules;

pub use addr::{Address, Family};
pub use error::{ChangeError, Errno};
pub use flow::Flow;
pub use prefix::Prefix;
pub use rib::Rib;
pub use route::{Route, RouteSpec, RouteType};
pub use router::{Change, FamilyChange, RouteAnswer, RouteQuery, Router, RouterFamily};

/// The README's code, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
