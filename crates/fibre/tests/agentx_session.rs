//! The subagent's session against a scripted master on a Unix socket (no root, no snmpd): it
//! opens and registers each object; answers PDUs that arrive several in one write or split
//! byte by byte, in little-endian order too; answers GETNEXT with the router's rows; loses the
//! session on a header it cannot parse (closing with parseError) and connects again; after
//! the master closes, connects again; and on stop, closes with reason shutdown.
use fibre::io::agentx::mib::{Tables, REGISTERED};
use fibre::io::agentx::session::{serve, Config, Stats};
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::Router;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const NBO: u8 = 0x10;

/// A PDU as a master encodes it: header (big- or little-endian) and payload.
fn pdu(kind: u8, big: bool, session: u32, packet: u32, payload: &[u8]) -> Vec<u8> {
    let w = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut b = vec![1, kind, if big { NBO } else { 0 }, 0];
    for v in [session, 0, packet, payload.len() as u32] {
        b.extend(w(v));
    }
    b.extend(payload);
    b
}

fn oid(o: &[u32], big: bool) -> Vec<u8> {
    let mut b = vec![o.len() as u8, 0, 0, 0];
    for s in o {
        b.extend(if big {
            s.to_be_bytes()
        } else {
            s.to_le_bytes()
        });
    }
    b
}

/// A Response to the subagent's `packet`, error 0.
fn response(session: u32, packet: u32) -> Vec<u8> {
    pdu(18, true, session, packet, &[0; 8])
}

/// Reads one PDU: (type, flags, session, packet, payload), its header in either order.
fn read_pdu(s: &mut UnixStream) -> (u8, u8, u32, u32, Vec<u8>) {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).expect("a header");
    let big = h[2] & NBO != 0;
    let w = |at: usize| {
        let b = [h[at], h[at + 1], h[at + 2], h[at + 3]];
        if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let mut payload = vec![0u8; w(16) as usize];
    s.read_exact(&mut payload).expect("a payload");
    (h[1], h[2], w(4), w(12), payload)
}

/// Accepts the subagent (within 20 s: a subagent that does not come back fails the test
/// rather than hanging it) and answers its Open and Registers; the session id given.
fn accept(listener: &UnixListener, session: u32) -> UnixStream {
    listener.set_nonblocking(true).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut s = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the subagent did not connect"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let (kind, _, _, packet, _) = read_pdu(&mut s);
    assert_eq!(kind, 1, "Open first");
    s.write_all(&response(session, packet)).unwrap();
    for subtree in REGISTERED {
        let (kind, _, sid, packet, payload) = read_pdu(&mut s);
        assert_eq!((kind, sid), (3, session), "Register in the session");
        // timeout, priority, range_subid, reserved, then the subtree (prefix-compressed).
        assert_eq!(payload[1], 127, "the default priority");
        assert_eq!(payload[4] as usize, subtree.len() - 5);
        assert_eq!(payload[5], 2, "prefix 1.3.6.1.2");
        s.write_all(&response(session, packet)).unwrap();
    }
    s
}

fn router() -> Arc<Router> {
    let mut b = Batch::new(Router::new());
    b.mode = BatchMode::Force;
    b.run_text(
        "link add va type veth peer name vb\nlink set va up\n\
         addr add 192.0.2.1/24 dev va\nroute add 10.0.0.0/8 via 192.0.2.2\n",
    );
    Arc::new(b.router)
}

#[test]
fn a_session_frames_answers_reconnects_and_closes() {
    let dir = std::env::temp_dir().join(format!("fibre-agentx-session-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("master.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(Stats::default());
    let mut config = Config::new(&path);
    config.tables = Tables::Main;
    config.retry_max = Duration::from_millis(200);
    let agent = {
        let (stop, stats, router) = (Arc::clone(&stop), Arc::clone(&stats), router());
        std::thread::spawn(move || {
            serve(
                &config,
                &move || Arc::clone(&router),
                &stop,
                &stats,
                &mut |_| {},
            )
        })
    };

    let mut s = accept(&listener, 7);
    // Three GETNEXTs from ipForward itself: two in one write (little-endian, then
    // big-endian), the third a byte at a time.
    let start = [1, 3, 6, 1, 2, 1, 4, 24];
    let range = |big: bool| [oid(&start, big), oid(&[], big)].concat();
    let mut two = pdu(6, false, 7, 100, &range(false));
    two.extend(pdu(6, true, 7, 101, &range(true)));
    s.write_all(&two).unwrap();
    for b in pdu(6, true, 7, 102, &range(true)) {
        s.write_all(&[b]).unwrap();
    }
    for want in [100, 101, 102] {
        let (kind, _, sid, packet, payload) = read_pdu(&mut s);
        assert_eq!((kind, sid, packet), (18, 7, want));
        // sysUpTime, error 0, index 0, then one varbind: Gauge32 ipCidrRouteNumber.0 = 2
        // (10.0.0.0/8 and the connected 192.0.2.0/24 in table main).
        assert_eq!(&payload[4..8], &[0, 0, 0, 0], "no error");
        assert_eq!(&payload[8..10], &[0, 66], "Gauge32");
        assert_eq!(
            &payload[12..16],
            &[5, 2, 0, 0],
            "1.3.6.1.2 + 5 sub-identifiers"
        );
        assert_eq!(
            &payload[16..36],
            &[0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 24, 0, 0, 0, 3, 0, 0, 0, 0]
        );
        assert_eq!(&payload[36..40], &2u32.to_be_bytes());
    }
    // A SET is refused: notWritable (17) at index 1.
    let varbind = [
        vec![0, 2, 0, 0],
        oid(&[1, 3, 6, 1, 2, 1, 4, 24, 6, 0], true),
        vec![0, 0, 0, 5],
    ]
    .concat();
    s.write_all(&pdu(8, true, 7, 103, &varbind)).unwrap();
    let (_, _, _, packet, payload) = read_pdu(&mut s);
    assert_eq!((packet, &payload[4..8]), (103, &[0u8, 17, 0, 1][..]));

    // A header that is not AgentX: the subagent closes with parseError and comes back.
    s.write_all(&[9u8; 20]).unwrap();
    let (kind, _, _, _, payload) = read_pdu(&mut s);
    assert_eq!((kind, payload[0]), (2, 2), "Close, parseError");
    drop(s);
    let mut s = accept(&listener, 8);

    // The master closes the session: the subagent comes back again.
    s.write_all(&pdu(2, true, 8, 200, &[5, 0, 0, 0])).unwrap();
    drop(s);
    let mut s = accept(&listener, 9);

    // Stopped: it closes with reason shutdown, and the serving thread ends.
    stop.store(true, Ordering::Relaxed);
    let (kind, _, sid, packet, payload) = read_pdu(&mut s);
    assert_eq!((kind, sid, payload[0]), (2, 9, 5), "Close, shutdown");
    s.write_all(&response(9, packet)).unwrap();
    agent.join().expect("the subagent ends");
    assert_eq!(stats.sessions.load(Ordering::Relaxed), 3);
    assert_eq!(stats.malformed.load(Ordering::Relaxed), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
