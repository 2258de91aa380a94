//! The study's scenarios: which routes a table holds, and the address range its lookups scan.
//!
//! Every table is generated deterministically from a seed. Next hops are assigned round-robin
//! from a small set ([`NEXT_HOPS`]), as the study did: the FIB answers are next-hop indexes, so
//! engines can be compared answer by answer.
use crate::key::Key;
use fibre::addr::Bits;
use fibre::rib::KernelSemantics;
use fibre::Prefix;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// Size of the next-hop set routes are spread over, round-robin.
pub const NEXT_HOPS: u8 = 16;

/// One route of a benchmark table: a masked prefix and a next-hop index below [`NEXT_HOPS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchRoute<K> {
    pub addr: K,
    pub len: u8,
    pub nh: u8,
}

/// What differs between the families in the study.
pub trait StudyFamily:
    KernelSemantics<Bits = <Self as StudyFamily>::K> + fibre::router::RouterFamily
{
    type K: Key + crate::key::PeerKey;
    /// `ipv4` / `ipv6`, as records name the family.
    const LABEL: &'static str;
    /// The study's scanned range for the full view (IPv6: 2400::/16 to 2a06::/16).
    const FULL_VIEW_RANGE: (Self::K, Self::K);
    /// Where synthetic full-view prefixes are drawn.
    const SYNTHETIC_RANGE: (Self::K, Self::K);
    /// Per-length prefix counts of the real full table of January 2024 (shared/data/README.md).
    const LENGTHS: &'static [(u8, u32)];
    /// The spread scenario's prefix length (/48 for IPv6, /32 for IPv4) and its first prefix.
    const SPREAD: (u8, Self::K);
    /// W2: uniform random addresses over this range (IPv6: 2000::/3).
    const UNIFORM_RANGE: (Self::K, Self::K);
    /// The /108 that the random /128 scenario fills (IPv6 only): 2001:db8:cafe::/108.
    const RANDOM128_NET: Option<(Self::K, u8)>;
    /// The subnet the kernel harness uses for its gateways (bench/harness/PROTOCOL.md): no bench
    /// route may lie inside it, and no address of W2 may fall in it.
    const RESERVED: (Self::K, u8);
}

impl StudyFamily for Ipv4Addr {
    type K = u32;
    const LABEL: &'static str = "ipv4";
    const FULL_VIEW_RANGE: (u32, u32) = (0x0100_0000, 0xdfff_ffff);
    const SYNTHETIC_RANGE: (u32, u32) = (0x0100_0000, 0xdfff_ffff);
    const LENGTHS: &'static [(u8, u32)] = &[
        (8, 16),
        (9, 13),
        (10, 38),
        (11, 103),
        (12, 299),
        (13, 581),
        (14, 1203),
        (15, 2100),
        (16, 13490),
        (17, 8235),
        (18, 13798),
        (19, 24870),
        (20, 42611),
        (21, 50750),
        (22, 108623),
        (23, 96510),
        (24, 537698),
        (25, 20),
        (26, 3),
        (27, 11),
        (28, 18),
        (29, 17),
        (30, 3),
        (31, 3),
        (32, 886),
    ];
    const SPREAD: (u8, u32) = (32, 0x1000_0000); // 16.0.0.0
    const UNIFORM_RANGE: (u32, u32) = (0, u32::MAX);
    const RANDOM128_NET: Option<(u32, u8)> = None;
    const RESERVED: (u32, u8) = (0xc612_0000, 24); // 198.18.0.0/24
}

impl StudyFamily for Ipv6Addr {
    type K = u128;
    const LABEL: &'static str = "ipv6";
    const FULL_VIEW_RANGE: (u128, u128) = (0x2400 << 112, (0x2a07 << 112) - 1);
    const SYNTHETIC_RANGE: (u128, u128) = (0x2001 << 112, (0x2c10 << 112) - 1);
    const LENGTHS: &'static [(u8, u32)] = &[
        (16, 1),
        (19, 1),
        (20, 16),
        (21, 3),
        (22, 7),
        (23, 8),
        (24, 30),
        (25, 8),
        (26, 15),
        (27, 20),
        (28, 193),
        (29, 4371),
        (30, 650),
        (31, 284),
        (32, 22548),
        (33, 2926),
        (34, 2603),
        (35, 1043),
        (36, 5996),
        (37, 880),
        (38, 1617),
        (39, 1377),
        (40, 13418),
        (41, 903),
        (42, 2301),
        (43, 1001),
        (44, 14365),
        (45, 1553),
        (46, 3039),
        (47, 3153),
        (48, 75488),
        (49, 11),
        (50, 3),
        (52, 1),
        (55, 1),
        (56, 24),
        (58, 20),
        (60, 2),
        (64, 184),
        (112, 2),
        (122, 1),
        (124, 4),
        (125, 9),
        (126, 19),
        (127, 42),
        (128, 6),
    ];
    const SPREAD: (u8, u128) = (48, 0x2400 << 112);
    const UNIFORM_RANGE: (u128, u128) = (0x2000 << 112, (0x4000 << 112) - 1);
    const RANDOM128_NET: Option<(u128, u8)> = Some((0x2001_0db8_cafe << 80, 108));
    const RESERVED: (u128, u8) = (0xfd00_00fb << 96, 64); // fd00:fb::/64
}

/// Whether `(addr, len)` lies inside `net`.
pub fn inside<K: Bits>(addr: K, len: u8, net: (K, u8)) -> bool {
    len >= net.1 && addr & K::mask(net.1) == net.0
}

/// The inclusive address range a scenario's lookups scan.
pub type ScanRange<K> = (K, K);

/// A generated table and the range its lookups scan.
pub type Generated<K> = (Vec<BenchRoute<K>>, ScanRange<K>);

/// The scenarios of the study.
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioKind {
    /// A real table (or a synthetic one with the real per-length counts), sampled to the size.
    FullView,
    /// /48 (IPv6) or /32 (IPv4) prefixes spread linearly: one prefix every 1/density slots.
    Spread { density: f64 },
    /// /128 prefixes drawn at random inside a fixed /108.
    Random128,
}

impl ScenarioKind {
    pub fn name<A: StudyFamily>(&self) -> String {
        match self {
            ScenarioKind::FullView => "full-view".into(),
            ScenarioKind::Spread { density } => format!("spread{}-d{density}", A::SPREAD.0),
            ScenarioKind::Random128 => "random128-in-108".into(),
        }
    }
    /// Parses a scenario name as [`ScenarioKind::name`] writes it (family-independent part).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full-view" => Some(ScenarioKind::FullView),
            "random128-in-108" | "random128" => Some(ScenarioKind::Random128),
            _ => {
                let rest = s
                    .strip_prefix("spread48-d")
                    .or_else(|| s.strip_prefix("spread32-d"))
                    .or_else(|| s.strip_prefix("spread-d"))?;
                let density: f64 = rest.parse().ok()?;
                (density > 0.0 && density <= 1.0).then_some(ScenarioKind::Spread { density })
            }
        }
    }
    pub fn applies_to<A: StudyFamily>(&self) -> bool {
        !matches!(self, ScenarioKind::Random128) || A::RANDOM128_NET.is_some()
    }
}

/// The routes of one family's full view, in the order the source gave them.
#[derive(Clone, Debug, Default)]
pub struct FullView<K> {
    pub prefixes: Vec<(K, u8)>,
    /// Where they came from, for the report.
    pub origin: String,
}

/// Both families' full views.
#[derive(Clone, Debug, Default)]
pub struct FullViews {
    pub v4: FullView<u32>,
    pub v6: FullView<u128>,
}

/// Per family access to [`FullViews`].
pub trait PickView: StudyFamily {
    fn view(views: &FullViews) -> &FullView<Self::K>;
}
impl PickView for Ipv4Addr {
    fn view(views: &FullViews) -> &FullView<u32> {
        &views.v4
    }
}
impl PickView for Ipv6Addr {
    fn view(views: &FullViews) -> &FullView<u128> {
        &views.v6
    }
}

/// Where a benchmark of whole tables takes its full views from (`fibre bench mirror`, `fibre
/// bench snmp`).
#[derive(clap::Args, Debug, Clone)]
pub struct ViewArgs {
    /// Full-view routes: a prefix list (plain or .gz) or an MRT RIB dump
    /// [default: ../shared/data/full-table-2024.txt.gz when present, else synthetic]
    #[arg(long, value_name = "FILE", conflicts_with = "synthetic")]
    pub table: Option<std::path::PathBuf>,
    /// Use the synthetic full view even when a real table is at hand
    #[arg(long)]
    pub synthetic: bool,
}

impl ViewArgs {
    /// The full views: `--table` if given; else the shared real table when it is at hand
    /// and `--synthetic` is not asked for; else synthetic views of the real table's sizes.
    pub fn load(&self, seed: u64) -> Result<FullViews, String> {
        let shared = Path::new(crate::study::SHARED_TABLE);
        match &self.table {
            Some(p) => load_table(p),
            None if !self.synthetic && shared.exists() => load_table(shared),
            None => Ok(FullViews {
                v4: synthetic_view::<Ipv4Addr>(901_899, seed),
                v6: synthetic_view::<Ipv6Addr>(160_147, seed),
            }),
        }
    }
}

/// The full views for the profiling examples, which run from any directory: the shared real
/// table found from this crate's workspace when it is there, else synthetic views of its sizes
/// (said on stderr: a binary built in a checkout without `../shared` beside it profiles those,
/// and its figures compare with nothing measured on the real view).
pub fn workspace_views() -> FullViews {
    let table = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(crate::study::SHARED_TABLE);
    if table.exists() {
        load_table(&table).expect("shared table")
    } else {
        eprintln!(
            "no shared table at {}: synthetic views of its sizes",
            table.display()
        );
        FullViews {
            v4: synthetic_view::<Ipv4Addr>(901_899, 1),
            v6: synthetic_view::<Ipv6Addr>(160_147, 1),
        }
    }
}

/// Reads a prefix list (one prefix per line, `#` comments; gzip-compressed or plain), or an MRT
/// RIB dump. Host bits are masked, duplicates dropped, and the bench's reserved subnets left out.
pub fn load_table(path: &Path) -> Result<FullViews, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut head = [0u8; 2];
    let mut reader = BufReader::new(file);
    {
        let buf = reader
            .fill_buf()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        head[..buf.len().min(2)].copy_from_slice(&buf[..buf.len().min(2)]);
    }
    let mut input: Box<dyn Read> = if head == [0x1f, 0x8b] {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    // Peek after decompression (a decoder may hand out a few bytes at a time): an MRT file opens
    // with a record header (a timestamp, then one of the types of RFC 6396 and its later
    // additions); anything else is read as text.
    let mut head = Vec::with_capacity(12);
    input
        .by_ref()
        .take(12)
        .read_to_end(&mut head)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let looks_binary = is_mrt_header(&head);
    let input = BufReader::new(std::io::Cursor::new(head).chain(input));
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    if looks_binary {
        let prefixes = fibre::io::mrt::rib_prefixes(input)
            .map_err(|e| format!("{}: MRT: {e}", path.display()))?;
        for p in prefixes {
            match p {
                (IpAddr::V4(a), len) => v4.push((u32::from(a), len)),
                (IpAddr::V6(a), len) => v6.push((u128::from(a), len)),
            }
        }
    } else {
        // Lines as bytes: a comment in another encoding is no error; a prefix must be ASCII.
        for (n, line) in input.split(b'\n').enumerate() {
            let line = line.map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
            let line = String::from_utf8_lossy(&line);
            let text = line.split('#').next().unwrap_or("").trim();
            if text.is_empty() {
                continue;
            }
            let bad = || format!("{}:{}: not a prefix: {text:?}", path.display(), n + 1);
            let (addr, len) = text.split_once('/').ok_or_else(bad)?;
            let len: u8 = len.parse().map_err(|_| bad())?;
            match addr.parse::<IpAddr>().map_err(|_| bad())? {
                IpAddr::V4(a) if len <= 32 => v4.push((u32::from(a), len)),
                IpAddr::V6(a) if len <= 128 => v6.push((u128::from(a), len)),
                _ => return Err(bad()),
            }
        }
    }
    let origin = path.display().to_string();
    Ok(FullViews {
        v4: FullView {
            prefixes: clean::<Ipv4Addr>(v4),
            origin: origin.clone(),
        },
        v6: FullView {
            prefixes: clean::<Ipv6Addr>(v6),
            origin,
        },
    })
}

/// An MRT common header (RFC 6396 section 2): timestamp, a known type, and a length a record
/// can have.
fn is_mrt_header(buf: &[u8]) -> bool {
    if buf.len() < 12 {
        return false;
    }
    let kind = u16::from_be_bytes([buf[4], buf[5]]);
    let len = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
    // OSPFv2, TABLE_DUMP, TABLE_DUMP_V2, BGP4MP(_ET), ISIS(_ET), OSPFv3(_ET).
    matches!(kind, 11 | 12 | 13 | 16 | 17 | 32 | 33 | 48 | 49) && len < 1 << 24
}

/// Masks, drops duplicates (first occurrence kept) and routes inside the reserved subnet.
fn clean<A: StudyFamily>(list: Vec<(A::K, u8)>) -> Vec<(A::K, u8)> {
    let mut seen = HashSet::with_capacity(list.len());
    list.into_iter()
        .map(|(a, l)| (a & A::K::mask(l), l))
        .filter(|&(a, l)| !inside(a, l, A::RESERVED) && seen.insert((a, l)))
        .collect()
}

/// A synthetic full view of `size` prefixes that follows the real table's per-length counts,
/// with prefixes drawn uniformly in the family's synthetic range (the real table's nesting is not
/// modelled). The built-in default when no real table is at hand.
pub fn synthetic_view<A: StudyFamily>(size: usize, seed: u64) -> FullView<A::K> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed_f00d);
    let total: u64 = A::LENGTHS.iter().map(|&(_, c)| c as u64).sum();
    let mut seen = HashSet::with_capacity(size);
    let mut prefixes = Vec::with_capacity(size);
    let (lo, hi) = A::SYNTHETIC_RANGE;
    for &(len, count) in A::LENGTHS {
        let want = ((count as u64 * size as u64 + total / 2) / total) as usize;
        let mut placed = 0;
        let mut tries = 0;
        while placed < want && tries < want * 20 + 100 {
            tries += 1;
            let a = A::K::random_in(&mut rng, lo, hi) & A::K::mask(len);
            if !inside(a, len, A::RESERVED) && seen.insert((a, len)) {
                prefixes.push((a, len));
                placed += 1;
            }
        }
    }
    prefixes.shuffle(&mut rng);
    FullView {
        prefixes,
        origin: format!(
            "synthetic ({} per-length counts of the January 2024 full table)",
            A::LABEL
        ),
    }
}

/// The routes of one point of the study: `size` routes of `kind`, or `None` where the scenario
/// cannot hold that many (a full view smaller than `size`, a /108 holds 2^20 hosts, a spread
/// that would leave the address space).
pub fn generate<A: StudyFamily + PickView>(
    kind: &ScenarioKind,
    size: usize,
    views: &FullViews,
    seed: u64,
) -> Option<Generated<A::K>> {
    let mut rng = SmallRng::seed_from_u64(seed ^ (size as u64).rotate_left(17));
    let (prefixes, range): (Vec<(A::K, u8)>, _) = match kind {
        ScenarioKind::FullView => {
            let view = A::view(views);
            if size > view.prefixes.len() {
                return None;
            }
            // A random sample of the full view, inserted in address order, as a RIB dump or
            // `ip route show` lists it (some peers, poptrie among them, build far faster so).
            let mut all = view.prefixes.clone();
            let (sample, _) = all.partial_shuffle(&mut rng, size);
            let mut all = sample.to_vec();
            all.sort_unstable();
            (all, A::FULL_VIEW_RANGE)
        }
        ScenarioKind::Spread { density } => {
            let (len, base) = A::SPREAD;
            let gap = (1.0 / density).round().max(1.0) as u64;
            let span = (size as u128) * gap as u128;
            // Stay inside the scanned slice: 2^32 /48s (a /16) or 2^31 /32s (16.0.0.0 on).
            if span > 1u128 << 31 {
                return None;
            }
            let shift = (A::WIDTH - len) as u32;
            let list = (0..size as u64)
                .map(|i| (base + (A::K::from_u64(i * gap) << shift), len))
                .collect::<Vec<_>>();
            let last = base + (A::K::from_u64((size as u64 - 1) * gap) << shift);
            let end = last | !A::K::mask(len);
            (list, (base, end))
        }
        ScenarioKind::Random128 => {
            let (base, plen) = A::RANDOM128_NET?;
            let hosts = 1u64 << (A::WIDTH - plen);
            if size as u64 > hosts {
                return None;
            }
            let mut picks: HashSet<u64> = HashSet::with_capacity(size);
            let mut list = Vec::with_capacity(size);
            use rand::Rng;
            while list.len() < size {
                let h = rng.gen_range(0..hosts);
                if picks.insert(h) {
                    list.push((base | A::K::from_u64(h), A::WIDTH));
                }
            }
            (list, (base, base | A::K::from_u64(hosts - 1)))
        }
    };
    Some((with_next_hops(&prefixes), range))
}

/// Routes for `prefixes`, next hops round-robin over [`NEXT_HOPS`] (the study's assignment).
pub fn with_next_hops<K: Copy>(prefixes: &[(K, u8)]) -> Vec<BenchRoute<K>> {
    prefixes
        .iter()
        .enumerate()
        .map(|(i, &(addr, len))| BenchRoute {
            addr,
            len,
            nh: (i % NEXT_HOPS as usize) as u8,
        })
        .collect()
}

/// The prefix of a route (its address masked to its length).
pub fn route_prefix<A: StudyFamily>(r: &BenchRoute<A::K>) -> Prefix<A> {
    Prefix::new(A::from_bits(r.addr), r.len)
}

/// Text of a route for the harness files: `PREFIX/LEN NH`.
pub fn route_line<A: StudyFamily>(r: &BenchRoute<A::K>) -> String {
    format!("{} {}", route_prefix::<A>(r), r.nh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_routes_are_evenly_spaced_and_deterministic() {
        let views = FullViews::default();
        let kind = ScenarioKind::Spread { density: 0.1 };
        let (a, range) = generate::<Ipv6Addr>(&kind, 100, &views, 7).unwrap();
        let (b, _) = generate::<Ipv6Addr>(&kind, 100, &views, 7).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 100);
        assert!(a.iter().all(|r| r.len == 48));
        assert_eq!(a[1].addr - a[0].addr, 10u128 << 80);
        assert_eq!(range.0, 0x2400 << 112);
        assert_eq!(range.1, a[99].addr | ((1u128 << 80) - 1));
        assert_eq!(a[3].nh, 3);
        assert_eq!(a[16].nh, 0);
    }

    #[test]
    fn random128_fills_the_108_without_repeats() {
        let views = FullViews::default();
        let (r, range) = generate::<Ipv6Addr>(&ScenarioKind::Random128, 5000, &views, 1).unwrap();
        let set: HashSet<_> = r.iter().map(|x| x.addr).collect();
        assert_eq!(set.len(), 5000);
        assert!(r
            .iter()
            .all(|x| x.len == 128 && inside(x.addr, 108, Ipv6Addr::RANDOM128_NET.unwrap())));
        assert_eq!(range.1 - range.0, (1 << 20) - 1);
        assert!(generate::<Ipv6Addr>(&ScenarioKind::Random128, (1 << 20) + 1, &views, 1).is_none());
        assert!(generate::<Ipv4Addr>(&ScenarioKind::Random128, 10, &views, 1).is_none());
    }

    #[test]
    fn synthetic_view_follows_the_length_counts() {
        let v = synthetic_view::<Ipv4Addr>(100_000, 3);
        let n24 = v.prefixes.iter().filter(|p| p.1 == 24).count() as f64;
        // 537,698 of 902,116 are /24s.
        assert!(
            (n24 / v.prefixes.len() as f64 - 0.596).abs() < 0.01,
            "{n24}"
        );
        assert!(v.prefixes.iter().all(|&(a, l)| a & u32::mask(l) == a));
        assert!((v.prefixes.len() as i64 - 100_000).abs() < 100);
    }

    #[test]
    fn scenario_names_round_trip() {
        for k in [
            ScenarioKind::FullView,
            ScenarioKind::Spread { density: 0.05 },
            ScenarioKind::Random128,
        ] {
            assert_eq!(ScenarioKind::parse(&k.name::<Ipv6Addr>()), Some(k));
        }
        assert_eq!(ScenarioKind::parse("spread-d2"), None);
    }

    #[test]
    fn reserved_and_duplicate_prefixes_are_left_out() {
        let list = vec![(0xc612_0005, 32), (0x0a00_0001, 8), (0x0a00_0000, 8)];
        assert_eq!(clean::<Ipv4Addr>(list), vec![(0x0a00_0000, 8)]);
    }
}
