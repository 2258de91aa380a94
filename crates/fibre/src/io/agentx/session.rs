//! The subagent's session with a master agent over its Unix socket (RFC 2741): open, register
//! ipForward, answer Get/GetNext/GetBulk from one router snapshot per PDU, refuse SETs, ping
//! when idle, and on any loss (the master restarts, closes, stops answering, or sends what
//! cannot be parsed) connect again with back-off; close on stop.
use super::answer::{answer, Answer};
use super::mib::{Mib, Tables, IP_FORWARD, REGISTERED};
use super::pdu::{self, close, error, kind, Header, Pdu, Request};
use crate::router::Router;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the subagent connects and what it serves.
#[derive(Clone, Debug)]
pub struct Config {
    /// The master's AgentX socket (net-snmp: `agentXSocket`, by default
    /// /var/agentx/master).
    pub socket: PathBuf,
    /// Which routing tables the MIB shows.
    pub tables: Tables,
    /// The registration's priority: lower wins where registrations overlap (127 is the
    /// RFC's default).
    pub priority: u8,
    /// How long the master should wait for an answer, in seconds (0: the master's default).
    pub timeout: u8,
    /// After this long without traffic, ping the master; without its answer within the same
    /// time, connect again.
    pub ping_every: Duration,
    /// The longest wait between connection attempts (the back-off doubles from 100 ms).
    pub retry_max: Duration,
}

impl Config {
    /// The defaults for a socket path: table main, priority 127, the master's timeout, a ping
    /// after 15 s idle, retries up to every 10 s.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Config {
            socket: socket.into(),
            tables: Tables::Main,
            priority: 127,
            timeout: 0,
            ping_every: Duration::from_secs(15),
            retry_max: Duration::from_secs(10),
        }
    }
}

/// Counters, readable while the subagent runs.
#[derive(Debug, Default)]
pub struct Stats {
    /// Sessions opened and registered.
    pub sessions: AtomicU64,
    /// Get, GetNext and GetBulk PDUs answered.
    pub requests: AtomicU64,
    /// Varbinds answered.
    pub varbinds: AtomicU64,
    /// PDUs that could not be parsed.
    pub malformed: AtomicU64,
}

/// Why a session ended.
#[derive(Debug)]
enum Ended {
    /// The stop flag was raised: closed cleanly.
    Stopped,
    /// The session was lost; the reason is logged and a new one made.
    Lost(String),
}

/// How long a read waits before the stop flag and the ping timer are looked at.
const POLL: Duration = Duration::from_millis(100);
/// How long the master gets to answer Open and Register.
const SETUP_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a write may wait for a master that does not read before the session is lost.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `source`'s router (read once per PDU) to the master at `config.socket` until `stop`
/// is raised, connecting again after every loss with back-off. `log` gets one line per
/// session event (connected, lost, retrying).
pub fn serve(
    config: &Config,
    source: &dyn Fn() -> Arc<Router>,
    stop: &AtomicBool,
    stats: &Stats,
    log: &mut dyn FnMut(&str),
) {
    let mut mib = Mib::new(config.tables);
    let mut backoff = Duration::from_millis(100);
    while !stop.load(Ordering::Relaxed) {
        let mut s = Session {
            config,
            source,
            stop,
            stats,
            mib: &mut mib,
            buf: Vec::new(),
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            session_id: 0,
            packet_id: 0,
        };
        match s.run(&mut || backoff = Duration::from_millis(100), log) {
            Ended::Stopped => break,
            Ended::Lost(why) => {
                log(&format!(
                    "agentx: {why}; connecting again in {} ms",
                    backoff.as_millis()
                ));
            }
        }
        let until = Instant::now() + backoff;
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
        backoff = (backoff * 2).min(config.retry_max);
    }
}

struct Session<'a> {
    config: &'a Config,
    source: &'a dyn Fn() -> Arc<Router>,
    stop: &'a AtomicBool,
    stats: &'a Stats,
    mib: &'a mut Mib,
    buf: Vec<u8>,
    chunk: Box<[u8]>,
    session_id: u32,
    packet_id: u32,
}

/// What reading brought.
enum Incoming {
    Pdu(Pdu),
    /// A PDU whose header was read but whose payload could not be parsed.
    Malformed(Header, pdu::DecodeError),
    /// Nothing within [`POLL`].
    Idle,
}

impl Session<'_> {
    fn run(&mut self, registered: &mut dyn FnMut(), log: &mut dyn FnMut(&str)) -> Ended {
        let socket = self.config.socket.display().to_string();
        let mut stream = match UnixStream::connect(&self.config.socket) {
            Ok(s) => s,
            Err(e) => return Ended::Lost(format!("cannot connect to {socket}: {e}")),
        };
        // A master that stops reading must not hold the subagent (and its stop) for good.
        let timeouts = stream
            .set_read_timeout(Some(POLL))
            .and_then(|()| stream.set_write_timeout(Some(WRITE_TIMEOUT)));
        if let Err(e) = timeouts {
            return Ended::Lost(format!("{socket}: {e}"));
        }
        if let Err(why) = self.open(&mut stream) {
            if self.stop.load(Ordering::Relaxed) {
                self.close(&mut stream);
                return Ended::Stopped;
            }
            return Ended::Lost(format!("{socket}: {why}"));
        }
        self.stats.sessions.fetch_add(1, Ordering::Relaxed);
        registered();
        log(&format!(
            "agentx: session {} open on {socket}, serving {}",
            self.session_id,
            IP_FORWARD.map(|s| s.to_string()).join(".")
        ));
        match self.serve_requests(&mut stream) {
            Ok(()) => {
                self.close(&mut stream);
                Ended::Stopped
            }
            Err(why) => Ended::Lost(format!("{socket}: {why}")),
        }
    }

    /// Stopping: says so (Close, reason shutdown), and gives the master a moment to take it.
    fn close(&mut self, stream: &mut UnixStream) {
        self.packet_id += 1;
        let closing = self.packet_id;
        let _ = stream.write_all(&pdu::close(self.session_id, closing, close::SHUTDOWN));
        let _ = self.await_response(stream, closing, Duration::from_secs(1), false);
    }

    /// Open, then register each object served. A master gives an OID to the longest
    /// registered subtree holding it, and among equal ones to the lowest priority value: the
    /// objects are registered one by one (not ipForward whole), so that the priority decides
    /// against a master's own modules registered at the same depth (net-snmp's ipCidrRouteTable
    /// and inetCidrRouteTable).
    fn open(&mut self, stream: &mut UnixStream) -> Result<(), String> {
        self.packet_id = 1;
        let descr = concat!("fibre ", env!("CARGO_PKG_VERSION"), ": IP-FORWARD-MIB");
        stream
            .write_all(&pdu::open(1, self.config.timeout, &[], descr))
            .map_err(|e| format!("sending Open: {e}"))?;
        let (header, err) = self.await_response(stream, 1, SETUP_TIMEOUT, true)?;
        if err != error::NONE {
            return Err(format!("the master refused Open (error {err})"));
        }
        self.session_id = header.session_id;
        for subtree in REGISTERED {
            self.packet_id += 1;
            let packet = self.packet_id;
            let name = subtree.map(|s| s.to_string()).join(".");
            let register = pdu::register(self.session_id, packet, self.config.priority, &subtree);
            stream
                .write_all(&register)
                .map_err(|e| format!("sending Register: {e}"))?;
            match self.await_response(stream, packet, SETUP_TIMEOUT, true)? {
                (_, error::NONE) => {}
                (_, error::DUPLICATE_REGISTRATION) => {
                    return Err(format!(
                        "the master refused to register {name}: another session serves it at \
                         priority {} (give another priority)",
                        self.config.priority
                    ))
                }
                (_, e) => return Err(format!("the master refused to register {name} (error {e})")),
            }
        }
        Ok(())
    }

    /// Reads until the response to `packet_id`, answering requests that come first; gives up
    /// when the stop flag is raised, if `stoppable`.
    fn await_response(
        &mut self,
        stream: &mut UnixStream,
        packet_id: u32,
        within: Duration,
        stoppable: bool,
    ) -> Result<(Header, u16), String> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            match self.read(stream)? {
                Incoming::Pdu(Pdu {
                    header,
                    request: Request::Response { error, .. },
                    ..
                }) if header.packet_id == packet_id => return Ok((header, error)),
                Incoming::Pdu(p) => {
                    if let Some(ended) = self.handle(stream, p)? {
                        return Err(ended);
                    }
                }
                Incoming::Malformed(h, e) => self.malformed(stream, &h, &e)?,
                // Only when nothing is left to read: what the master sent is read first.
                Incoming::Idle if stoppable && self.stop.load(Ordering::Relaxed) => {
                    return Err("stopping".into())
                }
                Incoming::Idle => {}
            }
        }
        Err(format!(
            "no response from the master within {} s",
            within.as_secs_f32()
        ))
    }

    /// Answers the master until stopped (`Ok`) or the session is lost (`Err`).
    fn serve_requests(&mut self, stream: &mut UnixStream) -> Result<(), String> {
        let mut last_traffic = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            match self.read(stream)? {
                Incoming::Pdu(p) => {
                    last_traffic = Instant::now();
                    if let Some(ended) = self.handle(stream, p)? {
                        return Err(ended);
                    }
                }
                Incoming::Malformed(h, e) => {
                    last_traffic = Instant::now();
                    self.malformed(stream, &h, &e)?;
                }
                Incoming::Idle if last_traffic.elapsed() >= self.config.ping_every => {
                    self.packet_id += 1;
                    stream
                        .write_all(&pdu::ping(self.session_id, self.packet_id))
                        .map_err(|e| format!("sending Ping: {e}"))?;
                    let ping = self.packet_id;
                    match self.await_response(stream, ping, self.config.ping_every, true) {
                        Ok((_, error::NONE)) => {}
                        Ok((_, e)) => {
                            return Err(format!("the master answered Ping with error {e}"))
                        }
                        // Stopping during the ping: the loop's condition ends the session.
                        Err(_) if self.stop.load(Ordering::Relaxed) => {}
                        Err(e) => return Err(e),
                    }
                    last_traffic = Instant::now();
                }
                Incoming::Idle => {}
            }
        }
        Ok(())
    }

    /// Reads one PDU, or nothing within [`POLL`]. A header that cannot be parsed loses the
    /// framing: the session is closed (parseError) and lost.
    fn read(&mut self, stream: &mut UnixStream) -> Result<Incoming, String> {
        loop {
            if self.buf.len() >= pdu::HEADER_LEN {
                let h: [u8; pdu::HEADER_LEN] = self.buf[..pdu::HEADER_LEN].try_into().expect("20");
                let header = match Header::decode(&h) {
                    Ok(h) => h,
                    Err(e) => {
                        self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                        let _ =
                            stream.write_all(&pdu::close(self.session_id, 0, close::PARSE_ERROR));
                        return Err(e.to_string());
                    }
                };
                let end = pdu::HEADER_LEN + header.payload_len as usize;
                if self.buf.len() >= end {
                    let decoded = pdu::decode(header, &self.buf[pdu::HEADER_LEN..end]);
                    self.buf.drain(..end);
                    return Ok(match decoded {
                        Ok(p) => Incoming::Pdu(p),
                        Err(e) => Incoming::Malformed(header, e),
                    });
                }
            }
            // Into a buffer kept for the session (a fresh zeroed one per read cost more than
            // answering: a walk brings one small PDU per read). A read may hold part of a PDU
            // or several.
            match stream.read(&mut self.chunk) {
                Ok(0) => return Err("the master closed the connection".into()),
                Ok(n) => self.buf.extend_from_slice(&self.chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(Incoming::Idle)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("reading: {e}")),
            }
        }
    }

    /// A PDU whose payload could not be parsed: answered parseError (a response is not).
    fn malformed(
        &mut self,
        stream: &mut UnixStream,
        header: &Header,
        _why: &pdu::DecodeError,
    ) -> Result<(), String> {
        self.stats.malformed.fetch_add(1, Ordering::Relaxed);
        if header.kind == kind::RESPONSE {
            return Ok(());
        }
        self.send(stream, &pdu::response(header, error::PARSE_ERROR, 0, &[]))
    }

    fn send(&mut self, stream: &mut UnixStream, bytes: &[u8]) -> Result<(), String> {
        stream.write_all(bytes).map_err(|e| format!("writing: {e}"))
    }

    /// Answers one PDU. `Ok(Some(reason))`: the master ended the session.
    fn handle(&mut self, stream: &mut UnixStream, p: Pdu) -> Result<Option<String>, String> {
        match answer(self.mib, self.source, &p) {
            Answer::Reply(bytes, varbinds) => {
                if let Some(n) = varbinds {
                    self.stats.requests.fetch_add(1, Ordering::Relaxed);
                    self.stats.varbinds.fetch_add(n as u64, Ordering::Relaxed);
                }
                self.send(stream, &bytes)?;
                Ok(None)
            }
            Answer::Nothing => Ok(None),
            Answer::Closed(reason) => Ok(Some(format!(
                "the master closed the session (reason {reason})"
            ))),
            Answer::NotOpen => Err("the master no longer knows the session".into()),
        }
    }
}
