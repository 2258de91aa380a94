//! An rtnetlink socket of fibre's own, in a named network namespace or the caller's, and dumps
//! over it.
use netlink_packet_core::{
    ErrorBuffer, NetlinkBuffer, NetlinkHeader, NLMSG_DONE, NLMSG_ERROR, NLM_F_DUMP,
    NLM_F_DUMP_INTR, NLM_F_REQUEST,
};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Where `ip netns add` keeps named namespaces.
const NETNS_DIR: &str = "/var/run/netns";

/// The kernel's answers to one dump: (message type, payload) in order.
pub(crate) type Dump = Vec<(u16, Vec<u8>)>;

/// A socket and its sequence numbers.
pub(crate) struct Conn {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

/// Runs `f` on a thread that joined namespace `name`: a socket made there stays in it, and so
/// does a `/proc/thread-self/net` file opened there.
pub(crate) fn in_netns<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let path = Path::new(NETNS_DIR).join(name);
    let file = std::fs::File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {name}: {e}")))?;
    std::thread::spawn(move || {
        // SAFETY: a plain syscall on a descriptor `file` keeps open for the call.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        f()
    })
    .join()
    .map_err(|_| io::Error::other("the thread joining the namespace panicked"))?
}

/// The rtnetlink groups a mirror listens to: devices, both families' addresses, routes and
/// rules, and next-hop objects (`RTNLGRP_*`).
const GROUPS: [u32; 8] = [1, 5, 7, 8, 9, 11, 19, 32];

/// A socket that receives the kernel's notifications.
pub(crate) struct Events {
    socket: Socket,
    buf: Vec<u8>,
}

/// One notification: its message type (`RTM_NEWROUTE`...), flags (`NLM_F_REPLACE`...) and
/// payload.
pub(crate) struct Notification {
    pub(crate) kind: u16,
    pub(crate) flags: u16,
    pub(crate) payload: Vec<u8>,
}

/// What one read of notifications found.
pub(crate) enum Heard {
    /// Notifications, in the kernel's order.
    Messages(Vec<Notification>),
    /// The kernel dropped notifications (ENOBUFS): the receive buffer overran.
    Overrun,
    /// Nothing within the wait.
    Quiet,
}

impl Events {
    /// Subscribes in namespace `netns`, with a receive buffer of `rcvbuf` bytes.
    pub(crate) fn open(netns: Option<&str>, rcvbuf: usize) -> io::Result<Events> {
        let make = move || -> io::Result<Socket> {
            let mut s = Socket::new(NETLINK_ROUTE)?;
            s.bind_auto()?;
            for g in GROUPS {
                s.add_membership(g)?;
            }
            Ok(s)
        };
        let socket = match netns {
            None => make()?,
            Some(name) => in_netns(name, make)?,
        };
        {
            let v = rcvbuf.min(i32::MAX as usize / 2) as libc::c_int;
            // SO_RCVBUFFORCE passes rmem_max, for a caller with CAP_NET_ADMIN; others get
            // SO_RCVBUF, capped by rmem_max.
            let set = |opt| {
                // SAFETY: setsockopt reads an int from a live local.
                unsafe {
                    libc::setsockopt(
                        socket.as_raw_fd(),
                        libc::SOL_SOCKET,
                        opt,
                        (&v as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    )
                }
            };
            if set(libc::SO_RCVBUFFORCE) != 0 && set(libc::SO_RCVBUF) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Events {
            socket,
            buf: vec![0; 1 << 20],
        })
    }

    /// Throws away every notification queued: a resync's dump starts after them, so it holds
    /// what they said.
    pub(crate) fn drain(&mut self) -> io::Result<()> {
        loop {
            match self
                .socket
                .recv(&mut &mut self.buf[..], libc::MSG_DONTWAIT | libc::MSG_TRUNC)
            {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits up to `ms` milliseconds for something to read (a notification or an overrun);
    /// `Ok(None)` when a signal cut the wait short.
    fn readable(&self, ms: libc::c_int) -> io::Result<Option<bool>> {
        let mut pfd = libc::pollfd {
            fd: self.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, a live local.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(None)
            } else {
                Err(e)
            };
        }
        Ok(Some(n > 0))
    }

    /// Whether a notification (or an overrun) is waiting or comes within `ms` milliseconds,
    /// without reading it (a signal in between counts as yes: the caller then looks again
    /// later).
    pub(crate) fn any_queued(&self, ms: libc::c_int) -> io::Result<bool> {
        Ok(self.readable(ms)?.unwrap_or(true))
    }

    /// Waits up to `wait` for notifications and reads what has come.
    pub(crate) fn hear(&mut self, wait: std::time::Duration) -> io::Result<Heard> {
        let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
        if self.readable(ms)? != Some(true) {
            return Ok(Heard::Quiet);
        }
        match self
            .socket
            .recv(&mut &mut self.buf[..], libc::MSG_DONTWAIT | libc::MSG_TRUNC)
        {
            Ok(len) => {
                let mut messages = Vec::new();
                let mut rest = &self.buf[..len.min(self.buf.len())];
                while let Ok(nl) = NetlinkBuffer::new_checked(rest) {
                    messages.push(Notification {
                        kind: nl.message_type(),
                        flags: nl.flags(),
                        payload: nl.payload().to_vec(),
                    });
                    let step = (nl.length() as usize + 3) & !3;
                    rest = &rest[step.min(rest.len())..];
                }
                Ok(Heard::Messages(messages))
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(Heard::Overrun),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Heard::Quiet),
            Err(e) => Err(e),
        }
    }
}

impl Conn {
    /// A socket in namespace `netns` (the caller's for `None`).
    pub(crate) fn open(netns: Option<&str>) -> io::Result<Conn> {
        let make = || -> io::Result<Socket> {
            let mut s = Socket::new(NETLINK_ROUTE)?;
            s.bind_auto()?;
            Ok(s)
        };
        let socket = match netns {
            None => make()?,
            Some(name) => in_netns(name, make)?,
        };
        // The kernel answers every dump; a reply that has not come in this long never will.
        let timeout = libc::timeval {
            tv_sec: 30,
            tv_usec: 0,
        };
        // SAFETY: setsockopt reads `size_of::<timeval>()` bytes from a live local.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Conn {
            socket,
            seq: 1,
            buf: vec![0; 1 << 20],
        })
    }

    /// Sends a dump request of `message_type` with `payload` (the family's header) and reads
    /// every answer up to `NLMSG_DONE`.
    pub(crate) fn dump(&mut self, message_type: u16, payload: &[u8]) -> io::Result<Dump> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut header = NetlinkHeader::default();
        header.message_type = message_type;
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        header.sequence_number = seq;
        header.length = (16 + payload.len()) as u32;
        let mut req = vec![0u8; 16];
        {
            let mut b = NetlinkBuffer::new(&mut req[..]);
            b.set_length(header.length);
            b.set_message_type(header.message_type);
            b.set_flags(header.flags);
            b.set_sequence_number(header.sequence_number);
            b.set_port_number(0);
        }
        req.extend_from_slice(payload);
        self.socket.send(&req, 0)?;
        let mut out = Vec::new();
        let mut interrupted = false;
        loop {
            // MSG_TRUNC: the kernel reports the datagram's real length, so a cut one is seen.
            let len = match self.socket.recv(&mut &mut self.buf[..], libc::MSG_TRUNC) {
                Ok(len) => len,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if len > self.buf.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a netlink datagram of {len} bytes exceeds the buffer"),
                ));
            }
            let mut rest = &self.buf[..len];
            while !rest.is_empty() {
                let nl = NetlinkBuffer::new_checked(rest)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let step = (nl.length() as usize + 3) & !3;
                if nl.sequence_number() == seq {
                    // The dump raced with a change: its parts may not fit together.
                    if nl.flags() & NLM_F_DUMP_INTR != 0 {
                        interrupted = true;
                    }
                    match nl.message_type() {
                        NLMSG_DONE => {
                            // A dump that failed part-way says so in NLMSG_DONE's payload.
                            let code = nl
                                .payload()
                                .get(..4)
                                .map_or(0, |b| i32::from_ne_bytes(b.try_into().unwrap()));
                            if code < 0 {
                                return Err(io::Error::from_raw_os_error(-code));
                            }
                            if interrupted {
                                return Err(io::Error::new(
                                    io::ErrorKind::Interrupted,
                                    "the dump was interrupted by a change",
                                ));
                            }
                            return Ok(out);
                        }
                        NLMSG_ERROR => {
                            let e = ErrorBuffer::new_checked(nl.payload()).map_err(|e| {
                                io::Error::new(io::ErrorKind::InvalidData, e.to_string())
                            })?;
                            // Code 0 is an acknowledgement, not an error.
                            if let Some(c) = e.code() {
                                return Err(io::Error::from_raw_os_error(-c.get()));
                            }
                        }
                        t => out.push((t, nl.payload().to_vec())),
                    }
                }
                rest = &rest[step.min(rest.len())..];
            }
        }
    }
}
