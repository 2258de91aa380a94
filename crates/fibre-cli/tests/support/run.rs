//! Running the `fibre` command in tests: arguments, standard input, and what it printed.
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `fibre ARGS` with `stdin` as its standard input, to the end.
pub fn fibre(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fibre"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fibre");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    child.wait_with_output().expect("wait")
}

/// Output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
