//! Whatever a master sends, decoding it and answering it never panics, and every reply
//! decodes again as a Response to the same packet.
#![no_main]
use fibre::io::agentx::answer::{answer, Answer};
use fibre::io::agentx::mib::{Mib, Tables};
use fibre::io::agentx::pdu::{self, Header, Request, HEADER_LEN};
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::Router;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

fn router() -> Arc<Router> {
    static ROUTER: OnceLock<Arc<Router>> = OnceLock::new();
    Arc::clone(ROUTER.get_or_init(|| {
        let mut b = Batch::new(Router::new());
        b.mode = BatchMode::Force;
        b.run_text(
            "link add va type veth peer name vb\nlink set va up\n\
             addr add 192.0.2.1/24 dev va\naddr add 2001:db8::1/64 dev va\n\
             route add 10.0.0.0/8 nexthop via 192.0.2.2 dev va nexthop via 192.0.2.3 dev va\n\
             route add 2001:db8:1::/48 via 2001:db8::2\n",
        );
        Arc::new(b.router)
    }))
}

fuzz_target!(|data: &[u8]| {
    let Some(head) = data.get(..HEADER_LEN) else { return };
    let head: [u8; HEADER_LEN] = head.try_into().expect("20 bytes");
    let Ok(header) = Header::decode(&head) else { return };
    let Some(payload) = data.get(HEADER_LEN..HEADER_LEN + header.payload_len as usize) else {
        return;
    };
    let Ok(p) = pdu::decode(header, payload) else { return };
    let mut mib = Mib::new(Tables::All);
    if let Answer::Reply(reply, _) = answer(&mut mib, &router, &p) {
        let rh: [u8; HEADER_LEN] = reply[..HEADER_LEN].try_into().expect("a header");
        let rh = Header::decode(&rh).expect("the reply's header decodes");
        let back = pdu::decode(rh, &reply[HEADER_LEN..]).expect("the reply decodes");
        assert!(matches!(back.request, Request::Response { .. }));
        assert_eq!(rh.packet_id, header.packet_id);
    }
});
