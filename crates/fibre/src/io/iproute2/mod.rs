//! iproute2's language: `ip -batch` lines in, `ip` text and `ip -j` JSON out.
//!
//! Raw text and checked data are different types: [`parse`] turns a line into a [`Command`]
//! (naming the token it could not read), validated against the router's current devices;
//! [`Batch`] runs commands with ip's batch semantics, [`Query`] the ones that only read (over a
//! borrowed router); [`format`](mod@format) prints what `ip` prints.
pub mod batch;
pub mod format;
pub mod names;
pub mod parse;
pub mod query;

pub use batch::{Batch, BatchMode, BatchOutput, Source};
pub use parse::{parse_line, read_line, Command, ParseError, ReadLine};
pub use query::Query;
