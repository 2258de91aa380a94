//! SNMP over AgentX (RFC 2741): the route tables of IP-FORWARD-MIB (RFC 4292) served from a
//! router to a master agent such as net-snmp's snmpd. Work in progress (issue 13): [`mib`]
//! reads the table and answers GET and GETNEXT by seeking; the AgentX session comes next.
//! docs/snmp.md has the mapping and what net-snmp's own implementation does.
pub mod mib;
