//! `fibre bench`: the Linux route-lookup study, reproduced on this machine, with fibre, the
//! kernel itself and peer libraries measured side by side in one run.
//!
//! The study's terms: scenarios ([`scenario`]) generated deterministically from a seed; for each
//! scenario and table size, the lookup time of successful lookups (median and median absolute
//! deviation), tree depth, insertion time and memory; on the full view, throughput and
//! dependent-chain latency for W1 (addresses inside the table's prefixes) and W2 (uniform
//! addresses). Engines ([`engine`]) are either Rust crates linked in, or peer harnesses (kernel,
//! DPDK, Go) run as programs that read the same files (`bench/harness/PROTOCOL.md`). Every
//! engine's answers are checked against fibre's before anything is timed.
pub mod alloc;
pub mod cli;
pub mod engine;
pub mod host;
pub mod key;
pub mod mirror;
pub mod progress;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod snmp;
pub mod stats;
pub mod study;
pub mod updates;
pub mod workload;

pub use study::{run, StudyConfig};
