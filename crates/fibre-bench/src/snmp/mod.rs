//! SNMP: fibre's AgentX subagent beside net-snmp's own IP-FORWARD-MIB, on one kernel table.
//! [`agent`] runs snmpd and the net-snmp tools in a namespace; [`mod@bench`] is `fibre bench snmp`;
//! [`latency`] times GETNEXT requests through snmpd.
pub mod agent;
pub mod bench;
pub mod latency;
