//! Batch lookups: addresses from numpy arrays or Python sequences, looked up in the compiled
//! FIBs with the GIL released, answered as slots (then as prefixes and values).
//!
//! The input is copied into vectors of keys while the GIL is held: another Python thread may
//! write to a numpy array at any time, and the lookup must not read memory that changes under
//! it.
use crate::key::address_of;
use crate::slot::Slot;
use fibre::fib::{PoptrieView, NO_ROUTE};
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The addresses of one batch, split by family. `None` positions mean "in input order".
#[derive(Default)]
pub struct Keys {
    n: usize,
    v4: Vec<u32>,
    v4_at: Option<Vec<u32>>,
    v6: Vec<u128>,
    v6_at: Option<Vec<u32>>,
}

/// `::ffff:a.b.c.d`: an IPv4 address in IPv6 clothes (the kernel routes it as IPv4).
fn mapped_v4(bits: u128) -> Option<u32> {
    Ipv6Addr::from(bits).to_ipv4_mapped().map(u32::from)
}

impl Keys {
    /// IPv6 addresses in input order; the IPv4-mapped ones (if `map`) taken out as IPv4.
    fn of_v6(bits: Vec<u128>, map: bool) -> Keys {
        if !map || !bits.iter().any(|&b| mapped_v4(b).is_some()) {
            return Keys {
                n: bits.len(),
                v6: bits,
                v6_at: None,
                ..Keys::default()
            };
        }
        let mut keys = Keys {
            n: bits.len(),
            v6_at: Some(Vec::new()),
            ..Keys::default()
        };
        for (i, b) in bits.into_iter().enumerate() {
            keys.push(i, b, false, map);
        }
        keys
    }

    fn push(&mut self, i: usize, bits: u128, v4: bool, map: bool) {
        let at = self.v4_at.get_or_insert_with(Vec::new);
        if v4 {
            self.v4.push(bits as u32);
            at.push(i as u32);
        } else if let Some(a) = mapped_v4(bits).filter(|_| map) {
            self.v4.push(a);
            at.push(i as u32);
        } else {
            self.v6.push(bits);
            self.v6_at.get_or_insert_with(Vec::new).push(i as u32);
        }
    }
}

fn index_error(i: usize, what: String) -> PyErr {
    PyValueError::new_err(format!("addrs[{i}]: {what}"))
}

/// `e` (raised for address `i`) with the address's index in front, of the same type.
fn at_index(py: Python<'_>, i: usize, e: PyErr) -> PyErr {
    let what = format!("addrs[{i}]: {}", e.value(py));
    if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) {
        pyo3::exceptions::PyTypeError::new_err(what)
    } else {
        PyValueError::new_err(what)
    }
}

/// Reads `addrs`: a numpy `uint32` array (IPv4), `uint64`/`int64` array of IPv4 integers,
/// an `(n, 16)` `uint8` array (packed IPv6, or IPv4-mapped), an `(n, 2)` `uint64` array (IPv6
/// as high and low words), or any sequence of addresses (`None` is a miss).
pub fn keys_of(addrs: &Bound<'_, PyAny>, map: bool) -> PyResult<Keys> {
    if let Ok(a) = addrs.extract::<PyReadonlyArray1<u32>>() {
        let v4 = match a.as_slice() {
            Ok(s) => s.to_vec(),
            Err(_) => a.as_array().iter().copied().collect(),
        };
        return Ok(Keys {
            n: v4.len(),
            v4,
            ..Keys::default()
        });
    }
    if let Ok(a) = addrs.extract::<PyReadonlyArray1<u64>>() {
        return wide_v4(a.as_array().iter().map(|&x| x as i128));
    }
    if let Ok(a) = addrs.extract::<PyReadonlyArray1<i64>>() {
        return wide_v4(a.as_array().iter().map(|&x| x as i128));
    }
    if let Ok(a) = addrs.extract::<PyReadonlyArray2<u8>>() {
        let shape = a.shape();
        if shape[1] != 16 {
            return Err(PyValueError::new_err(format!(
                "a uint8 array of addresses has 16 columns (packed IPv6), not {}",
                shape[1]
            )));
        }
        let bits: Vec<u128> = match a.as_slice() {
            Ok(s) => s
                .chunks_exact(16)
                .map(|r| u128::from_be_bytes(r.try_into().expect("16 bytes")))
                .collect(),
            Err(_) => a
                .as_array()
                .rows()
                .into_iter()
                .map(|row| {
                    let mut b = [0u8; 16];
                    b.iter_mut().zip(row.iter()).for_each(|(d, s)| *d = *s);
                    u128::from_be_bytes(b)
                })
                .collect(),
        };
        return Ok(Keys::of_v6(bits, map));
    }
    if let Ok(a) = addrs.extract::<PyReadonlyArray2<u64>>() {
        let shape = a.shape();
        if shape[1] != 2 {
            return Err(PyValueError::new_err(format!(
                "a uint64 array of IPv6 addresses has 2 columns (high and low words), not {}",
                shape[1]
            )));
        }
        let bits: Vec<u128> = match a.as_slice() {
            Ok(s) => s
                .chunks_exact(2)
                .map(|w| (u128::from(w[0]) << 64) | u128::from(w[1]))
                .collect(),
            Err(_) => {
                let view = a.as_array();
                (0..shape[0])
                    .map(|i| (u128::from(view[[i, 0]]) << 64) | u128::from(view[[i, 1]]))
                    .collect()
            }
        };
        return Ok(Keys::of_v6(bits, map));
    }
    if addrs.hasattr("dtype")? && addrs.hasattr("shape")? {
        let dtype = addrs.getattr("dtype")?;
        let shape = addrs.getattr("shape")?;
        if dtype.getattr("kind")?.extract::<String>()? != "O" {
            return Err(PyValueError::new_err(format!(
                "a numpy array of addresses is uint32 (IPv4), (n, 16) uint8 or (n, 2) uint64 \
                 (IPv6), or of objects (text), not {dtype} of shape {shape}"
            )));
        }
    }
    let mut keys = Keys {
        n: 0,
        v4_at: Some(Vec::new()),
        v6_at: Some(Vec::new()),
        ..Keys::default()
    };
    for (i, item) in addrs.try_iter()?.enumerate() {
        let item = item?;
        keys.n = i + 1;
        if item.is_none() {
            continue;
        }
        let ip = address_of(&item).map_err(|e| at_index(item.py(), i, e))?;
        match ip {
            IpAddr::V4(a) => keys.push(i, u128::from(u32::from(a)), true, map),
            IpAddr::V6(a) => keys.push(i, u128::from(a), false, map),
        }
    }
    Ok(keys)
}

/// IPv4 addresses given as wider integers: each must fit in 32 bits.
fn wide_v4(xs: impl Iterator<Item = i128>) -> PyResult<Keys> {
    let v4 = xs
        .enumerate()
        .map(|(i, x)| {
            u32::try_from(x).map_err(|_| {
                index_error(i, format!("{x} is not an IPv4 address (0 to 4294967295)"))
            })
        })
        .collect::<PyResult<Vec<u32>>>()?;
    Ok(Keys {
        n: v4.len(),
        v4,
        ..Keys::default()
    })
}

/// Addresses as text in Arrow's layout: address `i` is `data[offsets[i]..offsets[i + 1]]`;
/// where `valid` is given and false, a miss.
pub fn text_keys(
    offsets: &[i64],
    data: &[u8],
    valid: Option<&[bool]>,
    map: bool,
) -> PyResult<Keys> {
    let n = offsets.len().saturating_sub(1);
    if valid.is_some_and(|v| v.len() != n) {
        return Err(PyValueError::new_err("one validity flag per address"));
    }
    let mut keys = Keys {
        n,
        v4_at: Some(Vec::new()),
        v6_at: Some(Vec::new()),
        ..Keys::default()
    };
    for i in 0..n {
        if valid.is_some_and(|v| !v[i]) {
            continue;
        }
        let (a, b) = (offsets[i], offsets[i + 1]);
        let bytes = usize::try_from(a)
            .ok()
            .zip(usize::try_from(b).ok())
            .and_then(|(a, b)| data.get(a..b))
            .ok_or_else(|| index_error(i, format!("offsets {a}..{b} are outside the data")))?;
        let text =
            std::str::from_utf8(bytes).map_err(|_| index_error(i, "not UTF-8 text".into()))?;
        // Trimmed, as text in a list is (`key::parse_ip`).
        match text.trim().parse::<IpAddr>() {
            Ok(IpAddr::V4(a)) => keys.push(i, u128::from(u32::from(a)), true, map),
            Ok(IpAddr::V6(a)) => keys.push(i, u128::from(a), false, map),
            Err(_) => {
                return Err(index_error(
                    i,
                    format!("\"{text}\" is not an IPv4 or IPv6 address"),
                ))
            }
        }
    }
    Ok(keys)
}

/// The slot of each of `keys`' longest match in `v4` and `v6` ([`NO_ROUTE`] for none), in
/// input order. Runs without the GIL: it reads only the keys and the published versions.
pub fn lookup(
    v4: Option<&PoptrieView<Ipv4Addr>>,
    v6: Option<&PoptrieView<Ipv6Addr>>,
    keys: &Keys,
) -> Vec<u32> {
    let mut out = vec![NO_ROUTE; keys.n];
    // A family without keys is not asked (its keys' positions, `None`, would mean all).
    if let Some(view) = v4.filter(|_| !keys.v4.is_empty()) {
        match &keys.v4_at {
            None => view.lookup_bulk(&keys.v4, &mut out),
            Some(at) => {
                let mut part = vec![NO_ROUTE; keys.v4.len()];
                view.lookup_bulk(&keys.v4, &mut part);
                at.iter().zip(part).for_each(|(&i, s)| out[i as usize] = s);
            }
        }
    }
    if let Some(view) = v6.filter(|_| !keys.v6.is_empty()) {
        match &keys.v6_at {
            None => view.lookup_bulk(&keys.v6, &mut out),
            Some(at) => {
                let mut part = vec![NO_ROUTE; keys.v6.len()];
                view.lookup_bulk(&keys.v6, &mut part);
                at.iter().zip(part).for_each(|(&i, s)| out[i as usize] = s);
            }
        }
    }
    out
}

/// Slots as a numpy `int32` array, `-1` for no match.
pub fn slot_array<'py>(py: Python<'py>, slots: &[u32]) -> Bound<'py, PyArray1<i32>> {
    let v: Vec<i32> = slots
        .iter()
        .map(|&s| if s == NO_ROUTE { -1 } else { s as i32 })
        .collect();
    PyArray1::from_vec(py, v)
}

/// Numpy object arrays of the matched prefixes and of their values.
pub type Answers<'py> = (
    Bound<'py, PyArray1<Py<PyAny>>>,
    Bound<'py, PyArray1<Py<PyAny>>>,
);

/// The buffers of an Arrow `int32` array of slots, and its null count.
pub type ArrowParts<'py> = (Bound<'py, PyArray1<i32>>, Bound<'py, PyArray1<u8>>, usize);

/// The matched prefixes (text) and values of `slots`, as numpy object arrays (`None` for no
/// match).
pub fn gather<'py>(table: &[Option<Slot>], py: Python<'py>, slots: &[u32]) -> Answers<'py> {
    let mut prefixes = Vec::with_capacity(slots.len());
    let mut values = Vec::with_capacity(slots.len());
    for &s in slots {
        match table.get(s as usize).and_then(|s| s.as_ref()) {
            Some(slot) => {
                prefixes.push(slot.text(py).clone_ref(py).into_any());
                values.push(slot.value.clone_ref(py));
            }
            None => {
                prefixes.push(py.None());
                values.push(py.None());
            }
        }
    }
    (
        PyArray1::from_vec(py, prefixes),
        PyArray1::from_vec(py, values),
    )
}

/// Slots as the two buffers of an Arrow `int32` array: the values (0 where none) and the
/// validity bitmap (least significant bit first), with the count of nulls.
pub fn arrow_parts<'py>(py: Python<'py>, slots: &[u32]) -> ArrowParts<'py> {
    // Without branches: hits and misses come in random order, and a mispredicted branch per
    // address would cost more than the rest of this pass.
    let mut bitmap = Vec::with_capacity(slots.len().div_ceil(8));
    let mut values = Vec::with_capacity(slots.len());
    let mut hits = 0usize;
    for group in slots.chunks(8) {
        let mut byte = 0u8;
        for (bit, &s) in group.iter().enumerate() {
            let hit = s != NO_ROUTE;
            values.push(if hit { s as i32 } else { 0 });
            byte |= (hit as u8) << bit;
        }
        hits += byte.count_ones() as usize;
        bitmap.push(byte);
    }
    let nulls = slots.len() - hits;
    (
        PyArray1::from_vec(py, values),
        PyArray1::from_vec(py, bitmap),
        nulls,
    )
}
