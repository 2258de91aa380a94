//! Batch lines never panic, and a failing line is reported with its number and a message.
#![no_main]
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::Router;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut batch = Batch::new(Router::new());
    batch.mode = BatchMode::Force;
    batch.json = true;
    let setup = "link add veth0 type veth peer name veth1\nlink set veth0 up\nlink set veth1 up\naddr add 10.0.0.1/24 dev veth0\naddr add 2001:db8::1/64 dev veth0\n";
    assert!(batch.run_text(setup).success());
    let out = batch.run_text(text);
    for n in &out.failed {
        assert!(out.stderr.contains(&format!("Command failed -:{n}")));
    }
});
