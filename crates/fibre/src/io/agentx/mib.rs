//! The subtree fibre serves, ipForward (1.3.6.1.2.1.4.24 of IP-FORWARD-MIB, RFC 4292), as
//! one ordered space of OIDs: ipCidrRouteNumber (.3.0), ipCidrRouteTable (.4.1),
//! inetCidrRouteNumber (.6.0), inetCidrRouteTable (.7.1) and inetCidrRouteDiscards (.8.0). GET and GETNEXT read one router
//! snapshot; the tables are sought in their tries ([`inet_cidr`], [`ip_cidr`]), and only the
//! two row counts need a pass over the routes, made once per snapshot and kept ([`Mib`]).
use super::{inet_cidr, ip_cidr};
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::route::{Route, TableId, TABLE_MAIN};
use crate::router::{Router, RouterFamily};
use std::sync::Arc;

/// ipForward: 1.3.6.1.2.1.4.24, the subtree registered with the master agent.
pub const IP_FORWARD: [u32; 8] = [1, 3, 6, 1, 2, 1, 4, 24];
/// ipCidrRouteNumber.0 (Gauge32): the rows of ipCidrRouteTable.
pub const IP_CIDR_ROUTE_NUMBER: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 3, 0];
/// inetCidrRouteNumber.0 (Gauge32): the rows of inetCidrRouteTable.
pub const INET_CIDR_ROUTE_NUMBER: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 6, 0];
/// inetCidrRouteDiscards.0 (Counter32): valid routes discarded for want of room; fibre
/// discards none.
pub const INET_CIDR_ROUTE_DISCARDS: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 8, 0];
/// The subtrees registered with the master, one per object served (see the session).
pub const REGISTERED: [[u32; 9]; 5] = [
    [1, 3, 6, 1, 2, 1, 4, 24, 3],
    [1, 3, 6, 1, 2, 1, 4, 24, 4],
    [1, 3, 6, 1, 2, 1, 4, 24, 6],
    [1, 3, 6, 1, 2, 1, 4, 24, 7],
    [1, 3, 6, 1, 2, 1, 4, 24, 8],
];

/// A value, typed as SNMP types it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MibValue {
    /// `INTEGER` / `Integer32`.
    Integer(i32),
    /// `Gauge32` / `Unsigned32`.
    Gauge32(u32),
    /// `Counter32`.
    Counter32(u32),
    /// `IpAddress`.
    IpAddress([u8; 4]),
    /// `OBJECT IDENTIFIER`.
    Oid(Vec<u32>),
}

/// What a GET finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// The value at the OID.
    Value(MibValue),
    /// The OID names a known object (a scalar or a table column) but no instance of it.
    NoSuchInstance,
    /// The OID names nothing fibre serves.
    NoSuchObject,
}

/// Which routing tables the MIB shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tables {
    /// Table main only (what net-snmp shows for IPv4).
    Main,
    /// Every table.
    All,
}

impl Tables {
    pub(super) fn shows(self, id: TableId) -> bool {
        self == Tables::All || id == TABLE_MAIN
    }
}

/// The routes of one destination across the shown tables, destination by destination from
/// `start` on: each shown table's trie is sought at `start` and the tables are merged.
pub(super) fn routes_by_dest<'r, A: RouterFamily>(
    router: &'r Router,
    tables: Tables,
    start: Prefix<A>,
) -> impl Iterator<Item = Vec<Route<A>>> + 'r {
    type Routes<'r, A> = std::iter::Peekable<Box<dyn Iterator<Item = Route<A>> + 'r>>;
    let mut heads: Vec<Routes<'r, A>> = router
        .family::<A>()
        .tables()
        .filter(move |t| tables.shows(t.id))
        .map(|t: &'r Rib<A>| {
            let it: Box<dyn Iterator<Item = Route<A>> + 'r> = Box::new(t.iter_from(&start));
            it.peekable()
        })
        .collect();
    std::iter::from_fn(move || {
        let dst = heads
            .iter_mut()
            .filter_map(|h| h.peek().map(|r| r.dst))
            .min()?;
        let mut routes = Vec::new();
        for h in heads.iter_mut() {
            while let Some(r) = h.next_if(|r| r.dst == dst) {
                routes.push(r);
            }
        }
        Some(routes)
    })
}

/// The two tables' row counts, for one snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Rows of ipCidrRouteTable (IPv4).
    pub ip_cidr: u32,
    /// Rows of inetCidrRouteTable (both families).
    pub inet_cidr: u32,
}

/// Counts the rows of both tables: one pass over the shown routes.
pub fn counts(router: &Router, tables: Tables) -> Counts {
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Counts {
        ip_cidr: clamp(ip_cidr::count(router, tables)),
        inet_cidr: clamp(inet_cidr::count(router, tables)),
    }
}

/// The subtree as served: which tables it shows, and the row counts of the last router
/// state asked about (counting is the one pass over the routes; a walk asks once per state).
/// The state is known by [`Router::version`], not by holding the snapshot: a reference kept
/// here would stop a mirror from reusing its spare copy.
#[derive(Debug)]
pub struct Mib {
    tables: Tables,
    counted: Option<(u64, Counts)>,
}

impl Mib {
    /// A subtree showing `tables`.
    pub fn new(tables: Tables) -> Self {
        Mib {
            tables,
            counted: None,
        }
    }

    fn counts(&mut self, router: &Router) -> Counts {
        match self.counted {
            Some((version, counts)) if version == router.version() => counts,
            _ => {
                let counts = counts(router, self.tables);
                self.counted = Some((router.version(), counts));
                counts
            }
        }
    }

    /// GET: the value at `oid`.
    pub fn get(&mut self, router: &Arc<Router>, oid: &[u32]) -> Found {
        let found = if oid == IP_CIDR_ROUTE_NUMBER {
            Some(MibValue::Gauge32(self.counts(router).ip_cidr))
        } else if oid == INET_CIDR_ROUTE_NUMBER {
            Some(MibValue::Gauge32(self.counts(router).inet_cidr))
        } else if oid == INET_CIDR_ROUTE_DISCARDS {
            Some(MibValue::Counter32(0))
        } else if oid.starts_with(&ip_cidr::IP_CIDR_ROUTE_ENTRY) {
            ip_cidr::get(router, self.tables, oid)
        } else if oid.starts_with(&inet_cidr::INET_CIDR_ROUTE_ENTRY) {
            inet_cidr::get(router, self.tables, oid)
        } else {
            None
        };
        match found {
            Some(v) => Found::Value(v),
            None if self.names_object(oid) => Found::NoSuchInstance,
            None => Found::NoSuchObject,
        }
    }

    /// Whether `oid` lies under one of the objects served (a scalar, or a column of a table).
    fn names_object(&self, oid: &[u32]) -> bool {
        let under = |base: &[u32], range: std::ops::RangeInclusive<u32>| {
            oid.strip_prefix(base)
                .and_then(|rest| rest.first())
                .is_some_and(|c| range.contains(c))
        };
        oid.starts_with(&IP_CIDR_ROUTE_NUMBER[..9])
            || oid.starts_with(&INET_CIDR_ROUTE_NUMBER[..9])
            || oid.starts_with(&INET_CIDR_ROUTE_DISCARDS[..9])
            || under(&ip_cidr::IP_CIDR_ROUTE_ENTRY, ip_cidr::COLUMNS)
            || under(&inet_cidr::INET_CIDR_ROUTE_ENTRY, inet_cidr::COLUMNS)
    }

    /// GETNEXT: the first OID served past `oid`, with its value; `None` past the last.
    pub fn get_next(&mut self, router: &Arc<Router>, oid: &[u32]) -> Option<(Vec<u32>, MibValue)> {
        if oid < &IP_CIDR_ROUTE_NUMBER[..] {
            let n = self.counts(router).ip_cidr;
            return Some((IP_CIDR_ROUTE_NUMBER.to_vec(), MibValue::Gauge32(n)));
        }
        if let Some(next) = ip_cidr::get_next(router, self.tables, oid) {
            return Some(next);
        }
        if oid < &INET_CIDR_ROUTE_NUMBER[..] {
            let n = self.counts(router).inet_cidr;
            return Some((INET_CIDR_ROUTE_NUMBER.to_vec(), MibValue::Gauge32(n)));
        }
        if let Some(next) = inet_cidr::get_next(router, self.tables, oid) {
            return Some(next);
        }
        (oid < &INET_CIDR_ROUTE_DISCARDS[..])
            .then(|| (INET_CIDR_ROUTE_DISCARDS.to_vec(), MibValue::Counter32(0)))
    }
}

/// Where to seek in a family's tries for rows past an index whose destination is `dest` (the
/// address as sub-identifiers, perhaps cut short or out of range) followed by a prefix length
/// of at least `len`: a (destination, length) no later than the first such row, and no
/// earlier than needed, so that a walk never rescans rows it has passed. A destination's own
/// rows are at least as long as the address's shortest prefix (10.1.2.0 is at least a /23).
pub(super) fn seek<A: RouterFamily>(dest: &[u32], len: u32) -> Prefix<A> {
    let width = usize::from(A::WIDTH / 8);
    let mut bytes = [0u8; 16];
    let mut len = if dest.len() < width { 0 } else { len };
    for (i, b) in bytes[..width].iter_mut().enumerate() {
        match dest.get(i) {
            None => break,
            Some(&v) if v > 255 => {
                // Past every address with these first bytes: seek at the last of them.
                bytes[i..width].fill(255);
                len = u32::from(A::WIDTH);
                break;
            }
            Some(&v) => *b = v as u8,
        }
    }
    let shortest = match bytes[..width].iter().rposition(|b| *b != 0) {
        None => 0,
        Some(i) => (i as u32 + 1) * 8 - bytes[i].trailing_zeros(),
    };
    let len = len.min(u32::from(A::WIDTH)).max(shortest) as u8;
    let ip = if width == 4 {
        let b: [u8; 4] = bytes[..4].try_into().expect("4 bytes");
        std::net::IpAddr::from(b)
    } else {
        std::net::IpAddr::from(bytes)
    };
    let addr = A::from_ip(ip).expect("the family's width");
    Prefix::new(addr, len)
}

/// A table row as GETNEXT needs it: its index, and its value in each readable column.
pub(super) trait TableRow {
    fn index(&self) -> &[u32];
    fn value(&self, column: u32) -> Option<MibValue>;
}

/// GETNEXT within a table (`entry`, readable `columns`), column by column: the first row past
/// `oid`'s index in its column, else the first row of the next column. `next_row(after)` is
/// the table's first row past index `after` (`None`: its first row). `None` when `oid` is past
/// the table's last OID.
pub(super) fn table_next<R: TableRow>(
    entry: &[u32],
    columns: std::ops::RangeInclusive<u32>,
    oid: &[u32],
    mut next_row: impl FnMut(Option<&[u32]>) -> Option<R>,
) -> Option<(Vec<u32>, MibValue)> {
    // The first column to look in, and the index to look past in it.
    let (first, mut after): (u32, Option<&[u32]>) = match oid.strip_prefix(entry) {
        Some([]) => (*columns.start(), None),
        Some([column, index @ ..]) => {
            if column < columns.start() {
                (*columns.start(), None)
            } else if column > columns.end() {
                return None;
            } else {
                (*column, Some(index))
            }
        }
        None if oid < entry => (*columns.start(), None),
        None => return None,
    };
    for column in first..=*columns.end() {
        // An index of length 0 (the column's own OID) comes before every row.
        let past = after.filter(|a| !a.is_empty());
        if let Some(row) = next_row(past) {
            let mut oid = entry.to_vec();
            oid.push(column);
            oid.extend(row.index());
            let value = row.value(column).expect("a readable column");
            return Some((oid, value));
        }
        after = None;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_keeps_no_hold_on_the_router() {
        // A mirror reuses its spare copy only when nothing else refers to it.
        let mut router = Arc::new(Router::new());
        let mut mib = Mib::new(Tables::All);
        assert_eq!(
            mib.get(&router, &INET_CIDR_ROUTE_NUMBER),
            Found::Value(MibValue::Gauge32(0))
        );
        assert!(Arc::get_mut(&mut router).is_some());
        // A changed router is counted again; the same state is not.
        let changed = {
            let mut r = (*router).clone();
            r.begin();
            r.commit();
            r
        };
        assert_ne!(changed.version(), router.version());
        assert_eq!(router.clone().version(), router.version());
    }
}
