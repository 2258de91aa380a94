//! GETNEXT latency through snmpd: SNMPv2c GetNextRequests (encoded with `rasn-snmp`) sent one at
//! a time from a UDP socket inside the agent's namespace, each at a random point of the table
//! (a route's destination, cut before the rest of the index), timed from send to answer.
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rasn::types::{ObjectIdentifier, OctetString};
use rasn_snmp::v2::{GetNextRequest, GetRequest, Pdu, Response, VarBind, VarBindValue};
use rasn_snmp::v2c::Message;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// inetCidrRouteIfIndex: the first column.
const IF_INDEX_COLUMN: [u32; 11] = [1, 3, 6, 1, 2, 1, 4, 24, 7, 1, 7];

/// The OID at a route's destination: column 7, DestType, Dest, PfxLen (the rest of the index
/// left out, so that GETNEXT finds the route's first row).
fn point(bytes: &[u8], len: u8) -> Vec<u32> {
    let mut oid = IF_INDEX_COLUMN.to_vec();
    oid.push(if bytes.len() == 4 { 1 } else { 2 });
    oid.push(bytes.len() as u32);
    oid.extend(bytes.iter().map(|b| u32::from(*b)));
    oid.push(u32::from(len));
    oid
}

/// Times `probes` GETNEXT requests to 127.0.0.1:`port` in `netns`, at random routes of `v4`
/// and `v6`.
pub fn getnext_latencies(
    netns: &str,
    port: u16,
    v4: &[(u32, u8)],
    v6: &[(u128, u8)],
    probes: usize,
    seed: u64,
) -> Result<Vec<Duration>, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let oids: Vec<Vec<u32>> = (0..probes)
        .filter_map(|_| {
            let pick4 = !v4.is_empty() && (v6.is_empty() || rng.gen_bool(0.5));
            if pick4 {
                let (a, len) = v4[rng.gen_range(0..v4.len())];
                Some(point(&a.to_be_bytes(), len))
            } else if !v6.is_empty() {
                let (a, len) = v6[rng.gen_range(0..v6.len())];
                Some(point(&a.to_be_bytes(), len))
            } else {
                None
            }
        })
        .collect();
    timed(netns, port, oids, false)
}

/// The time of one GET of `oid` (the first after a change of the table includes any work
/// the agent does once per table, such as counting rows).
pub fn get_time(netns: &str, port: u16, oid: &[u32]) -> Result<Duration, String> {
    Ok(timed(netns, port, vec![oid.to_vec()], true)?[0])
}

/// Sends a GET (`get`) or GETNEXT for each of `oids`, one at a time, from a socket in
/// `netns`; the time of each to its answer.
fn timed(netns: &str, port: u16, oids: Vec<Vec<u32>>, get: bool) -> Result<Vec<Duration>, String> {
    let path = format!("/run/netns/{netns}");
    // The socket is made inside the namespace, by a thread that enters it.
    std::thread::spawn(move || -> Result<Vec<Duration>, String> {
        let ns = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        use std::os::fd::AsRawFd;
        // SAFETY: setns on an open namespace file; it changes only this thread's namespace.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
        }
        let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        socket
            .connect(("127.0.0.1", port))
            .map_err(|e| e.to_string())?;
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let mut times = Vec::with_capacity(oids.len());
        let mut buf = vec![0u8; 65_536];
        for (i, oid) in oids.iter().enumerate() {
            let id = i as i32 + 1;
            let name = ObjectIdentifier::new(oid.clone()).ok_or("an OID")?;
            let pdu = Pdu {
                request_id: id,
                error_status: 0,
                error_index: 0,
                variable_bindings: vec![VarBind {
                    name,
                    value: VarBindValue::Unspecified,
                }],
            };
            let community = OctetString::from_static(b"public");
            let bytes = if get {
                rasn::ber::encode(&Message {
                    version: 1.into(),
                    community,
                    data: GetRequest(pdu),
                })
            } else {
                rasn::ber::encode(&Message {
                    version: 1.into(),
                    community,
                    data: GetNextRequest(pdu),
                })
            }
            .map_err(|e| e.to_string())?;
            let t = Instant::now();
            socket.send(&bytes).map_err(|e| e.to_string())?;
            let response = loop {
                let n = socket
                    .recv(&mut buf)
                    .map_err(|e| format!("GETNEXT {i}: no answer: {e}"))?;
                let m: Message<Response> =
                    rasn::ber::decode(&buf[..n]).map_err(|e| format!("a response: {e}"))?;
                if m.data.0.request_id == id {
                    break m;
                }
            };
            times.push(t.elapsed());
            let vb = response
                .data
                .0
                .variable_bindings
                .first()
                .ok_or("no varbind")?;
            let got: &[u32] = &vb.name;
            let answered = if get {
                got == oid.as_slice()
            } else {
                got.starts_with(&IF_INDEX_COLUMN[..9])
            };
            if !answered {
                return Err(format!(
                    "GETNEXT {oid:?} answered {got:?}, outside the table"
                ));
            }
        }
        Ok(times)
    })
    .join()
    .map_err(|_| "the latency thread panicked".to_string())?
}
