//! Routes the kernel holds but its IPv6 route dump does not list.
//!
//! `fib6_dump_node` prints an ECMP route's legs as one route and goes on after the last leg,
//! so a route that sits between two legs in the kernel's list (a reject or device route of the
//! same metric, appended before the last leg was) is never dumped, though lookups see it
//! (docs/semantics.md). When the legs go, the kernel lists it and tells nothing: no
//! notification names it. A sync cannot read such a route, but it can tell where one is:
//! `/proc/net/ipv6_route` walks the same tables without the jump, one line per route (a leg is
//! one), so a destination with ECMP legs and more lines there than the dump held routes has
//! one hidden. Reading that file costs the kernel time quadratic in its routes, so a sync
//! counts only up to [`COUNT_AT_MOST`] routes; past that, every destination with legs may hide
//! one. The mirror syncs again, at the next quiet moment, after any change that may bring a
//! hidden route into view ([`may_reveal`]).
use super::events::{RTM_DELROUTE, RTM_NEWROUTE};
use super::socket::Notification;
use crate::prefix::Prefix;
use crate::rib::InsertMode;
use crate::route::RouteSpec;
use crate::router::mirror_mode;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek};
use std::net::Ipv6Addr;

/// A route's destination and source.
pub(crate) type Key = (Prefix<Ipv6Addr>, Prefix<Ipv6Addr>);

/// Routes per destination and source.
pub(crate) type Counts = HashMap<Key, usize>;

/// The most IPv6 routes a sync counts hidden ones among. Each 4 KiB read of
/// `/proc/net/ipv6_route` walks the kernel's tables from the start: reading it took 0.01 s
/// for 5,000 routes, 0.39 s for 20,000 and 30 s for 160,000 here (kernel 6.18; `time ip
/// netns exec NS cat /proc/net/ipv6_route` in a namespace given the first N of
/// `full-table-2024`'s IPv6 prefixes, each `via` one gateway).
pub const COUNT_AT_MOST: usize = 8192;

/// The kernel's `/proc/net/ipv6_route`, opened in the mirror's namespace (a proc file of the
/// network stack keeps the namespace it was opened in).
pub(crate) struct ProcRoutes {
    /// `None` where it cannot be opened (a kernel without IPv6): nothing is known hidden.
    file: Option<File>,
    text: String,
}

impl ProcRoutes {
    /// Opens the file in namespace `netns` (the caller's for `None`).
    pub(crate) fn open(netns: Option<&str>) -> ProcRoutes {
        let open = || File::open("/proc/thread-self/net/ipv6_route");
        let file = match netns {
            None => open(),
            Some(name) => super::socket::in_netns(name, open),
        };
        ProcRoutes {
            file: file.ok(),
            text: String::new(),
        }
    }

    /// The kernel's routes now, per destination and source; `None` if the file cannot be
    /// read or says something unexpected (then nothing is known hidden).
    pub(crate) fn counts(&mut self) -> Option<Counts> {
        let file = self.file.as_mut()?;
        self.text.clear();
        file.rewind().ok()?;
        file.read_to_string(&mut self.text).ok()?;
        let mut counts = Counts::new();
        for line in self.text.lines().filter(|l| !is_null_entry(l)) {
            *counts.entry(key_of(line)?).or_default() += 1;
        }
        Some(counts)
    }
}

/// Whether a line is a table's root entry (`fib6_null_entry`, one a table: `::/0`, metric
/// 2^32-1, a reject route on `lo`), which no dump lists. A route the same in all of this is
/// not counted either: a hidden one of these would go unseen.
fn is_null_entry(line: &str) -> bool {
    const ZERO: &str = "00000000000000000000000000000000";
    let f: Vec<&str> = line.split_ascii_whitespace().collect();
    f.len() == 10
        && [f[0], f[2], f[4]] == [ZERO; 3]
        && [f[1], f[3], f[5], f[8], f[9]] == ["00", "00", "ffffffff", "00200200", "lo"]
}

/// A line's destination and source: `DST DSTLEN SRC SRCLEN GATEWAY METRIC ...` in hex.
fn key_of(line: &str) -> Option<Key> {
    let mut f = line.split_ascii_whitespace();
    let mut prefix = || -> Option<Prefix<Ipv6Addr>> {
        let addr = u128::from_str_radix(f.next()?, 16).ok()?;
        let len = u8::from_str_radix(f.next()?, 16).ok()?;
        Prefix::new_strict(Ipv6Addr::from(addr), len)
    };
    Some((prefix()?, prefix()?))
}

/// Where a sync's IPv6 dump may have hidden routes: of the destinations with ECMP legs
/// (`legs`), those where the kernel holds more routes than the dump gave (`routes`, read by
/// the model, which holds a multipath route without an object as one route a leg, as the
/// kernel does; `unread`, those it did not read, with the kernel routes each stands for),
/// and how many more in all; `None` for the count, and every destination with legs, where
/// the routes were too many to count or the file could not be read.
pub(crate) fn find(
    proc: &mut ProcRoutes,
    legs: HashSet<Key>,
    routes: &[RouteSpec<Ipv6Addr>],
    unread: &[(Key, usize)],
) -> (HashSet<Key>, Option<usize>) {
    if legs.is_empty() {
        return (legs, Some(0));
    }
    let total = routes.len() + unread.iter().map(|(_, n)| n).sum::<usize>();
    let kernel = if total <= COUNT_AT_MOST {
        proc.counts()
    } else {
        None
    };
    let Some(kernel) = kernel else {
        return (legs, None);
    };
    let mut dumped = Counts::new();
    for r in routes {
        *dumped.entry((r.dst, r.src)).or_default() += 1;
    }
    for (key, n) in unread {
        *dumped.entry(*key).or_default() += n;
    }
    let (hidden, more) = hidden(&kernel, &dumped, legs);
    (hidden, Some(more))
}

/// Of `keys`, those where the kernel holds more routes than its dump listed, and how many
/// more in all.
fn hidden(kernel: &Counts, dumped: &Counts, keys: HashSet<Key>) -> (HashSet<Key>, usize) {
    let mut more = 0;
    let keys = keys
        .into_iter()
        .filter(|key| {
            let n = kernel.get(key).copied().unwrap_or(0);
            let listed = dumped.get(key).copied().unwrap_or(0);
            more += n.saturating_sub(listed);
            n > listed
        })
        .collect();
    (keys, more)
}

/// Whether notification `n` may bring a hidden route at `keys` into view: an IPv6 route
/// deleted or replaced there (its legs may be what hid it), whether or not the model reads
/// that route. A device going down takes legs with a notification of their own (unless
/// `skip_notify_on_dev_down` is set, which the mirror does not follow: docs/semantics.md).
pub(crate) fn may_reveal(n: &Notification, keys: &HashSet<Key>) -> bool {
    let route_gone = n.kind == RTM_DELROUTE
        || (n.kind == RTM_NEWROUTE && mirror_mode(n.flags) == InsertMode::Replace);
    route_gone
        && n.payload.first() == Some(&super::AF_INET6)
        && super::decode::route6_key(&n.payload).is_some_and(|(key, _)| keys.contains(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_gives_its_destination_and_source() {
        let line = "20010db8010e00020000000000000000 40 00000000000000000000000000000000 00 \
                    20010db8000100000000000000000009 00000064 00000002 00000000 00000003 va";
        let (dst, src) = key_of(line).expect("a key");
        assert_eq!(dst, "2001:db8:10e:2::/64".parse().unwrap());
        assert_eq!(src, "::/0".parse().unwrap());
        assert_eq!(key_of("20010db8 zz"), None);
        assert_eq!(key_of(""), None);
        let root = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 \
                    00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo";
        assert!(is_null_entry(root) && !is_null_entry(line));
    }

    #[test]
    fn more_routes_in_the_kernel_than_dumped_are_hidden() {
        let k = |s: &str| (s.parse().unwrap(), "::/0".parse().unwrap());
        let kernel = Counts::from([
            (k("2001:db8::/64"), 3),
            (k("2001:db8:1::/64"), 1),
            (k("2001:db8:2::/64"), 2),
        ]);
        let dumped = Counts::from([
            (k("2001:db8::/64"), 2),
            (k("2001:db8:1::/64"), 1),
            (k("2001:db8:2::/64"), 1),
        ]);
        // 2001:db8:2::/64 has no legs: the one more there came after the dump.
        let legs = HashSet::from([k("2001:db8::/64"), k("2001:db8:1::/64")]);
        let (keys, more) = hidden(&kernel, &dumped, legs.clone());
        assert_eq!((keys, more), (HashSet::from([k("2001:db8::/64")]), 1));
        assert_eq!(hidden(&dumped, &dumped, legs).1, 0);
    }
}
