//! The fuzz targets' properties on stable Rust, so that `make test` exercises them: no input
//! makes the prefix or batch parsers panic, and every failing line is reported with its number.
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::{Prefix, Router};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Words ip knows, addresses and numbers: random lines made of them get deep into the parser.
const WORDS: &[&str] = &[
    "route",
    "rule",
    "link",
    "addr",
    "add",
    "del",
    "append",
    "prepend",
    "replace",
    "change",
    "get",
    "show",
    "flush",
    "via",
    "dev",
    "veth0",
    "veth1",
    "lo",
    "nosuch",
    "table",
    "100",
    "main",
    "local",
    "metric",
    "0",
    "4294967295",
    "4294967296",
    "tos",
    "0x10",
    "from",
    "to",
    "src",
    "nexthop",
    "weight",
    "0",
    "257",
    "blackhole",
    "unreachable",
    "prohibit",
    "throw",
    "local",
    "pref",
    "high",
    "10.0.0.0/8",
    "10.0.0.1",
    "10.0.0.2",
    "2001:db8::/32",
    "2001:db8::2",
    "default",
    "all",
    "fwmark",
    "0x10/0xff",
    "iif",
    "oif",
    "goto",
    "nop",
    "lookup",
    "not",
    "sport",
    "dport",
    "1-1024",
    "ipproto",
    "tcp",
    "uidrange",
    "1-2",
    "fibmatch",
    "mark",
    "uid",
    "-6",
    "-4",
    "type",
    "veth",
    "peer",
    "name",
    "up",
    "down",
    "brd",
    "+",
    "noprefixroute",
    "proto",
    "static",
    "scope",
    "link",
    "onlink",
    "mtu",
    "suppress_prefixlength",
    "#",
    "\"",
    "/",
    "-",
    "",
    ":",
    "::",
    "1.2.3.4/33",
    "10.0.0.1/8",
];

fn setup() -> Batch {
    let mut b = Batch::new(Router::new());
    b.mode = BatchMode::Force;
    let ok = b.run_text("link set lo up\nlink add veth0 type veth peer name veth1\nlink set veth0 up\nlink set veth1 up\naddr add 10.0.0.1/24 dev veth0\naddr add 2001:db8::1/64 dev veth0\n");
    assert!(ok.success());
    b
}

fn check(batch: &mut Batch, text: &str) {
    let out = batch.run_text(text);
    for (i, n) in out.failed.iter().enumerate() {
        // A syntax error ends the batch as ip exits: it is the last, without "Command failed".
        let last = i + 1 == out.failed.len();
        assert!(
            out.stderr.contains(&format!("Command failed -:{n}")) || last,
            "line {n} reported: {}",
            out.stderr
        );
    }
    let lines = out
        .stderr
        .lines()
        // Some of ip's messages end in a newline of their own, which leaves an empty line; a
        // warning is no failure (`route get 10.0.0.1/8` warns of the length and answers).
        .filter(|l| !l.starts_with("Command failed") && !l.starts_with("Warning:") && !l.is_empty())
        .count();
    assert_eq!(
        lines,
        out.failed.len(),
        "one message per failed line: {}",
        out.stderr
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn prefix_parsing_never_panics(text in "\\PC{0,48}") {
        if let Ok(p) = text.parse::<Prefix<Ipv4Addr>>() {
            prop_assert_eq!(p.to_string().parse::<Prefix<Ipv4Addr>>(), Ok(p));
        }
        if let Ok(p) = text.parse::<Prefix<Ipv6Addr>>() {
            prop_assert_eq!(p.to_string().parse::<Prefix<Ipv6Addr>>(), Ok(p));
        }
        if let Err(e) = Prefix::<Ipv6Addr>::parse_masked(&text) {
            prop_assert_eq!(e.text, text);
        }
    }

    #[test]
    fn batch_lines_of_known_words_never_panic(lines in prop::collection::vec(prop::collection::vec(prop::sample::select(WORDS), 0..14), 1..6)) {
        let mut batch = setup();
        let text: String = lines.iter().map(|l| l.join(" ") + "\n").collect();
        check(&mut batch, &text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let mut batch = setup();
        check(&mut batch, &text);
    }
}
