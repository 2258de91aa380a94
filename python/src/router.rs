//! `Router`: a whole routing state (links, addresses, tables, rules, next-hop objects) with
//! the kernel's `ip route get` answers, as `ip -j` prints them.
use crate::key::address_of;
use fibre::io::iproute2::{Batch, BatchMode, Query};
use fibre::io::snapshot;
use fibre::Family;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use std::path::PathBuf;

create_exception!(
    fibre,
    RouteError,
    PyOSError,
    "A command the router refused or a lookup without an answer: `errno` and `errno_name` \
     (`ENETUNREACH`, ...) as the kernel gives them, `strerror` the message `ip` prints, \
     `command` the command."
);

/// The exception for a failed command: `RouteError(errno, message)` with `errno_name` and
/// `command` set.
fn route_error(py: Python<'_>, name: &str, code: i32, message: &str, command: &str) -> PyErr {
    let e = RouteError::new_err((code, message.to_string()));
    let v = e.value(py);
    let _ = v.setattr("errno_name", name);
    let _ = v.setattr("command", command);
    e
}

fn family_of(family: Option<&str>) -> PyResult<Option<Family>> {
    match family {
        None => Ok(None),
        Some("inet" | "ipv4" | "4") => Ok(Some(Family::Inet)),
        Some("inet6" | "ipv6" | "6") => Ok(Some(Family::Inet6)),
        Some(f) => Err(PyValueError::new_err(format!(
            "family \"{f}\": give \"inet\" (IPv4) or \"inet6\" (IPv6)"
        ))),
    }
}

/// A Linux routing state in userspace, answering `route get` as the kernel does.
#[pyclass(module = "fibre._fibre", name = "Router")]
pub struct Router {
    inner: fibre::Router,
}

impl Router {
    /// Runs `text` as an `ip -j -batch`, all or nothing; gives back what its lines printed,
    /// parsed (one value per printing line).
    fn run<'py>(&mut self, py: Python<'py>, text: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let mut batch = Batch::new(std::mem::take(&mut self.inner));
        batch.mode = BatchMode::Atomic;
        batch.json = true;
        batch.name = "batch".into();
        let out = py.detach(|| batch.run_text(text));
        self.inner = batch.router;
        let loads = py.import("json")?.getattr("loads")?;
        let printed = out
            .stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| loads.call1((l,)))
            .collect::<PyResult<Vec<_>>>()?;
        if out.failed.is_empty() {
            return Ok(printed);
        }
        // A failing line's error object is the last thing a JSON batch prints.
        let error = printed
            .last()
            .and_then(|e| e.cast::<PyDict>().ok().cloned());
        let field = |k: &str| error.as_ref().and_then(|e| e.get_item(k).ok().flatten());
        let name: String = field("error")
            .and_then(|v| v.extract().ok())
            .unwrap_or("EINVAL".into());
        let code: i32 = field("errno").and_then(|v| v.extract().ok()).unwrap_or(22);
        let command: String = field("command")
            .and_then(|v| v.extract().ok())
            .unwrap_or_default();
        let message: String = field("message")
            .and_then(|v| v.extract().ok())
            .unwrap_or_else(|| out.stderr.trim().to_string());
        let line = out.failed[0];
        Err(route_error(
            py,
            &name,
            code,
            &format!("line {line}: {message} (nothing of the batch was kept)"),
            &command,
        ))
    }

    /// Answers one read-only line as JSON text (what `ip -j` prints, or an error object).
    fn answer(&self, py: Python<'_>, line: &str) -> PyResult<Py<PyAny>> {
        let text = py.detach(|| Query::new(&self.inner, true).answer(line));
        let json = py.import("json")?.call_method1("loads", (text,))?;
        if let Ok(d) = json.cast::<PyDict>() {
            if let (Some(name), Some(code), Some(msg)) = (
                d.get_item("error")?,
                d.get_item("errno")?,
                d.get_item("message")?,
            ) {
                return Err(route_error(
                    py,
                    &name.extract::<String>()?,
                    code.extract()?,
                    &msg.extract::<String>()?,
                    line,
                ));
            }
        }
        Ok(json.unbind())
    }
}

/// A word of a command line: no whitespace (it would make more words), not empty.
fn word(what: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = if let Ok(s) = v.cast::<PyString>() {
        s.to_str()?.to_string()
    } else if v.is_instance_of::<pyo3::types::PyInt>() {
        v.to_string()
    } else {
        return Err(PyTypeError::new_err(format!(
            "{what}: a str or an int, not {}",
            v.get_type().name()?
        )));
    };
    if s.is_empty() || s.contains(char::is_whitespace) {
        return Err(PyValueError::new_err(format!(
            "{what} \"{s}\": one word without spaces"
        )));
    }
    Ok(s)
}

fn number(what: &str, v: &Bound<'_, PyAny>, max: u64) -> PyResult<String> {
    let n: u64 = v
        .extract()
        .map_err(|_| PyValueError::new_err(format!("{what}: an int from 0 to {max}, not {v}")))?;
    if n > max {
        return Err(PyValueError::new_err(format!("{what} {n}: at most {max}")));
    }
    Ok(n.to_string())
}

#[pymethods]
impl Router {
    /// An empty router: the loopback device only, tables local and main, the default rules.
    #[new]
    fn py_new() -> Self {
        Router {
            inner: fibre::Router::new(),
        }
    }

    /// A router set up by `ip -batch` text (links, addresses, routes, rules); see `batch`.
    #[staticmethod]
    fn from_batch(py: Python<'_>, text: &str) -> PyResult<Router> {
        let mut r = Router::py_new();
        r.run(py, text)?;
        Ok(r)
    }

    /// Runs `ip -batch` text, all or nothing: on the first failing line nothing of the batch
    /// is kept and `RouteError` names the line. Returns what the lines printed, as `ip -j`
    /// prints it, parsed: one value per printing line.
    fn batch<'py>(&mut self, py: Python<'py>, text: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.run(py, text)
    }

    /// Installs the routes of an MRT RIB dump (plain or gzip; TABLE_DUMP or TABLE_DUMP_V2)
    /// via device `dev`, all or nothing; `family` ("inet" or "inet6") keeps one family.
    /// Returns the counts: routes installed, left out (no next hop of their family), already
    /// routed.
    #[pyo3(signature = (path, dev, family = None))]
    fn load_mrt<'py>(
        &mut self,
        py: Python<'py>,
        path: PathBuf,
        dev: &str,
        family: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let family = family_of(family)?;
        let dev = self
            .inner
            .links()
            .by_name(dev)
            .ok_or_else(|| PyValueError::new_err(format!("Cannot find device \"{dev}\"")))?
            .index;
        let inner = &mut self.inner;
        let done = py
            .detach(|| fibre::io::mrt::install_file(inner, &path, dev, family))
            .map_err(PyValueError::new_err)?;
        let d = PyDict::new(py);
        d.set_item("routes", done.routes)?;
        d.set_item("left_out", done.left_out)?;
        d.set_item("already_routed", done.already_routed)?;
        Ok(d)
    }

    /// The live kernel's routing state, dumped once over rtnetlink (in network namespace
    /// `netns` if given: `ip netns` names it).
    #[staticmethod]
    #[pyo3(signature = (netns = None))]
    fn from_kernel(py: Python<'_>, netns: Option<&str>) -> PyResult<Router> {
        let (mirror, _) = py
            .detach(|| fibre::io::netlink::Mirror::open(netns))
            .map_err(|e| PyOSError::new_err(format!("reading the kernel's routes: {e}")))?;
        Ok(Router {
            inner: (*mirror.router()).clone(),
        })
    }

    /// What `ip -j route get` prints for this lookup, as a dict; `RouteError` (with the errno
    /// name: `ENETUNREACH`, `EHOSTUNREACH`, `EACCES`, `EINVAL`, ...) where the kernel refuses.
    ///
    /// `src` is `from`, `tos` is `dsfield`; `iif` and `oif` are device names; `ipproto` a
    /// number or a name (`tcp`, `udp`, ...).
    #[pyo3(signature = (dst, *, src = None, iif = None, oif = None, mark = None, tos = None,
        ipproto = None, sport = None, dport = None, uid = None, fibmatch = false))]
    #[allow(clippy::too_many_arguments)]
    fn route_get(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        src: Option<&Bound<'_, PyAny>>,
        iif: Option<&Bound<'_, PyAny>>,
        oif: Option<&Bound<'_, PyAny>>,
        mark: Option<&Bound<'_, PyAny>>,
        tos: Option<&Bound<'_, PyAny>>,
        ipproto: Option<&Bound<'_, PyAny>>,
        sport: Option<&Bound<'_, PyAny>>,
        dport: Option<&Bound<'_, PyAny>>,
        uid: Option<&Bound<'_, PyAny>>,
        fibmatch: bool,
    ) -> PyResult<Py<PyAny>> {
        let mut line = format!("route get {}", address_of(dst)?);
        if let Some(s) = src {
            line += &format!(" from {}", address_of(s)?);
        }
        for (kw, v) in [("iif", iif), ("oif", oif), ("ipproto", ipproto)] {
            if let Some(v) = v {
                line += &format!(" {kw} {}", word(kw, v)?);
            }
        }
        let numbers: [(&str, Option<&Bound<'_, PyAny>>, u64); 5] = [
            ("mark", mark, u32::MAX as u64),
            ("tos", tos, 255),
            ("sport", sport, 65535),
            ("dport", dport, 65535),
            ("uid", uid, u32::MAX as u64),
        ];
        for (kw, v, max) in numbers {
            if let Some(v) = v {
                line += &format!(" {kw} {}", number(kw, v, max)?);
            }
        }
        if fibmatch {
            line += " fibmatch";
        }
        let answer = self.answer(py, &line)?;
        // `ip -j route get` prints one answer in a list.
        let list = answer.bind(py);
        Ok(list.get_item(0)?.unbind())
    }

    /// Runs one read-only `ip` command (`route show table all`, `rule show`, `-6 route get
    /// ...`) and gives back what `ip -j` prints, parsed.
    fn query(&self, py: Python<'_>, command: &str) -> PyResult<Py<PyAny>> {
        self.answer(py, command)
    }

    /// The whole state as snapshot bytes (what `save` writes).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| snapshot::to_bytes(&self.inner));
        PyBytes::new(py, &bytes)
    }

    /// The router of snapshot bytes; `ValueError` if they are not a whole snapshot.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Router> {
        let inner = py
            .detach(|| snapshot::from_bytes(data))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Router { inner })
    }

    /// Writes a snapshot file (the format `fibre ... snapshot save` writes).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| snapshot::save(&self.inner, &path))
            .map_err(|e| PyOSError::new_err(e.to_string()))
    }

    /// Reads a snapshot file.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Router> {
        let inner = py
            .detach(|| snapshot::load(&path))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Router { inner })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let ctor = slf.get_type().getattr("from_bytes")?;
        Ok((ctor, (slf.borrow().to_bytes(slf.py()),)))
    }

    fn __repr__(&self) -> String {
        let routes4 = self.inner.routes::<std::net::Ipv4Addr>().count();
        let routes6 = self.inner.routes::<std::net::Ipv6Addr>().count();
        format!("<fibre.Router: {routes4} IPv4 and {routes6} IPv6 routes>")
    }
}
