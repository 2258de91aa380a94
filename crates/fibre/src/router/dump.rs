//! The order the kernel dumps a family's routes in (`RTM_GETROUTE` with `NLM_F_DUMP`, which
//! `ip route show` prints as it comes), where the RIB keeps its own order (tables by id,
//! destinations by address, shorter first).
//!
//! - **Tables** come by hash bucket: `inet_dump_fib` and `inet6_dump_fib` walk 256 buckets
//!   by the id's low byte, each bucket newest table first (`hlist_add_head_rcu`). So table
//!   2 comes before 300 (bucket 44), 300 before 100, and 510 (bucket 254, made after `main`)
//!   before `main`.
//! - **IPv4** (`fn_trie_dump_leaf`): a trie leaf per network address, in address order; a
//!   leaf's routes longest prefix first (`fa_slen` ascending), so `10.0.0.0/24` comes before
//!   `10.0.0.0/16` and `10.0.0.0/8`, and all three before `10.0.0.128/25`.
//! - **IPv6** (`fib6_walk_continue`): the radix tree after its children, a node's source
//!   routes before them. A destination's routes with a source prefix come when the walk
//!   enters its node (`FWS_S`: the source subtree, walked the same way), then the
//!   destinations inside it, then its own routes without a source (`FWS_C`). So
//!   `2001:db8:1:2::/64` comes before `2001:db8:1::/48`, and the default route last.
//!
//! Routes of one destination and source keep their order (the RIB keeps the kernel's).
use super::{Router, RouterFamily};
use crate::addr::Family;
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::route::{RouteSpec, TableId, TABLE_LOCAL, TABLE_MAIN};
use std::collections::VecDeque;

impl Router {
    /// The routes `pick` walks in each table of a family (`Rib::iter`, `Rib::covered`,
    /// `Rib::covering`: destinations in the RIB's order), spelled out, tables and routes in
    /// the order the kernel dumps them (see the module's docs).
    pub fn dumped_with<'s, A: RouterFamily, I>(
        &'s self,
        pick: impl Fn(&'s Rib<A>) -> I + 's,
    ) -> impl Iterator<Item = RouteSpec<A>> + 's
    where
        I: Iterator<Item = crate::route::Route<A>> + 's,
    {
        let st = A::state(self);
        let mut tables: Vec<&Rib<A>> = st.tables.values().collect();
        tables.sort_by_key(|t| dump_rank(t.id));
        tables.into_iter().flat_map(move |t| {
            let routes = pick(t).map(move |r| r.with_hops(st.nhs.get(r.hops).to_vec()));
            in_dump_order(routes)
        })
    }
}

/// Where the kernel dumps table `id`: by hash bucket (the id's low byte); in a bucket the
/// newest table first, `main` and `local` taken as the oldest (IPv4 makes `main` when a route
/// first needs it, which may be later). fibre does not keep the order other tables were made
/// in (the kernel makes one even for a route add that fails), so two of them in one bucket
/// (ids 256 apart) come in descending id: newest first when they were made in id order.
fn dump_rank(id: TableId) -> (u32, bool, std::cmp::Reverse<TableId>) {
    let builtin = id == TABLE_MAIN || id == TABLE_LOCAL;
    (id & 0xff, builtin, std::cmp::Reverse(id))
}

/// Whether the kernel dumps the routes of `inner` (coming after `outer` in the RIB's order)
/// before those of `outer`: inside its trie leaf (IPv4: the same address, longer) or inside
/// its node (IPv6: covered).
fn dumped_before<A: RouterFamily>(outer: &Prefix<A>, inner: &Prefix<A>) -> bool {
    match A::FAMILY {
        Family::Inet => outer.addr() == inner.addr(),
        Family::Inet6 => outer.covers(inner),
    }
}

/// One table's routes, from the RIB's order (destinations by address, shorter first, each
/// destination's routes together) into the kernel's, as they stream by: a destination's
/// routes wait on a stack while the destinations the kernel dumps before them (see
/// [`dumped_before`]) come, at most one a prefix length.
fn in_dump_order<A: RouterFamily>(
    routes: impl Iterator<Item = RouteSpec<A>>,
) -> impl Iterator<Item = RouteSpec<A>> {
    let mut routes = routes.fuse();
    let mut out: VecDeque<RouteSpec<A>> = VecDeque::new();
    // Destinations entered and not yet dumped, outermost first, with their routes (IPv6:
    // those without a source).
    let mut waiting: Vec<(Prefix<A>, Vec<RouteSpec<A>>)> = Vec::new();
    // The routes with a source prefix of the destination entered last (IPv6).
    let mut sourced: Vec<RouteSpec<A>> = Vec::new();
    let flush_sourced = |sourced: &mut Vec<RouteSpec<A>>, out: &mut VecDeque<RouteSpec<A>>| {
        // The source subtree after its children too: by last address, longer first.
        sourced.sort_by_key(|r| (r.src.last(), std::cmp::Reverse(r.src.len())));
        out.extend(sourced.drain(..));
    };
    std::iter::from_fn(move || loop {
        if let Some(r) = out.pop_front() {
            return Some(r);
        }
        let Some(r) = routes.next() else {
            flush_sourced(&mut sourced, &mut out);
            while let Some((_, rs)) = waiting.pop() {
                out.extend(rs);
            }
            if out.is_empty() {
                return None;
            }
            continue;
        };
        if waiting.last().is_none_or(|(d, _)| *d != r.dst) {
            flush_sourced(&mut sourced, &mut out);
            while let Some((d, _)) = waiting.last() {
                if dumped_before(d, &r.dst) {
                    break;
                }
                let (_, rs) = waiting.pop().expect("just seen");
                out.extend(rs);
            }
            waiting.push((r.dst, Vec::new()));
        }
        if r.src.len() > 0 {
            sourced.push(r);
        } else {
            waiting.last_mut().expect("just pushed").1.push(r);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn route<A: RouterFamily>(dst: &str, src: &str) -> RouteSpec<A> {
        RouteSpec {
            src: src.parse().unwrap(),
            ..RouteSpec::new(dst.parse().unwrap(), Vec::new())
        }
    }

    fn dumped<A: RouterFamily>(rib_order: &[(&str, &str)]) -> Vec<(String, String)> {
        let routes = rib_order.iter().map(|(d, s)| route::<A>(d, s));
        in_dump_order(routes)
            .map(|r| (r.dst.to_string(), r.src.to_string()))
            .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(d, s)| (d.to_string(), s.to_string()))
            .collect()
    }

    // The orders below are what `ip route show` printed for these routes on Linux 6.18.
    #[test]
    fn ipv4_leaves_in_address_order_longest_prefix_first() {
        let any = "0.0.0.0/0";
        let rib = [
            (any, any),
            ("10.0.0.0/8", any),
            ("10.0.0.0/16", any),
            ("10.0.0.0/24", any),
            ("10.0.0.128/25", any),
            ("10.0.1.0/24", any),
        ];
        let kernel = [
            (any, any),
            ("10.0.0.0/24", any),
            ("10.0.0.0/16", any),
            ("10.0.0.0/8", any),
            ("10.0.0.128/25", any),
            ("10.0.1.0/24", any),
        ];
        assert_eq!(dumped::<Ipv4Addr>(&rib), pairs(&kernel));
    }

    #[test]
    fn ipv6_after_what_it_covers_sources_first() {
        let any = "::/0";
        let rib = [
            (any, any),
            ("2000::/3", any),
            ("2001:db8:1::/48", any),
            ("2001:db8:1::/48", any),
            ("2001:db8:1:2::/63", any),
            ("2001:db8:1:2::/64", any),
            ("2001:db8:1:2::/65", any),
            ("2001:db8:1:2::5/128", any),
            ("2001:db8:1:2:8000::/65", any),
            ("2001:db8:1:2:8000::/66", any),
            ("2001:db8:1:2:c000::/66", any),
            ("2001:db8:1:3::/64", any),
            ("2001:db8:1:8000::/49", any),
            ("2001:db8:2::/48", any),
            ("2001:db8:2::/48", "2001:db8:8::/48"),
            ("2001:db8:2::/48", "2001:db8:9::/48"),
            ("2001:db8:2:1::/64", any),
            ("2001:db8:2:1::/64", "2001:db8:8::/48"),
            ("2001:db8:2:1::/64", "2001:db8:8:1::/64"),
        ];
        let kernel = [
            ("2001:db8:1:2::5/128", any),
            ("2001:db8:1:2::/65", any),
            ("2001:db8:1:2:8000::/66", any),
            ("2001:db8:1:2:c000::/66", any),
            ("2001:db8:1:2:8000::/65", any),
            ("2001:db8:1:2::/64", any),
            ("2001:db8:1:3::/64", any),
            ("2001:db8:1:2::/63", any),
            ("2001:db8:1:8000::/49", any),
            ("2001:db8:1::/48", any),
            ("2001:db8:1::/48", any),
            ("2001:db8:2::/48", "2001:db8:8::/48"),
            ("2001:db8:2::/48", "2001:db8:9::/48"),
            ("2001:db8:2:1::/64", "2001:db8:8:1::/64"),
            ("2001:db8:2:1::/64", "2001:db8:8::/48"),
            ("2001:db8:2:1::/64", any),
            ("2001:db8:2::/48", any),
            ("2000::/3", any),
            (any, any),
        ];
        assert_eq!(dumped::<Ipv6Addr>(&rib), pairs(&kernel));
    }

    #[test]
    fn tables_by_bucket_main_and_local_last_in_theirs() {
        let mut ids = vec![TABLE_LOCAL, TABLE_MAIN, 100, 356, 612, 1000, 510, 300, 2];
        ids.sort_by_key(|&id| dump_rank(id));
        assert_eq!(
            ids,
            [2, 300, 612, 356, 100, 1000, 510, TABLE_MAIN, TABLE_LOCAL]
        );
    }
}
