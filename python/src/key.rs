//! Keys as Python gives them (text, int, packed bytes, `(network, length)`, `ipaddress`
//! objects), turned into a prefix of one family: the family is chosen here, once.
use fibre::prefix::Prefix;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyInt, PyString, PyTuple};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A prefix of either family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// IPv4.
    V4(Prefix<Ipv4Addr>),
    /// IPv6.
    V6(Prefix<Ipv6Addr>),
}

impl Key {
    /// A host prefix (/32, /128) for `ip`.
    pub fn host(ip: IpAddr) -> Key {
        match ip {
            IpAddr::V4(a) => Key::V4(Prefix::host(a)),
            IpAddr::V6(a) => Key::V6(Prefix::host(a)),
        }
    }

    /// `ip`/`len`, host bits masked; a length past the family's width is a `ValueError`.
    pub fn new(ip: IpAddr, len: u8, shown: &dyn std::fmt::Display) -> PyResult<Key> {
        let too_long = |w: u8| {
            PyValueError::new_err(format!(
                "{shown}: prefix length {len} is longer than {w} bits"
            ))
        };
        Ok(match ip {
            IpAddr::V4(a) => Key::V4(Prefix::from_bits(u32::from(a), len).ok_or(too_long(32))?),
            IpAddr::V6(a) => Key::V6(Prefix::from_bits(u128::from(a), len).ok_or(too_long(128))?),
        })
    }

    /// The prefix as text, as pytricia and py-radix print it (`10.0.0.0/8`).
    pub fn text(&self) -> String {
        match self {
            Key::V4(p) => p.to_string(),
            Key::V6(p) => p.to_string(),
        }
    }
}

/// Parses an address as text (`192.0.2.1`, `2001:db8::1`); `what` names the input in errors.
pub fn parse_ip(text: &str, what: &dyn std::fmt::Display) -> PyResult<IpAddr> {
    text.trim().parse::<IpAddr>().map_err(|_| {
        PyValueError::new_err(format!("{what}: \"{text}\" is not an IPv4 or IPv6 address"))
    })
}

/// Parses `address[/length]`, host bits masked (fibre's own prefix parser; the family is the
/// text's: a `:` means IPv6).
pub fn parse_prefix(text: &str) -> PyResult<Key> {
    let trimmed = text.trim();
    let key = if trimmed.contains(':') {
        Prefix::<Ipv6Addr>::parse_masked(trimmed).map(Key::V6)
    } else {
        Prefix::<Ipv4Addr>::parse_masked(trimmed).map(Key::V4)
    };
    key.map_err(|e| PyValueError::new_err(format!("key \"{text}\": {e}")))
}

/// An address from 4 or 16 packed bytes (network order).
pub fn packed_ip(bytes: &[u8]) -> PyResult<IpAddr> {
    match bytes.len() {
        4 => Ok(IpAddr::V4(Ipv4Addr::from(
            <[u8; 4]>::try_from(bytes).expect("4 bytes"),
        ))),
        16 => Ok(IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(bytes).expect("16 bytes"),
        ))),
        n => Err(PyValueError::new_err(format!(
            "a packed address has 4 (IPv4) or 16 (IPv6) bytes, not {n}"
        ))),
    }
}

/// An address from an `int` (IPv4, as pytricia reads one).
fn int_ip(v: &Bound<'_, PyAny>) -> PyResult<IpAddr> {
    let n: u64 = v.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "int key {v}: an int is an IPv4 address, 0 to 4294967295"
        ))
    })?;
    let n = u32::try_from(n).map_err(|_| {
        PyValueError::new_err(format!(
            "int key {n}: an int is an IPv4 address, 0 to 4294967295"
        ))
    })?;
    Ok(IpAddr::V4(Ipv4Addr::from(n)))
}

/// An address: text, `int` (IPv4), 4 or 16 packed bytes, or an `ipaddress` address.
pub fn address_of(v: &Bound<'_, PyAny>) -> PyResult<IpAddr> {
    if let Ok(s) = v.cast::<PyString>() {
        return parse_ip(s.to_str()?, &"address");
    }
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "an address is a str, an int (IPv4), 4 or 16 bytes or an ipaddress address, not bool",
        ));
    }
    if v.is_instance_of::<PyInt>() {
        return int_ip(v);
    }
    if v.hasattr("__index__")? && !v.hasattr("packed")? {
        // numpy's integer scalars and other integers that are not `int`.
        return int_ip(&v.call_method0("__index__")?);
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return packed_ip(b.as_bytes());
    }
    if let Ok(b) = v.cast::<PyByteArray>() {
        return packed_ip(&b.to_vec());
    }
    if v.hasattr("packed")? && v.hasattr("version")? && !v.hasattr("network_address")? {
        let packed = v.getattr("packed")?;
        return packed_ip(packed.cast::<PyBytes>()?.as_bytes());
    }
    Err(PyTypeError::new_err(format!(
        "an address is a str, an int (IPv4), 4 or 16 bytes or an ipaddress address, not {}",
        v.get_type().name()?
    )))
}

/// A prefix key: `address[/length]` text, an address in any form [`address_of`] takes (a host
/// prefix), `(address, length)`, or an `ipaddress` network or interface.
pub fn key_of(v: &Bound<'_, PyAny>) -> PyResult<Key> {
    if let Ok(s) = v.cast::<PyString>() {
        return parse_prefix(s.to_str()?);
    }
    if let Ok(t) = v.cast::<PyTuple>() {
        if t.len() != 2 {
            return Err(PyValueError::new_err(format!(
                "a tuple key is (address, length), not {} items",
                t.len()
            )));
        }
        let ip = address_of(&t.get_item(0)?)?;
        let len: u8 = t.get_item(1)?.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "tuple key: {} is not a prefix length",
                t.get_item(1).map(|x| x.to_string()).unwrap_or_default()
            ))
        })?;
        return Key::new(ip, len, &format_args!("key ({ip}, {len})"));
    }
    if v.hasattr("network_address")? && v.hasattr("prefixlen")? {
        let ip = address_of(&v.getattr("network_address")?)?;
        let len: u8 = v.getattr("prefixlen")?.extract()?;
        return Key::new(ip, len, &format_args!("key {v}"));
    }
    if v.hasattr("network")? && v.hasattr("ip")? {
        return key_of(&v.getattr("network")?);
    }
    Ok(Key::host(address_of(v)?))
}
