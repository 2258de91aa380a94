//! A table's slot: what a stored prefix maps to (its value, and its text made on first use).
use crate::key::Key;
use fibre::prefix::Prefix;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// A stored prefix's value and its text, made on first use. The prefix is kept packed (a
/// `Key` is 48 bytes, aligned for `u128`; a table holds a slot per prefix).
pub struct Slot {
    pub value: Py<PyAny>,
    text: OnceLock<Py<PyString>>,
    addr: [u8; 16],
    len: u8,
    v6: bool,
}

impl Slot {
    pub fn new(key: Key, value: Py<PyAny>) -> Slot {
        let mut addr = [0u8; 16];
        let (len, v6) = match key {
            Key::V4(p) => {
                addr[..4].copy_from_slice(&p.addr().octets());
                (p.len(), false)
            }
            Key::V6(p) => {
                addr = p.addr().octets();
                (p.len(), true)
            }
        };
        Slot {
            value,
            text: OnceLock::new(),
            addr,
            len,
            v6,
        }
    }

    /// The prefix stored in this slot.
    pub fn key(&self) -> Key {
        if self.v6 {
            Key::V6(Prefix::new(Ipv6Addr::from(self.addr), self.len))
        } else {
            let a = Ipv4Addr::from(<[u8; 4]>::try_from(&self.addr[..4]).expect("4 bytes"));
            Key::V4(Prefix::new(a, self.len))
        }
    }

    /// The prefix as a Python `str`, made once.
    pub fn text<'py>(&self, py: Python<'py>) -> &Py<PyString> {
        self.text
            .get_or_init(|| PyString::new(py, &self.key().text()).unbind())
    }
}
