use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use netlink_packet_core::{
    ErrorBuffer, NetlinkBuffer, NetlinkMessage, NlaBuffer, NlasIterator, ParseableParametrized,
    NLMSG_ALIGNTO, NLMSG_ERROR, NLM_F_REQUEST,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteHeader, RouteLwEnCapType, RouteMessage,
    RouteNextHop, RouteType, RouteVia,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket};

use crate::Netns;

/// Requests per `send`. Large enough to amortise the syscalls, small enough that the replies of
/// one batch fit the receive buffer many times over.
const BATCH: usize = 256;

/// Replies are queued until read; if they ever exceeded the buffer the kernel would drop them and
/// a batch would never complete, so make room for far more than one batch.
const RCVBUF: libc::c_int = 32 << 20;

/// Every request is answered synchronously by the kernel during `send`, so a reply that has not
/// arrived after this long is never coming.
const RECV_TIMEOUT: Duration = Duration::from_secs(10);

/// `sizeof(struct rtmsg)`: the attributes of a route message start after it.
const RTMSG_LEN: usize = 12;

const RTA_DST: u16 = 1;
const RTA_SRC: u16 = 2;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_PREFSRC: u16 = 7;
const RTA_MULTIPATH: u16 = 9;
const RTA_TABLE: u16 = 15;
const RTA_VIA: u16 = 18;
const RTA_PREF: u16 = 20;
const RTA_NH_ID: u16 = 30;

/// One route lookup to ask the kernel, i.e. the arguments of `ip route get`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Destination address; also decides the family of the lookup.
    pub dst: IpAddr,
    /// `RTA_SRC` (sent with `rtm_src_len` = 32/128). Must be of the same family as `dst`.
    pub src: Option<IpAddr>,
    /// `RTA_IIF` ifindex; makes the kernel do an input (forwarding) lookup instead of an output one.
    pub iif: Option<u32>,
    /// `RTA_OIF` ifindex.
    pub oif: Option<u32>,
    /// `RTA_MARK` (fwmark).
    pub mark: Option<u32>,
    /// `rtm_tos`, the whole dsfield byte as `ip route get ... tos` sends it.
    pub tos: u8,
    /// `RTA_IP_PROTO`.
    pub ipproto: Option<u8>,
    /// `RTA_SPORT`, host order here; sent in network byte order as the kernel expects.
    pub sport: Option<u16>,
    /// `RTA_DPORT`, host order here; sent in network byte order as the kernel expects.
    pub dport: Option<u16>,
    /// `RTA_UID`.
    pub uid: Option<u32>,
    /// Sets `RTM_F_FIB_MATCH`: the reply describes the FIB entry that matched (with its prefix
    /// length and all nexthops) instead of the resolved destination.
    pub fibmatch: bool,
}

impl Probe {
    /// A probe for `dst` with every other selector unset: the common starting point, refined with
    /// struct update syntax.
    pub fn to(dst: IpAddr) -> Probe {
        Probe {
            dst,
            src: None,
            iif: None,
            oif: None,
            mark: None,
            tos: 0,
            ipproto: None,
            sport: None,
            dport: None,
            uid: None,
            fibmatch: false,
        }
    }
}

/// The kernel's verdict for one probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Positive errno of the `NLMSG_ERROR` reply, e.g. 101 (`ENETUNREACH`) when nothing matched
    /// or 22 (`EINVAL`) for a blackhole route.
    Error(i32),
    /// The `RTM_NEWROUTE` reply.
    Route(KernelRoute),
}

/// Everything an RTM_NEWROUTE reply says that decides which route matched, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRoute {
    /// `RTA_TABLE` if present else `rtm_table`; with `RTM_F_LOOKUP_TABLE` the table the lookup
    /// matched in.
    pub table: u32,
    /// `rtm_type` (RTN_UNICAST=1, LOCAL=2, BROADCAST=3, ANYCAST=4, MULTICAST=5, BLACKHOLE=6,
    /// UNREACHABLE=7, PROHIBIT=8, THROW=9...).
    pub kind: u8,
    /// `RTA_DST`, or the unspecified address of the family when absent (a default route).
    pub dst: IpAddr,
    /// `rtm_dst_len`.
    pub dst_len: u8,
    /// `RTA_SRC` (IPv6 source-specific routes, or the probe's source echoed back).
    pub src: Option<IpAddr>,
    /// `rtm_src_len`.
    pub src_len: u8,
    /// `rtm_tos`.
    pub tos: u8,
    /// `rtm_protocol`.
    pub protocol: u8,
    /// `rtm_scope`.
    pub scope: u8,
    /// `RTA_PRIORITY`.
    pub metric: Option<u32>,
    /// `RTA_GATEWAY`, or the address of `RTA_VIA` (IPv4 routes with IPv6 gateways).
    pub gateway: Option<IpAddr>,
    /// `RTA_OIF`.
    pub oif: Option<u32>,
    /// `RTA_PREFSRC`.
    pub prefsrc: Option<IpAddr>,
    /// `RTA_MULTIPATH`, in order; empty for single-path.
    pub nexthops: Vec<KernelNextHop>,
    /// `RTA_PREF` (IPv6 router preference).
    pub pref: Option<u8>,
    /// `RTA_NH_ID`: the next-hop object of a route added with `nhid` (its next hops are
    /// also given, expanded, as `nexthop_compat_mode` is on by default).
    pub nhid: Option<u32>,
    /// `rtm_flags`.
    pub flags: u32,
}

/// One `struct rtnexthop` of `RTA_MULTIPATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelNextHop {
    /// Nested `RTA_GATEWAY` or `RTA_VIA`.
    pub gateway: Option<IpAddr>,
    /// `rtnh_ifindex`.
    pub oif: u32,
    /// `rtnh_hops + 1`, the weight as `ip route` shows it.
    pub weight: u16,
    /// `rtnh_flags` (RTNH_F_DEAD, RTNH_F_LINKDOWN, ...).
    pub flags: u8,
}

/// A NETLINK_ROUTE socket opened inside the namespace, asking `RTM_GETROUTE` for batches of
/// probes.
///
/// The socket was created by a helper thread that had joined the namespace; a socket keeps the
/// netns it was created in, so lookups go to that namespace from any thread.
pub struct Oracle {
    socket: Socket,
    ns_name: String,
    seq: u32,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
}

impl std::fmt::Debug for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oracle")
            .field("ns", &self.ns_name)
            .field("fd", &self.socket.as_raw_fd())
            .finish()
    }
}

impl Oracle {
    /// Opens the socket inside `ns`, with a 32 MiB receive buffer (`SO_RCVBUFFORCE`, falling back
    /// to `SO_RCVBUF` capped by rmem_max) and a receive timeout so a lost reply is an error
    /// rather than a hang.
    pub fn open(ns: &Netns) -> io::Result<Oracle> {
        let socket = crate::netns::in_netns(&ns.path(), || -> io::Result<Socket> {
            let mut socket = Socket::new(NETLINK_ROUTE)?;
            socket.bind_auto()?;
            Ok(socket)
        })??;
        let fd = socket.as_raw_fd();
        if setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF).is_err() {
            setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF)?;
        }
        // Errors then echo only the request header, not the whole request: less to copy and read.
        let _ = socket.set_cap_ack(true);
        let timeout = libc::timeval {
            tv_sec: RECV_TIMEOUT.as_secs() as libc::time_t,
            tv_usec: 0,
        };
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, timeout)?;
        Ok(Oracle {
            socket,
            ns_name: ns.name().to_string(),
            seq: 1,
            send_buf: Vec::with_capacity(BATCH * 128),
            recv_buf: vec![0; 64 * 1024],
        })
    }

    /// Asks RTM_GETROUTE for every probe, pipelined in batches of 256 requests per send (one
    /// buffer with 256 concatenated nlmsgs, each with its own sequence number and NLM_F_REQUEST
    /// only, no ACK), then reads until all 256 answers of the batch arrived (match by sequence
    /// number).
    ///
    /// Flags in rtm_flags: RTM_F_FIB_MATCH (0x2000) when probe.fibmatch, plus always
    /// RTM_F_LOOKUP_TABLE (0x1000), so that `table` is the table that matched rather than the
    /// route cache's idea of it. Answers are in the order of `probes`. A probe that cannot be
    /// encoded or whose reply cannot be decoded makes the whole call fail with an error naming it.
    pub fn query(&mut self, probes: &[Probe]) -> io::Result<Vec<Answer>> {
        let mut answers = Vec::with_capacity(probes.len());
        for (batch_no, batch) in probes.chunks(BATCH).enumerate() {
            let offset = batch_no * BATCH;
            self.query_batch(batch, offset, &mut answers)?;
        }
        Ok(answers)
    }

    fn query_batch(
        &mut self,
        batch: &[Probe],
        offset: usize,
        answers: &mut Vec<Answer>,
    ) -> io::Result<()> {
        let base = self.seq;
        self.send_buf.clear();
        for (i, probe) in batch.iter().enumerate() {
            encode(probe, base.wrapping_add(i as u32), &mut self.send_buf)
                .map_err(|e| probe_error(offset + i, probe, e))?;
        }
        // Sequence numbers of a batch are never reused by the next one, so stray replies of an
        // abandoned batch cannot be mistaken for current ones.
        self.seq = base.wrapping_add(batch.len() as u32);
        let sent = self.socket.send(&self.send_buf, 0)?;
        if sent != self.send_buf.len() {
            return Err(io::Error::other(format!(
                "netlink send took {sent} of {} bytes",
                self.send_buf.len()
            )));
        }

        let mut slots: Vec<Option<Answer>> = vec![None; batch.len()];
        let mut missing = batch.len();
        // The batch is drained even after a bad reply, so that the socket is clean for the next.
        let mut first_error: Option<io::Error> = None;
        while missing > 0 {
            let len = self.recv(offset, batch)?;
            let mut rest = &self.recv_buf[..len];
            while !rest.is_empty() {
                let nl = NetlinkBuffer::new_checked(rest).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("malformed netlink reply in namespace {}: {e}", self.ns_name),
                    )
                })?;
                let msg_len = nl.length() as usize;
                let index = nl.sequence_number().wrapping_sub(base) as usize;
                if index < batch.len() {
                    let probe = &batch[index];
                    if slots[index].is_some() {
                        first_error.get_or_insert_with(|| {
                            probe_error(offset + index, probe, "second reply to one request".into())
                        });
                    } else {
                        missing -= 1;
                        match decode(nl.message_type(), nl.payload()) {
                            Ok(answer) => slots[index] = Some(answer),
                            Err(e) => {
                                // Placeholder, only so that the slot counts as answered.
                                slots[index] = Some(Answer::Error(0));
                                first_error
                                    .get_or_insert_with(|| probe_error(offset + index, probe, e));
                            }
                        }
                    }
                }
                let step = align(msg_len).min(rest.len());
                rest = &rest[step..];
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        answers.extend(slots.into_iter().flatten());
        Ok(())
    }

    /// Receives one datagram into `recv_buf`, returning its length.
    fn recv(&mut self, offset: usize, batch: &[Probe]) -> io::Result<usize> {
        loop {
            // MSG_TRUNC makes the kernel report the real length, so truncation is detectable.
            match self
                .socket
                .recv(&mut &mut self.recv_buf[..], libc::MSG_TRUNC)
            {
                Ok(len) if len > self.recv_buf.len() => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("netlink reply of {len} bytes exceeds the receive buffer"),
                    ));
                }
                Ok(len) => return Ok(len),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "no reply within {RECV_TIMEOUT:?} in namespace {} for the batch of \
                             probes #{offset}..#{} (first {:?})",
                            self.ns_name,
                            offset + batch.len(),
                            batch.first()
                        ),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn align(len: usize) -> usize {
    let to = usize::from(NLMSG_ALIGNTO);
    (len + to - 1) & !(to - 1)
}

fn probe_error(index: usize, probe: &Probe, why: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("probe #{index} {probe:?}: {why}"),
    )
}

fn setsockopt<T>(
    fd: libc::c_int,
    level: libc::c_int,
    name: libc::c_int,
    value: T,
) -> io::Result<()> {
    // SAFETY: `value` lives across the call and its size is passed alongside.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Appends one `RTM_GETROUTE` request for `probe` to `buf`.
fn encode(probe: &Probe, seq: u32, buf: &mut Vec<u8>) -> Result<(), String> {
    let (family, bits) = match probe.dst {
        IpAddr::V4(_) => (AddressFamily::Inet, 32),
        IpAddr::V6(_) => (AddressFamily::Inet6, 128),
    };
    let mut msg = RouteMessage::default();
    msg.header.address_family = family;
    // `ip route get` sends full-length prefixes too; the kernel ignores them unless strict.
    msg.header.destination_prefix_length = bits;
    msg.header.tos = probe.tos;
    msg.header.flags = if probe.fibmatch {
        RouteFlags::LookupTable | RouteFlags::FibMatch
    } else {
        RouteFlags::LookupTable
    };
    msg.attributes
        .push(RouteAttribute::Destination(RouteAddress::from(probe.dst)));
    if let Some(src) = probe.src {
        if src.is_ipv4() != probe.dst.is_ipv4() {
            return Err(format!(
                "source {src} and destination {} differ in family",
                probe.dst
            ));
        }
        msg.header.source_prefix_length = bits;
        msg.attributes
            .push(RouteAttribute::Source(RouteAddress::from(src)));
    }
    let optional = [
        probe.iif.map(RouteAttribute::Iif),
        probe.oif.map(RouteAttribute::Oif),
        probe.mark.map(RouteAttribute::Mark),
        probe.ipproto.map(RouteAttribute::IpProto),
        // The crate writes these big-endian, as the kernel's NLA_BE16 policy wants.
        probe.sport.map(RouteAttribute::Sport),
        probe.dport.map(RouteAttribute::Dport),
        probe.uid.map(RouteAttribute::Uid),
    ];
    msg.attributes.extend(optional.into_iter().flatten());

    let mut nl = NetlinkMessage::from(RouteNetlinkMessage::GetRoute(msg));
    nl.header.flags = NLM_F_REQUEST;
    nl.header.sequence_number = seq;
    nl.finalize();
    let start = buf.len();
    let len = nl.buffer_len();
    buf.resize(start + align(len), 0);
    nl.serialize(&mut buf[start..start + len]);
    Ok(())
}

/// Decodes one reply: `NLMSG_ERROR` with a negative code, or `RTM_NEWROUTE`.
fn decode(message_type: u16, payload: &[u8]) -> Result<Answer, String> {
    match message_type {
        NLMSG_ERROR => {
            let err = ErrorBuffer::new_checked(payload).map_err(|e| e.to_string())?;
            match err.code() {
                Some(code) if code.get() < 0 => Ok(Answer::Error(-code.get())),
                Some(code) => Err(format!("NLMSG_ERROR with positive code {code}")),
                None => Err("unexpected ACK (NLMSG_ERROR with code 0)".into()),
            }
        }
        libc::RTM_NEWROUTE => decode_route(payload).map(Answer::Route),
        other => Err(format!("unexpected netlink message type {other}")),
    }
}

/// Decodes the parts of a route reply that identify the matched route.
///
/// Attributes are parsed one by one, and only those [`KernelRoute`] keeps: metrics, cache info
/// and encapsulations are irrelevant to which route matched, and skipping them means a kernel
/// attribute this crate version parses badly cannot make a whole reply undecodable.
fn decode_route(payload: &[u8]) -> Result<KernelRoute, String> {
    let header = RouteHeader::parse(payload).map_err(|e| format!("bad rtmsg: {e}"))?;
    let family = header.address_family;
    let unspecified = match family {
        AddressFamily::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        AddressFamily::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        other => return Err(format!("route reply of unexpected family {other:?}")),
    };
    let mut route = KernelRoute {
        table: u32::from(header.table),
        kind: header.kind.into(),
        dst: unspecified,
        dst_len: header.destination_prefix_length,
        src: None,
        src_len: header.source_prefix_length,
        tos: header.tos,
        protocol: header.protocol.into(),
        scope: header.scope.into(),
        metric: None,
        gateway: None,
        oif: None,
        prefsrc: None,
        nexthops: Vec::new(),
        pref: None,
        nhid: None,
        flags: header.flags.bits(),
    };
    let attrs = payload
        .get(RTMSG_LEN..)
        .ok_or("route reply shorter than rtmsg")?;
    for nla in NlasIterator::new(attrs) {
        let nla = nla.map_err(|e| format!("bad route attribute: {e}"))?;
        if nla.kind() == RTA_NH_ID {
            let v: [u8; 4] = nla
                .value()
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or("short RTA_NH_ID")?;
            route.nhid = Some(u32::from_ne_bytes(v));
            continue;
        }
        if !matches!(
            nla.kind(),
            RTA_DST
                | RTA_SRC
                | RTA_OIF
                | RTA_GATEWAY
                | RTA_PRIORITY
                | RTA_PREFSRC
                | RTA_MULTIPATH
                | RTA_TABLE
                | RTA_VIA
                | RTA_PREF
        ) {
            continue;
        }
        match parse_attr(&nla, family, header.kind)? {
            RouteAttribute::Destination(a) => route.dst = ip(&a)?,
            RouteAttribute::Source(a) => route.src = Some(ip(&a)?),
            RouteAttribute::Oif(i) => route.oif = Some(i),
            RouteAttribute::Gateway(a) => route.gateway = Some(ip(&a)?),
            RouteAttribute::Via(v) => route.gateway = Some(via(&v)?),
            RouteAttribute::Priority(m) => route.metric = Some(m),
            RouteAttribute::PrefSource(a) => route.prefsrc = Some(ip(&a)?),
            RouteAttribute::Table(t) => route.table = t,
            RouteAttribute::Preference(p) => route.pref = Some(p.into()),
            RouteAttribute::MultiPath(hops) => {
                route.nexthops = hops.iter().map(next_hop).collect::<Result<_, _>>()?
            }
            other => return Err(format!("attribute {} decoded as {other:?}", nla.kind())),
        }
    }
    Ok(route)
}

fn parse_attr(
    nla: &NlaBuffer<&[u8]>,
    family: AddressFamily,
    kind: RouteType,
) -> Result<RouteAttribute, String> {
    RouteAttribute::parse_with_param(nla, (family, kind, RouteLwEnCapType::None))
        .map_err(|e| format!("bad route attribute {}: {e}", nla.kind()))
}

fn next_hop(hop: &RouteNextHop) -> Result<KernelNextHop, String> {
    let mut gateway = None;
    for attr in &hop.attributes {
        match attr {
            RouteAttribute::Gateway(a) => gateway = Some(ip(a)?),
            RouteAttribute::Via(v) => gateway = Some(via(v)?),
            _ => {}
        }
    }
    Ok(KernelNextHop {
        gateway,
        oif: hop.interface_index,
        weight: u16::from(hop.hops) + 1,
        flags: hop.flags.bits(),
    })
}

fn ip(addr: &RouteAddress) -> Result<IpAddr, String> {
    match addr {
        RouteAddress::Inet(a) => Ok(IpAddr::V4(*a)),
        RouteAddress::Inet6(a) => Ok(IpAddr::V6(*a)),
        other => Err(format!("not an IP address: {other:?}")),
    }
}

fn via(via: &RouteVia) -> Result<IpAddr, String> {
    match via {
        RouteVia::Inet(a) => Ok(IpAddr::V4(*a)),
        RouteVia::Inet6(a) => Ok(IpAddr::V6(*a)),
        other => Err(format!("RTA_VIA is not an IP address: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_ports_big_endian_and_flags() {
        let probe = Probe {
            sport: Some(0x1234),
            dport: Some(80),
            fibmatch: true,
            ..Probe::to("192.0.2.1".parse().unwrap())
        };
        let mut buf = Vec::new();
        encode(&probe, 7, &mut buf).unwrap();
        let nl = NetlinkBuffer::new_checked(&buf[..]).unwrap();
        assert_eq!(nl.length() as usize, buf.len());
        assert_eq!(nl.sequence_number(), 7);
        assert_eq!(nl.flags(), NLM_F_REQUEST);
        assert_eq!(nl.message_type(), libc::RTM_GETROUTE);
        let payload = nl.payload();
        assert_eq!(&payload[8..12], &0x3000u32.to_ne_bytes());
        let mut sport = None;
        for nla in NlasIterator::new(&payload[RTMSG_LEN..]) {
            let nla = nla.unwrap();
            if nla.kind() == 28 {
                sport = Some(nla.value().to_vec());
            }
        }
        assert_eq!(sport, Some(vec![0x12, 0x34]));
    }

    #[test]
    fn rejects_mixed_families() {
        let probe = Probe {
            src: Some("2001:db8::1".parse().unwrap()),
            ..Probe::to("192.0.2.1".parse().unwrap())
        };
        assert!(encode(&probe, 1, &mut Vec::new()).is_err());
    }

    #[test]
    fn decodes_errors_and_rejects_garbage() {
        let mut payload = (-101i32).to_ne_bytes().to_vec();
        payload.extend_from_slice(&[0; 16]);
        assert_eq!(decode(NLMSG_ERROR, &payload), Ok(Answer::Error(101)));
        assert!(decode(NLMSG_ERROR, &[0; 20]).is_err());
        assert!(decode(libc::RTM_NEWROUTE, &[2, 24]).is_err());
        assert!(decode(
            libc::RTM_NEWROUTE,
            &[2, 24, 0, 0, 254, 4, 0, 1, 0, 0, 0, 0, 5, 0]
        )
        .is_err());
        assert!(decode(3, &[]).is_err());
    }
}
