//! Errors as the kernel reports them: an errno with iproute2's wording.
use std::fmt;

/// The errno values that routing operations and lookups return, as the kernel numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Errno {
    /// No such file or directory: `change` of a route that does not exist, `rule del` without match.
    ENOENT = 2,
    /// No such process: `route del` of a route that does not exist.
    ESRCH = 3,
    /// Resource temporarily unavailable: a `throw` route, internally "go on with the next rule".
    EAGAIN = 11,
    /// Permission denied: `prohibit`.
    EACCES = 13,
    /// File exists: `add` of a route or rule that exists.
    EEXIST = 17,
    /// No such device.
    ENODEV = 19,
    /// Invalid argument: `blackhole`, and malformed requests.
    EINVAL = 22,
    /// Numerical result out of range.
    ERANGE = 34,
    /// Message too long: IPv6 `route get` of a group from an input device (the reply needs
    /// multicast routing).
    EMSGSIZE = 90,
    /// Operation not supported.
    EOPNOTSUPP = 95,
    /// Cannot assign requested address: `addr del` of an address that is not there.
    EADDRNOTAVAIL = 99,
    /// Network is down: a route through a device that is down.
    ENETDOWN = 100,
    /// Network is unreachable: no route at all, `unreachable` rule, a `throw` nobody caught.
    ENETUNREACH = 101,
    /// No route to host: `unreachable` route.
    EHOSTUNREACH = 113,
}

impl Errno {
    /// The positive errno number (netlink carries its negation).
    pub fn code(self) -> i32 {
        self as i32
    }
    /// The symbolic name, as used in fibre's JSON errors (`"ENETUNREACH"`).
    pub fn name(self) -> &'static str {
        match self {
            Errno::ENOENT => "ENOENT",
            Errno::ESRCH => "ESRCH",
            Errno::EAGAIN => "EAGAIN",
            Errno::EACCES => "EACCES",
            Errno::EEXIST => "EEXIST",
            Errno::ENODEV => "ENODEV",
            Errno::EINVAL => "EINVAL",
            Errno::ERANGE => "ERANGE",
            Errno::EMSGSIZE => "EMSGSIZE",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
            Errno::EADDRNOTAVAIL => "EADDRNOTAVAIL",
            Errno::ENETDOWN => "ENETDOWN",
            Errno::ENETUNREACH => "ENETUNREACH",
            Errno::EHOSTUNREACH => "EHOSTUNREACH",
        }
    }
    /// strerror(3), the text after "RTNETLINK answers: ".
    pub fn message(self) -> &'static str {
        match self {
            Errno::ENOENT => "No such file or directory",
            Errno::ESRCH => "No such process",
            Errno::EAGAIN => "Resource temporarily unavailable",
            Errno::EACCES => "Permission denied",
            Errno::EEXIST => "File exists",
            Errno::ENODEV => "No such device",
            Errno::EINVAL => "Invalid argument",
            Errno::ERANGE => "Numerical result out of range",
            Errno::EMSGSIZE => "Message too long",
            Errno::EOPNOTSUPP => "Operation not supported",
            Errno::EADDRNOTAVAIL => "Cannot assign requested address",
            Errno::ENETDOWN => "Network is down",
            Errno::ENETUNREACH => "Network is unreachable",
            Errno::EHOSTUNREACH => "No route to host",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}
impl std::error::Error for Errno {}

/// A refused change: the errno the kernel would return, and its extended-ack text when it has one
/// (iproute2 prints `Error: TEXT.` instead of `RTNETLINK answers: STRERROR`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeError {
    /// The errno.
    pub errno: Errno,
    /// The extended-ack message as the kernel words it, without iproute2's `Error: ` prefix (and
    /// without a final period, which ip adds, unless the kernel's message has one).
    pub detail: Option<String>,
    /// The kernel reports this error yet keeps part of the change (a multipath IPv6 `del` whose
    /// later legs fail): applied alone, the change stays; in an all-or-nothing set it does not.
    pub partial: bool,
}

impl ChangeError {
    /// An error with no extended-ack text.
    pub fn new(errno: Errno) -> Self {
        ChangeError {
            errno,
            detail: None,
            partial: false,
        }
    }
    /// An error with extended-ack text `detail`.
    pub fn with(errno: Errno, detail: impl Into<String>) -> Self {
        ChangeError {
            errno,
            detail: Some(detail.into()),
            partial: false,
        }
    }
}
impl From<Errno> for ChangeError {
    fn from(e: Errno) -> Self {
        ChangeError::new(e)
    }
}
impl fmt::Display for ChangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            // ip ends the kernel's message with a period unless it has one (`nl_dump_ext_ack`).
            Some(d) if d.ends_with('.') => write!(f, "Error: {d}"),
            Some(d) => write!(f, "Error: {d}."),
            None => write!(f, "RTNETLINK answers: {}", self.errno.message()),
        }
    }
}
impl std::error::Error for ChangeError {}
