//! Prefix parsing never panics; what parses prints back to itself.
#![no_main]
use fibre::Prefix;
use libfuzzer_sys::fuzz_target;
use std::net::{Ipv4Addr, Ipv6Addr};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(p) = text.parse::<Prefix<Ipv4Addr>>() {
        assert_eq!(p.to_string().parse::<Prefix<Ipv4Addr>>(), Ok(p));
    }
    if let Ok(p) = text.parse::<Prefix<Ipv6Addr>>() {
        assert_eq!(p.to_string().parse::<Prefix<Ipv6Addr>>(), Ok(p));
    }
    if let Err(e) = Prefix::<Ipv6Addr>::parse_masked(text) {
        assert_eq!(e.text, text, "errors name the text");
    }
});
