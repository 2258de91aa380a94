//! The AgentX PDUs of a read-only subagent (RFC 2741 §5-6), decoded from what a master sends
//! and encoded for what the subagent sends.
//!
//! Decoding never panics and never trusts a length: every field is read through a bounded
//! cursor, and an error names the field and its byte offset. Encoding writes network byte
//! order (the NETWORK_BYTE_ORDER flag set), which every master must accept; OIDs under
//! 1.3.6.1 are sent with the RFC's prefix compression.
//!
//! Written here rather than taken from the `agentx` crate (0.1.1), which was evaluated: its
//! Response cannot carry SNMP error codes (a SET could not be answered notWritable), its OIDs
//! do not give their sub-identifiers back, and two of its paths panic on input from the master
//! (an unchecked multiplication of sysUpTime, and re-encoding a decoded long OID).
use std::fmt;

/// The fixed header's length.
pub const HEADER_LEN: usize = 20;
/// The longest payload accepted from a master: far above any request a master sends (an
/// SNMP message is at most 64 KiB), low enough that a corrupt length cannot exhaust memory.
pub const MAX_PAYLOAD: u32 = 1 << 20;
/// The most sub-identifiers an OID may have (RFC 2741 §5.1, as SNMP's own limit).
pub const MAX_SUB_IDS: usize = 128;

/// Header flag: the PDU carries a non-default context.
pub const NON_DEFAULT_CONTEXT: u8 = 0x08;
/// Header flag: multi-byte integers are in network byte order.
pub const NETWORK_BYTE_ORDER: u8 = 0x10;

/// PDU types (`h.type`), named as RFC 2741 §6.1 names them.
#[allow(missing_docs)]
pub mod kind {
    pub const OPEN: u8 = 1;
    pub const CLOSE: u8 = 2;
    pub const REGISTER: u8 = 3;
    pub const GET: u8 = 5;
    pub const GET_NEXT: u8 = 6;
    pub const GET_BULK: u8 = 7;
    pub const TEST_SET: u8 = 8;
    pub const COMMIT_SET: u8 = 9;
    pub const UNDO_SET: u8 = 10;
    pub const CLEANUP_SET: u8 = 11;
    pub const PING: u8 = 13;
    pub const RESPONSE: u8 = 18;
}

/// `res.error` values a subagent sends or reads.
pub mod error {
    /// noAgentXError / noError.
    pub const NONE: u16 = 0;
    /// SNMP notWritable: the answer to every SET.
    pub const NOT_WRITABLE: u16 = 17;
    /// The session is not open (the master forgot it).
    pub const NOT_OPEN: u16 = 257;
    /// A context the subagent does not serve.
    pub const UNSUPPORTED_CONTEXT: u16 = 262;
    /// Another session registered the same subtree at the same priority.
    pub const DUPLICATE_REGISTRATION: u16 = 263;
    /// The PDU could not be parsed.
    pub const PARSE_ERROR: u16 = 266;
    /// The PDU is not one a subagent answers.
    pub const PROCESSING_ERROR: u16 = 268;
}

/// Close reasons (`r.reason`), named as RFC 2741 §6.2.2 names them.
#[allow(missing_docs)]
pub mod close {
    pub const PARSE_ERROR: u8 = 2;
    pub const SHUTDOWN: u8 = 5;
}

/// Why bytes are not a PDU: the field, and its offset from the PDU's start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The field that could not be read, or what was wrong with it.
    pub what: String,
    /// Its offset in bytes from the start of the PDU (header included).
    pub offset: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentX PDU: {} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for DecodeError {}

/// The fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// `h.type`.
    pub kind: u8,
    /// `h.flags`.
    pub flags: u8,
    /// `h.sessionID`.
    pub session_id: u32,
    /// `h.transactionID`.
    pub transaction_id: u32,
    /// `h.packetID`.
    pub packet_id: u32,
    /// `h.payload_length`.
    pub payload_len: u32,
}

impl Header {
    /// Reads a header, checking the version, and that the payload length is a multiple of 4
    /// and at most [`MAX_PAYLOAD`].
    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, DecodeError> {
        let err = |what: &str, offset| {
            Err(DecodeError {
                what: what.into(),
                offset,
            })
        };
        if b[0] != 1 {
            return err(&format!("version {} (only 1 is AgentX)", b[0]), 0);
        }
        let big = b[2] & NETWORK_BYTE_ORDER != 0;
        let word = |at: usize| {
            let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
            if big {
                u32::from_be_bytes(w)
            } else {
                u32::from_le_bytes(w)
            }
        };
        let header = Header {
            kind: b[1],
            flags: b[2],
            session_id: word(4),
            transaction_id: word(8),
            packet_id: word(12),
            payload_len: word(16),
        };
        if !header.payload_len.is_multiple_of(4) {
            return err("payload length not a multiple of 4", 16);
        }
        if header.payload_len > MAX_PAYLOAD {
            return err(
                &format!("payload length {} too long", header.payload_len),
                16,
            );
        }
        Ok(header)
    }

    fn big_endian(&self) -> bool {
        self.flags & NETWORK_BYTE_ORDER != 0
    }
}

/// A search range: from `start` (itself included when `include`) up to `end` (excluded;
/// empty: no bound).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchRange {
    /// The starting OID.
    pub start: Vec<u32>,
    /// Whether `start` itself may be returned.
    pub include: bool,
    /// The ending OID; empty when unbounded.
    pub end: Vec<u32>,
}

/// What a master asks of a subagent (or answers it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Get: each range's start, exactly.
    Get(Vec<SearchRange>),
    /// GetNext: the first OID in each range.
    GetNext(Vec<SearchRange>),
    /// GetBulk.
    GetBulk {
        /// Ranges answered once, as GetNext.
        non_repeaters: u16,
        /// Rounds for the other ranges.
        max_repetitions: u16,
        /// The ranges.
        ranges: Vec<SearchRange>,
    },
    /// TestSet with this many varbinds (their names are not needed: every SET is refused).
    TestSet(usize),
    /// CommitSet.
    CommitSet,
    /// UndoSet.
    UndoSet,
    /// CleanupSet.
    CleanupSet,
    /// Close, with its reason.
    Close(u8),
    /// A response to what the subagent sent.
    Response {
        /// `res.error`.
        error: u16,
        /// `res.index`.
        index: u16,
    },
    /// A PDU type a master does not send to a subagent.
    Other(u8),
}

/// A decoded PDU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pdu {
    /// The header.
    pub header: Header,
    /// The non-default context, when the header flags one.
    pub context: Option<Vec<u8>>,
    /// The body.
    pub request: Request,
}

/// A bounded reader of a payload.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
    big: bool,
}

impl<'a> Cursor<'a> {
    fn fail<T>(&self, what: &str) -> Result<T, DecodeError> {
        Err(DecodeError {
            what: what.into(),
            offset: HEADER_LEN + self.at,
        })
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        match self.b.get(self.at..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.at += n;
                Ok(s)
            }
            None => self.fail(&format!("{what} past the payload's end")),
        }
    }

    fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        let s = self.take(2, what)?;
        let w = [s[0], s[1]];
        Ok(if self.big {
            u16::from_be_bytes(w)
        } else {
            u16::from_le_bytes(w)
        })
    }

    fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        let s = self.take(4, what)?;
        let w = [s[0], s[1], s[2], s[3]];
        Ok(if self.big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        })
    }

    /// An OID, with its include flag.
    fn oid(&mut self, what: &str) -> Result<(Vec<u32>, bool), DecodeError> {
        let n = usize::from(self.u8(what)?);
        let prefix = self.u8(what)?;
        let include = self.u8(what)?;
        self.u8(what)?;
        if n > MAX_SUB_IDS {
            return self.fail(&format!(
                "{what}: {n} sub-identifiers (at most {MAX_SUB_IDS})"
            ));
        }
        let mut oid = Vec::with_capacity(n + 5);
        if prefix != 0 {
            oid.extend([1, 3, 6, 1, u32::from(prefix)]);
        }
        for _ in 0..n {
            oid.push(self.u32(what)?);
        }
        Ok((oid, include != 0))
    }

    /// An octet string (padded to 4 bytes).
    fn octets(&mut self, what: &str) -> Result<Vec<u8>, DecodeError> {
        let len = self.u32(what)? as usize;
        if len > self.b.len() {
            return self.fail(&format!("{what}: length {len} past the payload's end"));
        }
        let s = self.take(len, what)?.to_vec();
        self.take((4 - len % 4) % 4, what)?;
        Ok(s)
    }

    fn ranges(&mut self) -> Result<Vec<SearchRange>, DecodeError> {
        let mut ranges = Vec::new();
        while self.at < self.b.len() {
            let (start, include) = self.oid("search range start")?;
            let (end, _) = self.oid("search range end")?;
            ranges.push(SearchRange {
                start,
                include,
                end,
            });
        }
        Ok(ranges)
    }

    /// Skips one varbind, checking its type and lengths.
    fn varbind(&mut self) -> Result<(), DecodeError> {
        let ty = self.u16("varbind type")?;
        self.u16("varbind reserved")?;
        self.oid("varbind name")?;
        match ty {
            2 | 65 | 66 | 67 => drop(self.u32("varbind value")?),
            70 => drop(self.take(8, "varbind value")?),
            4 | 64 | 68 => drop(self.octets("varbind value")?),
            6 => drop(self.oid("varbind value")?),
            5 | 128..=130 => {}
            t => return self.fail(&format!("varbind type {t} unknown")),
        }
        Ok(())
    }
}

/// Decodes a PDU's payload, given its decoded header.
pub fn decode(header: Header, payload: &[u8]) -> Result<Pdu, DecodeError> {
    let mut c = Cursor {
        b: payload,
        at: 0,
        big: header.big_endian(),
    };
    if payload.len() != header.payload_len as usize {
        return c.fail("payload length differs from the header's");
    }
    let takes_context = matches!(
        header.kind,
        kind::GET | kind::GET_NEXT | kind::GET_BULK | kind::TEST_SET | kind::PING
    );
    let context = if takes_context && header.flags & NON_DEFAULT_CONTEXT != 0 {
        Some(c.octets("context")?)
    } else {
        None
    };
    let request = match header.kind {
        kind::GET => Request::Get(c.ranges()?),
        kind::GET_NEXT => Request::GetNext(c.ranges()?),
        kind::GET_BULK => {
            let non_repeaters = c.u16("non_repeaters")?;
            let max_repetitions = c.u16("max_repetitions")?;
            Request::GetBulk {
                non_repeaters,
                max_repetitions,
                ranges: c.ranges()?,
            }
        }
        kind::TEST_SET => {
            let mut n = 0;
            while c.at < payload.len() {
                c.varbind()?;
                n += 1;
            }
            Request::TestSet(n)
        }
        kind::COMMIT_SET => Request::CommitSet,
        kind::UNDO_SET => Request::UndoSet,
        kind::CLEANUP_SET => Request::CleanupSet,
        kind::CLOSE => Request::Close(c.u8("close reason")?),
        kind::RESPONSE => {
            c.u32("sysUpTime")?;
            let error = c.u16("res.error")?;
            let index = c.u16("res.index")?;
            // The varbinds of a response to a subagent (none are expected) are checked, not
            // kept.
            while c.at < payload.len() {
                c.varbind()?;
            }
            Request::Response { error, index }
        }
        other => Request::Other(other),
    };
    if !matches!(request, Request::Other(_) | Request::Close(_)) && c.at != payload.len() {
        return c.fail("bytes after the PDU's last field");
    }
    Ok(Pdu {
        header,
        context,
        request,
    })
}

/// A value of a response's varbind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// `INTEGER`.
    Integer(i32),
    /// `Gauge32`.
    Gauge32(u32),
    /// `Counter32`.
    Counter32(u32),
    /// `IpAddress`.
    IpAddress([u8; 4]),
    /// `OBJECT IDENTIFIER`.
    Oid(Vec<u32>),
    /// noSuchObject.
    NoSuchObject,
    /// noSuchInstance.
    NoSuchInstance,
    /// endOfMibView.
    EndOfMibView,
}

impl From<super::mib::MibValue> for Value {
    fn from(v: super::mib::MibValue) -> Value {
        use super::mib::MibValue as M;
        match v {
            M::Integer(i) => Value::Integer(i),
            M::Gauge32(g) => Value::Gauge32(g),
            M::Counter32(c) => Value::Counter32(c),
            M::IpAddress(a) => Value::IpAddress(a),
            M::Oid(o) => Value::Oid(o),
        }
    }
}

/// A varbind of a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarBind {
    /// Its name.
    pub name: Vec<u32>,
    /// Its value.
    pub value: Value,
}

/// Writes PDUs in network byte order.
struct Writer {
    b: Vec<u8>,
}

impl Writer {
    fn new(kind: u8, session_id: u32, transaction_id: u32, packet_id: u32, flags: u8) -> Self {
        let mut b = Vec::with_capacity(64);
        b.extend([1, kind, flags | NETWORK_BYTE_ORDER, 0]);
        for w in [session_id, transaction_id, packet_id, 0] {
            b.extend(w.to_be_bytes());
        }
        Writer { b }
    }

    fn u32(&mut self, w: u32) {
        self.b.extend(w.to_be_bytes());
    }

    /// An OID: compressed when under 1.3.6.1.X (X in 1..=255); sub-identifiers past the
    /// 255 a PDU can carry are cut (no OID fibre sends or echoes is that long: decoding caps
    /// them at 128).
    fn oid(&mut self, oid: &[u32], include: bool) {
        let (prefix, rest) = match oid {
            [1, 3, 6, 1, x @ 1..=255, rest @ ..] => (*x as u8, rest),
            _ => (0, oid),
        };
        let rest = &rest[..rest.len().min(255)];
        self.b
            .extend([rest.len() as u8, prefix, u8::from(include), 0]);
        for s in rest {
            self.u32(*s);
        }
    }

    fn octets(&mut self, s: &[u8]) {
        self.u32(s.len() as u32);
        self.b.extend(s);
        self.b.resize(self.b.len() + (4 - s.len() % 4) % 4, 0);
    }

    fn varbind(&mut self, vb: &VarBind) {
        let ty: u16 = match vb.value {
            Value::Integer(_) => 2,
            Value::Oid(_) => 6,
            Value::IpAddress(_) => 64,
            Value::Counter32(_) => 65,
            Value::Gauge32(_) => 66,
            Value::NoSuchObject => 128,
            Value::NoSuchInstance => 129,
            Value::EndOfMibView => 130,
        };
        self.b.extend(ty.to_be_bytes());
        self.b.extend([0, 0]);
        self.oid(&vb.name, false);
        match &vb.value {
            Value::Integer(i) => self.b.extend(i.to_be_bytes()),
            Value::Gauge32(g) | Value::Counter32(g) => self.u32(*g),
            Value::IpAddress(a) => self.octets(a),
            Value::Oid(o) => self.oid(o, false),
            Value::NoSuchObject | Value::NoSuchInstance | Value::EndOfMibView => {}
        }
    }

    fn finish(mut self) -> Vec<u8> {
        let len = (self.b.len() - HEADER_LEN) as u32;
        self.b[16..20].copy_from_slice(&len.to_be_bytes());
        self.b
    }
}

/// Open: `timeout` seconds for the master to wait on this subagent (0: the master's default).
pub fn open(packet_id: u32, timeout: u8, id: &[u32], descr: &str) -> Vec<u8> {
    let mut w = Writer::new(kind::OPEN, 0, 0, packet_id, 0);
    w.b.extend([timeout, 0, 0, 0]);
    w.oid(id, false);
    w.octets(descr.as_bytes());
    w.finish()
}

/// Register `subtree` at `priority` (lower wins; 127 is the default).
pub fn register(session_id: u32, packet_id: u32, priority: u8, subtree: &[u32]) -> Vec<u8> {
    let mut w = Writer::new(kind::REGISTER, session_id, 0, packet_id, 0);
    w.b.extend([0, priority, 0, 0]);
    w.oid(subtree, false);
    w.finish()
}

/// Close, with a reason.
pub fn close(session_id: u32, packet_id: u32, reason: u8) -> Vec<u8> {
    let mut w = Writer::new(kind::CLOSE, session_id, 0, packet_id, 0);
    w.b.extend([reason, 0, 0, 0]);
    w.finish()
}

/// Ping.
pub fn ping(session_id: u32, packet_id: u32) -> Vec<u8> {
    Writer::new(kind::PING, session_id, 0, packet_id, 0).finish()
}

/// The response to `to`: an error (0: none) at `index` (1-based; 0: none), and varbinds.
pub fn response(to: &Header, error: u16, index: u16, varbinds: &[VarBind]) -> Vec<u8> {
    let mut w = Writer::new(
        kind::RESPONSE,
        to.session_id,
        to.transaction_id,
        to.packet_id,
        0,
    );
    w.u32(0);
    w.b.extend(error.to_be_bytes());
    w.b.extend(index.to_be_bytes());
    for vb in varbinds {
        w.varbind(vb);
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(b: &[u8]) -> Result<Pdu, DecodeError> {
        let h: [u8; HEADER_LEN] = b[..HEADER_LEN].try_into().unwrap();
        decode(Header::decode(&h)?, &b[HEADER_LEN..])
    }

    #[test]
    fn a_response_reads_back() {
        let to = Header {
            kind: kind::GET,
            flags: 0,
            session_id: 7,
            transaction_id: 8,
            packet_id: 9,
            payload_len: 0,
        };
        let vbs = [VarBind {
            name: vec![1, 3, 6, 1, 2, 1, 4, 24, 6, 0],
            value: Value::Gauge32(5),
        }];
        let b = response(&to, error::NOT_WRITABLE, 1, &vbs);
        let pdu = split(&b).unwrap();
        assert_eq!(pdu.header.session_id, 7);
        assert_eq!(pdu.header.packet_id, 9);
        assert_eq!(
            pdu.request,
            Request::Response {
                error: error::NOT_WRITABLE,
                index: 1
            }
        );
        // Gauge32 (66), then the name: 5 sub-identifiers after the prefix 1.3.6.1.2.
        assert_eq!(&b[28..32], &[0, 66, 0, 0]);
        assert_eq!(&b[32..36], &[5, 2, 0, 0]);
    }

    #[test]
    fn lengths_past_the_end_are_errors_naming_the_field() {
        let mut b = Writer::new(kind::GET_NEXT, 1, 2, 3, 0);
        b.b.extend([200, 0, 0, 0]);
        let e = split(&b.finish()).unwrap_err();
        assert!(e.what.contains("200 sub-identifiers"), "{e}");
        let mut b = Writer::new(kind::GET_NEXT, 1, 2, 3, 0);
        b.b.extend([3, 0, 0, 0, 0, 0, 0, 1]);
        let e = split(&b.finish()).unwrap_err();
        assert!(e.what.contains("search range start past"), "{e}");
        assert_eq!(e.offset, 28);
    }
}
