//! Route changes made in a namespace's kernel over rtnetlink, one request at a time with its
//! acknowledgement: the kernel has made the change (and sent its notification) when the
//! acknowledgement is read, which is the instant an event's lag is measured from.
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;

/// An rtnetlink socket inside a namespace.
pub struct KernelRoutes {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl KernelRoutes {
    /// A socket in namespace `netns`; it stays there whatever thread uses it.
    pub fn open(netns: &str) -> io::Result<KernelRoutes> {
        let file = std::fs::File::open(format!("/var/run/netns/{netns}"))?;
        let socket = std::thread::spawn(move || -> io::Result<Socket> {
            // SAFETY: a plain syscall on a descriptor `file` keeps open for the call; it
            // changes this short-lived thread's namespace only.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            let mut s = Socket::new(NETLINK_ROUTE)?;
            s.bind_auto()?;
            s.connect(&netlink_sys::SocketAddr::new(0, 0))?;
            Ok(s)
        })
        .join()
        .map_err(|_| io::Error::other("the namespace thread panicked"))??;
        Ok(KernelRoutes {
            socket,
            seq: 0,
            buf: vec![0; 1 << 16],
        })
    }

    /// Adds (or deletes) the host route `dst` via `gateway` in `table`, and waits for the
    /// kernel's acknowledgement.
    pub fn host_route(
        &mut self,
        add: bool,
        table: u8,
        dst: Ipv4Addr,
        gateway: Ipv4Addr,
    ) -> io::Result<()> {
        let mut route = RouteMessage::default();
        route.header.address_family = AddressFamily::Inet;
        route.header.destination_prefix_length = 32;
        route.header.table = table;
        route.header.protocol = RouteProtocol::Static;
        route.header.scope = RouteScope::Universe;
        route.header.kind = RouteType::Unicast;
        route.attributes = vec![
            RouteAttribute::Destination(RouteAddress::Inet(dst)),
            RouteAttribute::Gateway(RouteAddress::Inet(gateway)),
        ];
        let (inner, flags) = if add {
            (
                RouteNetlinkMessage::NewRoute(route),
                NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
            )
        } else {
            (
                RouteNetlinkMessage::DelRoute(route),
                NLM_F_REQUEST | NLM_F_ACK,
            )
        };
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        header.sequence_number = self.seq;
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(inner));
        msg.finalize();
        let mut out = vec![0; msg.buffer_len()];
        msg.serialize(&mut out);
        self.socket.send(&out, 0)?;
        loop {
            let n = self.socket.recv(&mut &mut self.buf[..], 0)?;
            let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.buf[..n])
                .map_err(|e| io::Error::other(format!("netlink reply: {e}")))?;
            if reply.header.sequence_number != self.seq {
                continue;
            }
            return match reply.payload {
                NetlinkPayload::Error(e) => match e.code {
                    None => Ok(()),
                    Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
                },
                other => Err(io::Error::other(format!("unexpected reply {other:?}"))),
            };
        }
    }
}
