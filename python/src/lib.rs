//! `fibre._fibre`: the extension module under the `fibre` Python package.
//!
//! - [`table::PrefixTable`]: prefixes of both families mapped to Python objects, with
//!   pytricia's and py-radix's interfaces and batch lookups on the compiled FIB
//!   ([`batch`]), the GIL released.
//! - [`router::Router`]: a whole routing state answering `ip route get` as the kernel does.
//!
//! Keys enter through [`key`], where their family is chosen once.
use pyo3::prelude::*;

mod batch;
mod key;
mod router;
mod slot;
mod store;
mod table;

#[pymodule]
fn _fibre(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<table::PrefixTable>()?;
    m.add_class::<router::Router>()?;
    m.add("RouteError", m.py().get_type::<router::RouteError>())?;
    Ok(())
}
