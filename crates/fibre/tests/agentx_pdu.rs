//! The AgentX decoder and the answers to what it decodes never panic, whatever the master
//! sends: arbitrary bytes, and well-formed requests (encoded here by this file's own reading
//! of RFC 2741, in both byte orders, with and without OID prefixes) cut short or with a byte
//! changed. Every reply decodes again as a Response to the same packet, and a well-formed
//! Get/GetNext/GetBulk gets one varbind per range (per repetition for GetBulk, within the
//! bound).
use fibre::io::agentx::answer::{answer, Answer, BULK_MAX_VARBINDS};
use fibre::io::agentx::mib::{Mib, Tables};
use fibre::io::agentx::pdu::{self, Header, Request, HEADER_LEN};
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::Router;
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};

fn router() -> Arc<Router> {
    static ROUTER: OnceLock<Arc<Router>> = OnceLock::new();
    Arc::clone(ROUTER.get_or_init(|| {
        let mut b = Batch::new(Router::new());
        b.mode = BatchMode::Force;
        b.run_text(
            "link add va type veth peer name vb\nlink set va up\nlink set vb up\n\
             addr add 192.0.2.1/24 dev va\naddr add 2001:db8::1/64 dev va\n\
             route add 10.0.0.0/8 nexthop via 192.0.2.2 dev va nexthop via 192.0.2.3 dev va\n\
             route add blackhole 10.1.0.0/16 table 100\n\
             route add 2001:db8:1::/48 via 2001:db8::2 metric 5\n\
             route add unreachable 2001:db8:2::/48 from 2001:db8:9::/48\n",
        );
        Arc::new(b.router)
    }))
}

/// Decodes `bytes` as a PDU and answers it; checks the reply. Returns the decoded request.
fn decode_and_answer(bytes: &[u8]) -> Option<Request> {
    let head: [u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
    let header = Header::decode(&head).ok()?;
    let payload = bytes.get(HEADER_LEN..HEADER_LEN + header.payload_len as usize)?;
    let p = pdu::decode(header, payload).ok()?;
    let mut mib = Mib::new(Tables::All);
    let source = router;
    if let Answer::Reply(reply, varbinds) = answer(&mut mib, &source, &p) {
        let rh: [u8; HEADER_LEN] = reply[..HEADER_LEN].try_into().unwrap();
        let rh = Header::decode(&rh).expect("the reply's header decodes");
        let back = pdu::decode(rh, &reply[HEADER_LEN..]).expect("the reply decodes");
        assert!(matches!(back.request, Request::Response { .. }));
        assert_eq!(rh.packet_id, header.packet_id);
        assert_eq!(rh.transaction_id, header.transaction_id);
        match (&p.request, varbinds) {
            (Request::Get(r) | Request::GetNext(r), Some(n)) => assert_eq!(n, r.len()),
            (
                Request::GetBulk {
                    non_repeaters,
                    max_repetitions,
                    ranges,
                },
                Some(n),
            ) => {
                let once = usize::from(*non_repeaters).min(ranges.len());
                let most = once + (ranges.len() - once) * usize::from(*max_repetitions);
                assert!(n <= most.min(BULK_MAX_VARBINDS.max(once)), "{n} varbinds");
                assert!(n >= once);
            }
            _ => {}
        }
    }
    Some(p.request)
}

/// A request as a master encodes it.
fn encode(kind: u8, big: bool, packet: u32, body: &[u8]) -> Vec<u8> {
    let word = |w: u32| {
        if big {
            w.to_be_bytes()
        } else {
            w.to_le_bytes()
        }
    };
    let mut b = vec![1, kind, if big { pdu::NETWORK_BYTE_ORDER } else { 0 }, 0];
    for w in [7, 9, packet, body.len() as u32] {
        b.extend(word(w));
    }
    b.extend(body);
    b
}

fn oid_bytes(oid: &[u32], include: bool, big: bool) -> Vec<u8> {
    let (prefix, rest) = match oid {
        [1, 3, 6, 1, x @ 1..=255, rest @ ..] => (*x as u8, rest),
        _ => (0, oid),
    };
    let mut b = vec![rest.len() as u8, prefix, u8::from(include), 0];
    for s in rest {
        b.extend(if big {
            s.to_be_bytes()
        } else {
            s.to_le_bytes()
        });
    }
    b
}

fn oid() -> impl Strategy<Value = Vec<u32>> {
    let tail = prop::collection::vec(prop_oneof![0u32..20, 0u32..300, any::<u32>()], 0..40);
    (
        any::<bool>(),
        prop_oneof![Just(6u32), Just(4), 0u32..30],
        tail,
    )
        .prop_map(|(under, col, tail)| {
            let mut o = if under {
                vec![1, 3, 6, 1, 2, 1, 4, 24, 7, 1, col]
            } else {
                vec![1, 3, 6, 1, 2, 1, 4, 24]
            };
            o.extend(tail);
            o
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400), kind in 0u8..20, len in 0u32..400) {
        // Half the cases get a plausible header, so that payload decoding is reached.
        let mut b = bytes;
        if b.len() >= HEADER_LEN && len % 2 == 0 {
            b[0] = 1;
            b[1] = kind;
            let payload = ((b.len() - HEADER_LEN) as u32) & !3;
            b[16..20].copy_from_slice(&payload.to_le_bytes());
            b[2] &= !pdu::NETWORK_BYTE_ORDER;
            b.truncate(HEADER_LEN + payload as usize);
        }
        decode_and_answer(&b);
    }

    #[test]
    fn requests_answer_and_their_damage_never_panics(
        kind in prop_oneof![Just(5u8), Just(6), Just(7), Just(8), Just(2), Just(18), 0u8..20],
        big in any::<bool>(),
        ranges in prop::collection::vec((oid(), any::<bool>(), prop::option::of(oid())), 0..6),
        bulk in (0u16..4, 0u16..300),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        flip_to in any::<u8>(),
    ) {
        let mut body = Vec::new();
        if kind == 7 {
            let half = |v: u16| if big { v.to_be_bytes() } else { v.to_le_bytes() };
            body.extend(half(bulk.0));
            body.extend(half(bulk.1));
        }
        for (start, include, end) in &ranges {
            body.extend(oid_bytes(start, *include, big));
            body.extend(oid_bytes(end.as_deref().unwrap_or(&[]), false, big));
        }
        let whole = encode(kind, big, 42, &body);
        let request = decode_and_answer(&whole);
        if matches!(kind, 5..=7) {
            prop_assert!(request.is_some(), "a well-formed request decodes");
        }
        let mut damaged = whole.clone();
        damaged.truncate(cut.index(whole.len() + 1));
        decode_and_answer(&damaged);
        let mut damaged = whole.clone();
        let at = flip.index(whole.len());
        damaged[at] = flip_to;
        decode_and_answer(&damaged);
    }
}
