//! SNMP over AgentX (RFC 2741): IP-FORWARD-MIB's route tables (RFC 4292) served from a router
//! to a master agent such as net-snmp's snmpd.
//!
//! - [`mib`]: the subtree served (ipForward, 1.3.6.1.2.1.4.24) as one ordered space of OIDs;
//!   [`inet_cidr`] and [`ip_cidr`] read the two route tables from the router's tries, GETNEXT
//!   by seeking, never by listing.
//! - [`pdu`]: the AgentX PDUs a subagent receives and sends, decoded and encoded.
//! - [`answer`]: what one PDU is answered, apart from the socket.
//! - [`session`]: the subagent's session with the master: open, register, answer, ping,
//!   reconnect, close.
//!
//! docs/snmp.md has the mapping of route types and protocols, what net-snmp's own
//! implementation shows, and why the PDUs are not the `agentx` crate's.
pub mod answer;
pub mod inet_cidr;
pub mod ip_cidr;
pub mod mib;
pub mod pdu;
pub mod session;
