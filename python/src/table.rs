//! `PrefixTable`: prefixes of both families mapped to Python objects, with pytricia's
//! interface (longest-prefix `t[addr]`, exact `has_key`, `parent`, `children`, ...) and the
//! building blocks of py-radix's and of batch lookups (the Python class in `fibre/_table.py`
//! adds those on top).
//!
//! Each stored prefix owns a slot (a small id): the family's trie (and, after the first batch
//! lookup, its compiled FIB) maps prefixes to slots, and the slot holds the value and the
//! prefix's text, made once when first asked for.
use crate::batch;
use crate::key::{key_of, Key};
use crate::slot::Slot;
use crate::store::Store;
use fibre::fib::{FibFamily, PrefixSet};
use fibre::prefix::Prefix;
use numpy::PyArray1;
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The most slots a table holds: the FIB's ids have 31 bits.
const MAX_SLOTS: usize = fibre::fib::MAX_ID as usize;

/// A table of IPv4 and IPv6 prefixes, each mapped to any Python object.
#[pyclass(module = "fibre._fibre", subclass, name = "PrefixTable")]
#[derive(Default)]
pub struct PrefixTable {
    pub v4: Store<Ipv4Addr>,
    pub v6: Store<Ipv6Addr>,
    pub slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    frozen: bool,
    /// Changes so far: what caches over the table (Arrow dictionaries) key on.
    version: u64,
}

fn not_found() -> PyErr {
    PyKeyError::new_err("Prefix not found.")
}
fn not_stored() -> PyErr {
    PyKeyError::new_err("Prefix doesn't exist.")
}

/// Runs `$body` with `$t` bound to the key's family's trie and `$p` to its prefix.
macro_rules! with_key {
    ($self:expr, $key:expr, |$t:ident, $p:ident| $body:expr) => {
        match $key {
            Key::V4($p) => {
                let $t = $self.v4.entries();
                $body
            }
            Key::V6($p) => {
                let $t = $self.v6.entries();
                $body
            }
        }
    };
}

impl PrefixTable {
    fn slot(&self, id: u32) -> &Slot {
        self.slots[id as usize]
            .as_ref()
            .expect("a stored prefix's slot is live")
    }

    /// The slot of each of `keys`' longest match ([`fibre::fib::NO_ROUTE`] for none).
    ///
    /// Lookups need the table only shared, so many threads look up at once. Publishing
    /// changes needs it mutably: only the first lookup after a change does that, for both
    /// families at once (a later lookup of the other family then needs no `&mut` while
    /// another thread's lookup holds the table), with the GIL held throughout.
    pub fn slots_of(slf: &Bound<'_, Self>, keys: batch::Keys) -> PyResult<Vec<u32>> {
        let current = {
            let t = slf.try_borrow()?;
            t.v4.current().zip(t.v6.current())
        };
        let (v4, v6) = match current {
            Some(views) => views,
            None => {
                let mut t = slf.try_borrow_mut()?;
                (t.v4.compiled(), t.v6.compiled())
            }
        };
        // Held through the lookup: a change from another thread meanwhile fails ("already
        // borrowed") instead of racing the answers' slots.
        let _reading = slf.try_borrow()?;
        Ok(slf
            .py()
            .detach(|| batch::lookup(Some(&v4), Some(&v6), &keys)))
    }

    fn check_thawed(&self) -> PyResult<()> {
        if self.frozen {
            Err(PyValueError::new_err(
                "this table is frozen: thaw() it before changing it",
            ))
        } else {
            Ok(())
        }
    }

    /// Stores `key -> value`, replacing the value of a stored prefix.
    pub fn put(&mut self, key: Key, value: Py<PyAny>) -> PyResult<()> {
        self.check_thawed()?;
        if let Some(id) = self.exact(key) {
            // A stored prefix keeps its slot: the FIB is left as it is.
            self.slots[id as usize]
                .as_mut()
                .expect("a stored prefix's slot is live")
                .value = value;
            self.version += 1;
            return Ok(());
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
            None => return Err(PyValueError::new_err("the table is full (2^31 prefixes)")),
        };
        self.slots[id as usize] = Some(Slot::new(key, value));
        match key {
            Key::V4(p) => self.v4.insert(p, id),
            Key::V6(p) => self.v6.insert(p, id),
        };
        self.version += 1;
        Ok(())
    }

    /// Removes exactly `key`, giving back its value.
    pub fn take(&mut self, key: Key) -> PyResult<Py<PyAny>> {
        self.check_thawed()?;
        let id = match key {
            Key::V4(p) => self.v4.remove(&p),
            Key::V6(p) => self.v6.remove(&p),
        }
        .ok_or_else(not_stored)?;
        let slot = self.slots[id as usize].take().expect("live slot");
        self.free.push(id);
        self.version += 1;
        Ok(slot.value)
    }

    /// The slot of the longest stored prefix containing `key`'s address (its first address,
    /// for a prefix key, the prefix's length bounding the match: pytricia's rule).
    fn best(&self, key: Key) -> Option<u32> {
        // An address is answered by the compiled FIB where there is one (tens of ns instead of
        // a walk of the trie's nodes, each a cache miss in a large table).
        let compiled = match key {
            Key::V4(p) if p.is_host() => self.v4.lookup_compiled(p.addr()),
            Key::V6(p) if p.is_host() => self.v6.lookup_compiled(p.addr()),
            _ => None,
        };
        match compiled {
            Some(slot) => slot,
            None => with_key!(self, key, |t, p| covering_last(t, &p)),
        }
    }

    fn exact(&self, key: Key) -> Option<u32> {
        with_key!(self, key, |t, p| t.get(&p).copied())
    }

    fn pair<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyTuple>> {
        let s = self.slot(id);
        PyTuple::new(
            py,
            [s.text(py).clone_ref(py).into_any(), s.value.clone_ref(py)],
        )
    }

    /// Slots in order: IPv4 in trie order, then IPv6.
    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let v4 = self.v4.entries().iter().map(|(_, &id)| id);
        let v6 = self.v6.entries().iter().map(|(_, &id)| id);
        v4.chain(v6)
    }

    fn count(&self) -> usize {
        self.v4.entries().len() + self.v6.entries().len()
    }
}

/// The slots of `in_order` (prefixes in trie order: each before its more specific ones),
/// each after its more specific ones instead.
fn postorder<'a, A: fibre::addr::Address>(
    in_order: impl Iterator<Item = (Prefix<A>, &'a u32)>,
) -> Vec<u32> {
    let mut out = Vec::new();
    let mut open: Vec<(Prefix<A>, u32)> = Vec::new();
    for (p, &id) in in_order {
        while open.last().is_some_and(|(q, _)| !q.covers(&p)) {
            out.push(open.pop().expect("not empty").1);
        }
        open.push((p, id));
    }
    out.extend(open.into_iter().rev().map(|(_, id)| id));
    out
}

/// The most specific stored prefix covering `p` (`p` included).
fn covering_last<A: FibFamily>(t: &PrefixSet<A>, p: &Prefix<A>) -> Option<u32> {
    t.longest_covering(p).map(|(_, &id)| id)
}

#[pymethods]
impl PrefixTable {
    /// An empty table of both families. `maxbits` and `family` are taken for pytricia's
    /// sake and not needed: each key's family is its own.
    #[new]
    #[pyo3(signature = (maxbits = None, family = None))]
    fn py_new(maxbits: Option<u32>, family: Option<i32>) -> PyResult<Self> {
        if maxbits.is_some_and(|m| m > 128) {
            return Err(PyValueError::new_err(format!(
                "maxbits {}: at most 128",
                maxbits.unwrap_or_default()
            )));
        }
        let _ = family;
        Ok(PrefixTable::default())
    }

    /// `insert(key, value)` or `insert(key, length, value)` (pytricia's forms): stores
    /// `value` under the prefix, replacing what it held.
    #[pyo3(signature = (key, *args))]
    fn insert(&mut self, key: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        match args.len() {
            1 => self.put(key_of(key)?, args.get_item(0)?.unbind()),
            2 => {
                let k = PyTuple::new(key.py(), [key.clone(), args.get_item(0)?])?;
                self.put(key_of(k.as_any())?, args.get_item(1)?.unbind())
            }
            n => Err(PyTypeError::new_err(format!(
                "insert(key, value) or insert(key, length, value): {} arguments given",
                n + 1
            ))),
        }
    }

    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: Py<PyAny>) -> PyResult<()> {
        self.put(key_of(key)?, value)
    }

    /// The value of the longest stored prefix containing the key; `KeyError` if none does.
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let id = self.best(key_of(key)?).ok_or_else(not_found)?;
        Ok(self.slot(id).value.clone_ref(py))
    }

    /// The value of the longest stored prefix containing the key, or `default`.
    #[pyo3(signature = (key, default = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        Ok(match self.best(key_of(key)?) {
            Some(id) => Some(self.slot(id).value.clone_ref(py)),
            None => default,
        })
    }

    /// The longest stored prefix containing the key, as text, or `None`.
    fn get_key(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyString>>> {
        Ok(self
            .best(key_of(key)?)
            .map(|id| self.slot(id).text(py).clone_ref(py)))
    }

    /// Whether exactly this prefix is stored.
    fn has_key(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.exact(key_of(key)?).is_some())
    }

    /// Whether a stored prefix contains the key (a longest-prefix match, as pytricia's `in`).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.best(key_of(key)?).is_some())
    }

    fn __delitem__(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.take(key_of(key)?).map(drop)
    }

    /// Removes exactly this prefix; `KeyError` if it is not stored.
    fn delete(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.__delitem__(key)
    }

    /// Removes exactly this prefix and gives back its value (`default`, or `KeyError`, if it is
    /// not stored).
    #[pyo3(signature = (key, *default))]
    fn pop(&mut self, key: &Bound<'_, PyAny>, default: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        if default.len() > 1 {
            return Err(PyTypeError::new_err(
                "pop(key[, default]): too many arguments",
            ));
        }
        match self.take(key_of(key)?) {
            Ok(v) => Ok(v),
            Err(e) if e.is_instance_of::<PyKeyError>(key.py()) && default.len() == 1 => {
                Ok(default.get_item(0)?.unbind())
            }
            Err(e) => Err(e),
        }
    }

    /// The closest less specific stored prefix of a stored prefix, or `None`; `KeyError` if
    /// the prefix is not stored.
    fn parent(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyString>>> {
        let key = key_of(key)?;
        self.exact(key).ok_or_else(not_stored)?;
        let above = with_key!(self, key, |t, p| t.covering_shorter(&p).map(|(_, &id)| id));
        Ok(above.map(|id| self.slot(id).text(py).clone_ref(py)))
    }

    /// Every more specific stored prefix of a stored prefix (not only the direct ones), in
    /// order; `KeyError` if the prefix is not stored.
    fn children(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyString>>> {
        let key = key_of(key)?;
        let own = self.exact(key).ok_or_else(not_stored)?;
        let below: Vec<u32> =
            with_key!(self, key, |t, p| t.covered(&p).map(|(_, &id)| id).collect());
        Ok(below
            .into_iter()
            .filter(|&id| id != own)
            .map(|id| self.slot(id).text(py).clone_ref(py))
            .collect())
    }

    /// The stored prefixes as text: IPv4 in order, then IPv6.
    fn keys(&self, py: Python<'_>) -> Vec<Py<PyString>> {
        self.ids()
            .map(|id| self.slot(id).text(py).clone_ref(py))
            .collect()
    }

    /// The values, in the order of `keys()`.
    fn values(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.ids()
            .map(|id| self.slot(id).value.clone_ref(py))
            .collect()
    }

    /// `(prefix, value)` pairs, in the order of `keys()`.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        self.ids().map(|id| self.pair(py, id)).collect()
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let keys = PyList::new(py, self.keys(py))?;
        Ok(keys.try_iter()?.into_any().unbind())
    }

    fn __len__(&self) -> usize {
        self.count()
    }

    /// Compiles the lookup structure and refuses changes until `thaw()` (pytricia's
    /// `freeze`).
    fn freeze(&mut self) {
        self.v4.compiled();
        self.v6.compiled();
        self.frozen = true;
    }

    /// Allows changes again.
    fn thaw(&mut self) {
        self.frozen = false;
    }

    /// Whether the table refuses changes.
    #[getter]
    fn frozen(&self) -> bool {
        self.frozen
    }

    /// A number that changes with every change of the table.
    #[getter]
    fn version(&self) -> u64 {
        self.version
    }

    /// The `(prefix, value)` stored for exactly this prefix, or `None`.
    fn _exact<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.exact(key_of(key)?)
            .map(|id| self.pair(py, id))
            .transpose()
    }

    /// The most specific stored prefix covering the key (itself included), or `None`.
    fn _best<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.best(key_of(key)?)
            .map(|id| self.pair(py, id))
            .transpose()
    }

    /// Stored prefixes covering the key (itself included), most specific first.
    fn _covering<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let key = key_of(key)?;
        let ids: Vec<u32> = with_key!(self, key, |t, p| t
            .covering(&p)
            .map(|(_, &id)| id)
            .collect());
        ids.into_iter().map(|id| self.pair(py, id)).collect()
    }

    /// Stored prefixes covered by the key (itself included), each after its more specific
    /// ones (py-radix's order: a post-order walk of the trie).
    fn _covered_postorder<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let key = key_of(key)?;
        let ids: Vec<u32> = with_key!(self, key, |t, p| postorder(t.covered(&p)));
        ids.into_iter().map(|id| self.pair(py, id)).collect()
    }

    /// Stored prefixes covered by the key (itself included), in order.
    fn _covered<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let key = key_of(key)?;
        let ids: Vec<u32> = with_key!(self, key, |t, p| t.covered(&p).map(|(_, &id)| id).collect());
        ids.into_iter().map(|id| self.pair(py, id)).collect()
    }

    /// The prefixes as compact bytes and the values in the same order: what pickling keeps.
    fn _state<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyBytes>, Vec<Py<PyAny>>)> {
        let mut blob = Vec::with_capacity(16 + 6 * self.count());
        blob.extend_from_slice(STATE_MAGIC);
        blob.extend_from_slice(&(self.count() as u64).to_le_bytes());
        blob.push(self.frozen as u8);
        for (p, _) in self.v4.entries().iter() {
            blob.push(p.len());
            blob.extend_from_slice(&p.addr().octets());
        }
        for (p, _) in self.v6.entries().iter() {
            blob.push(V6_TAG + p.len());
            blob.extend_from_slice(&p.addr().octets());
        }
        Ok((PyBytes::new(py, &blob), self.values(py)))
    }

    /// Fills this empty table with what `_state` gave; `ValueError` if the bytes are not such
    /// a state.
    fn _set_state(&mut self, blob: &[u8], values: Vec<Py<PyAny>>) -> PyResult<()> {
        if self.count() != 0 {
            return Err(PyValueError::new_err("_set_state fills an empty table"));
        }
        let bad =
            |why: &str| PyValueError::new_err(format!("not a fibre PrefixTable state: {why}"));
        let rest = blob
            .strip_prefix(STATE_MAGIC)
            .ok_or_else(|| bad("wrong magic"))?;
        if rest.len() < 9 {
            return Err(bad("truncated header"));
        }
        let n = u64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
        if n != values.len() as u64 {
            return Err(bad("the prefix and value counts differ"));
        }
        let frozen = rest[8] != 0;
        let mut at = &rest[9..];
        let mut t = PrefixTable::default();
        for (i, v) in values.into_iter().enumerate() {
            let (&tag, tail) = at.split_first().ok_or_else(|| bad("truncated"))?;
            let (key, tail) = if tag <= 32 {
                let (a, tail) = tail.split_at_checked(4).ok_or_else(|| bad("truncated"))?;
                let a = Ipv4Addr::from(<[u8; 4]>::try_from(a).expect("4"));
                (Key::V4(Prefix::new(a, tag)), tail)
            } else if (V6_TAG..=V6_TAG + 128).contains(&tag) {
                let (a, tail) = tail.split_at_checked(16).ok_or_else(|| bad("truncated"))?;
                let a = Ipv6Addr::from(<[u8; 16]>::try_from(a).expect("16"));
                (Key::V6(Prefix::new(a, tag - V6_TAG)), tail)
            } else {
                return Err(bad(&format!("prefix {i}: bad length tag {tag}")));
            };
            t.put(key, v)?;
            at = tail;
        }
        if !at.is_empty() {
            return Err(bad("trailing bytes"));
        }
        t.frozen = frozen;
        if frozen {
            t.v4.compiled();
            t.v6.compiled();
        }
        // Caches keyed on the version must not take the new content for the old.
        t.version += self.version + 1;
        *self = t;
        Ok(())
    }

    /// Longest-prefix matches of many addresses at once, on the compiled FIB with the GIL
    /// released: `(prefixes, values)`, numpy object arrays (`None` where nothing matches).
    ///
    /// `addrs`: a numpy `uint32` array (IPv4), an `int64`/`uint64` array of IPv4 integers, an
    /// `(n, 16)` `uint8` array (packed addresses), an `(n, 2)` `uint64` array (IPv6 as high
    /// and low words), or any sequence of addresses (text, int, bytes, `ipaddress`; `None` is
    /// a miss). With `mapped_v4`, `::ffff:a.b.c.d` is looked up as IPv4, as the kernel routes
    /// it. (The Python class adds pyarrow arrays.)
    #[pyo3(signature = (addrs, *, mapped_v4 = true))]
    fn lookup_batch<'py>(
        slf: &Bound<'py, Self>,
        addrs: &Bound<'py, PyAny>,
        mapped_v4: bool,
    ) -> PyResult<batch::Answers<'py>> {
        let slots = Self::slots_of(slf, batch::keys_of(addrs, mapped_v4)?)?;
        let t = slf.try_borrow()?;
        Ok(batch::gather(&t.slots, slf.py(), &slots))
    }

    /// The slot of each address's longest match as a numpy `int32` array (`-1`: none): an
    /// index into `slot_prefixes()` and `slot_values()`. Takes what `lookup_batch` takes.
    #[pyo3(signature = (addrs, *, mapped_v4 = true))]
    fn lookup_slots<'py>(
        slf: &Bound<'py, Self>,
        addrs: &Bound<'py, PyAny>,
        mapped_v4: bool,
    ) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let slots = Self::slots_of(slf, batch::keys_of(addrs, mapped_v4)?)?;
        Ok(batch::slot_array(slf.py(), &slots))
    }

    /// `lookup_slots` of addresses as text in Arrow's layout (address `i` is
    /// `data[offsets[i]:offsets[i + 1]]`, a miss where `valid` is given and false): Arrow's
    /// string arrays read without a Python object per address.
    #[pyo3(signature = (offsets, data, valid = None, *, mapped_v4 = true))]
    fn _text_slots<'py>(
        slf: &Bound<'py, Self>,
        offsets: numpy::PyReadonlyArray1<'py, i64>,
        data: numpy::PyReadonlyArray1<'py, u8>,
        valid: Option<numpy::PyReadonlyArray1<'py, bool>>,
        mapped_v4: bool,
    ) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let offsets = offsets.as_slice()?;
        let data = data.as_slice()?;
        let valid = valid.as_ref().map(|v| v.as_slice()).transpose()?;
        let keys = batch::text_keys(offsets, data, valid, mapped_v4)?;
        let slots = Self::slots_of(slf, keys)?;
        Ok(batch::slot_array(slf.py(), &slots))
    }

    /// `lookup_slots` as the buffers of an Arrow `int32` array: `(values, validity bitmap,
    /// null count)`, values 0 where nothing matches (what `output="arrow"` builds on).
    #[pyo3(signature = (addrs, *, mapped_v4 = true))]
    fn _lookup_arrow_parts<'py>(
        slf: &Bound<'py, Self>,
        addrs: &Bound<'py, PyAny>,
        mapped_v4: bool,
    ) -> PyResult<batch::ArrowParts<'py>> {
        let slots = Self::slots_of(slf, batch::keys_of(addrs, mapped_v4)?)?;
        Ok(batch::arrow_parts(slf.py(), &slots))
    }

    /// The prefixes and values of slots `lookup_slots` gave (`-1`: none), as numpy object
    /// arrays (`None` where none); `IndexError` for a slot the table does not have.
    fn gather_slots<'py>(
        &self,
        py: Python<'py>,
        slots: numpy::PyReadonlyArray1<'py, i32>,
    ) -> PyResult<batch::Answers<'py>> {
        let slots: Vec<u32> = slots
            .as_array()
            .iter()
            .map(|&s| match s {
                -1 => Ok(fibre::fib::NO_ROUTE),
                s if s >= 0 && (s as usize) < self.slots.len() => Ok(s as u32),
                s => Err(pyo3::exceptions::PyIndexError::new_err(format!(
                    "slot {s} is not one of this table's ({} slots)",
                    self.slots.len()
                ))),
            })
            .collect::<PyResult<_>>()?;
        Ok(batch::gather(&self.slots, py, &slots))
    }

    /// Each slot's prefix as text (`None` for a free slot).
    fn slot_prefixes(&self, py: Python<'_>) -> Vec<Option<Py<PyString>>> {
        self.slots
            .iter()
            .map(|s| s.as_ref().map(|s| s.text(py).clone_ref(py)))
            .collect()
    }

    /// Each slot's value (`None` for a free slot).
    fn slot_values(&self, py: Python<'_>) -> Vec<Option<Py<PyAny>>> {
        self.slots
            .iter()
            .map(|s| s.as_ref().map(|s| s.value.clone_ref(py)))
            .collect()
    }

    /// Bytes of the compiled lookup structures (0 before the first batch lookup or `freeze`).
    fn _fib_bytes(&self) -> usize {
        self.v4.fib_bytes() + self.v6.fib_bytes()
    }

    fn __repr__(&self) -> String {
        format!(
            "<fibre.PrefixTable: {} IPv4 and {} IPv6 prefixes{}>",
            self.v4.entries().len(),
            self.v6.entries().len(),
            if self.frozen { ", frozen" } else { "" }
        )
    }
}

/// What pickled table state begins with.
const STATE_MAGIC: &[u8] = b"fibre-prefix-table/1\0";
/// A pickled prefix's first byte is its length, plus this for IPv6.
const V6_TAG: u8 = 64;
