//! Arbitrary prefixes and ids through the public FIB API (`PrefixSet`, `Fib`, `Poptrie`): no
//! panic, no out-of-bounds read, ids above `MAX_ID` refused, answers those of a linear scan.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/fibre/tests/support/fib_ops.rs"]
mod fib_ops;

fuzz_target!(|data: &[u8]| fib_ops::run_both(data));
