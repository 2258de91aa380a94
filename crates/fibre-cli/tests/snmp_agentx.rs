//! fibre's AgentX subagent against net-snmp, on one kernel table of 10^4 routes in a namespace
//! (both families, ECMP, unicast with and without gateway, blackhole, unreachable, prohibit,
//! five protocols, three tables, four metrics).
//!
//! Two snmpd run in the namespace, each on its own loopback port... of its own namespace: one
//! with net-snmp's own IP-FORWARD-MIB (the oracle), one with those modules left out and
//! `fibre mirror --agentx` serving the subtree instead. The walks must agree row by row and
//! value by value, except where docs/snmp.md documents a difference (projected away here:
//! rows net-snmp cannot show, Type of reject routes, Proto, the policy index); Get and GetNext
//! at 10^3 OIDs on, between, short of and past the rows must answer as the walk; a SET is
//! refused notWritable; snmpd restarted during a walk gets the subagent back and a complete
//! walk; the subagent killed leaves snmpd answering noSuchObject at once.
//!
//! Needs root, `ip netns` and net-snmp (`make deps`); skips with a message elsewhere, fails
//! when FIBRE_KERNEL_TESTS=required.
use fibre_bench::mirror::client::MirrorProcess;
use fibre_bench::snmp::agent::{self, dotted, Snmpd, VarBind};
use kernel_oracle::{skip_or_fail, Netns};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROUTES: usize = 10_000;
const IP_FORWARD: &str = "1.3.6.1.2.1.4.24";
const INET_ENTRY: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 7, 1];
const IP_ENTRY: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 4, 1];

/// The devices (three veth pairs, va and wa with subnets of both families), shared with the
/// library's kernel tests.
#[path = "../../fibre/tests/support/veths.rs"]
mod veths;

/// IANAipRouteProtocol of the protocols the routes use, as fibre maps them.
const PROTOS: [(&str, u32); 5] = [("4", 3), ("186", 14), ("188", 13), ("189", 8), ("3", 2)];

/// Route `i`: its batch line, and (family, destination bytes, length, IANA protocol).
fn route(i: usize) -> (String, (u32, Vec<u32>, u32, u32)) {
    let v6 = i.is_multiple_of(3);
    let table = match i % 7 {
        0 => " table 100",
        1 => " table 200",
        _ => "",
    };
    let metric = (i % 4) * 100;
    let (proto, iana) = PROTOS[i % 5];
    let (dst, bytes, len): (String, Vec<u32>, u32) = if v6 {
        let len = [48u32, 64, 128][(i / 3) % 3];
        let g = 0x1000 + i;
        let a: std::net::Ipv6Addr = format!("2001:db8:{g:x}::").parse().unwrap();
        let bytes = a.octets().iter().map(|b| u32::from(*b)).collect();
        (format!("{a}/{len}"), bytes, len)
    } else {
        let (x, y, z) = (10 + (i >> 16), (i >> 8) & 255, i & 255);
        let (last, len) = [(0u32, 24u32), (0, 25), (0, 26), (1, 32)][i % 4];
        let bytes = vec![x as u32, y as u32, z as u32, last];
        (format!("{x}.{y}.{z}.{last}/{len}"), bytes, len)
    };
    let k = 2 + i % 250;
    let (gw_a, gw_w) = if v6 {
        (format!("2001:db8:1::{k:x}"), format!("2001:db8:2::{k:x}"))
    } else {
        (format!("192.0.2.{k}"), format!("198.51.100.{k}"))
    };
    let (kind, hops) = match i % 10 {
        0 => ("blackhole ", String::new()),
        1 => ("unreachable ", String::new()),
        2 => ("prohibit ", String::new()),
        3 => ("", " dev wa".to_string()),
        4 | 5 => (
            "",
            format!(" nexthop via {gw_a} dev va nexthop via {gw_w} dev wa"),
        ),
        _ => ("", format!(" via {gw_a} dev va")),
    };
    let line = format!("route add {kind}{dst}{table} metric {metric} proto {proto}{hops}\n");
    (line, (if v6 { 2 } else { 1 }, bytes, len, iana))
}

/// An inetCidrRouteTable row's index, taken apart.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InetIndex {
    family: u32,
    dest: Vec<u32>,
    len: u32,
    policy: Vec<u32>,
    /// The next hop's address; empty when it has none (net-snmp's all-zero address too).
    next_hop: Vec<u32>,
}

fn inet_index(index: &[u32]) -> Option<InetIndex> {
    let (&family, rest) = index.split_first()?;
    let (&n, rest) = rest.split_first()?;
    let (dest, rest) = rest.split_at_checked(n as usize)?;
    let (&len, rest) = rest.split_first()?;
    let (&p, rest) = rest.split_first()?;
    let (policy, rest) = rest.split_at_checked(p as usize)?;
    let (_, rest) = rest.split_first()?;
    let (&m, rest) = rest.split_first()?;
    let (nh, rest) = rest.split_at_checked(m as usize)?;
    if !rest.is_empty() {
        return None;
    }
    let next_hop = if nh.iter().all(|b| *b == 0) {
        vec![]
    } else {
        nh.to_vec()
    };
    Some(InetIndex {
        family,
        dest: dest.to_vec(),
        len,
        policy: policy.to_vec(),
        next_hop,
    })
}

/// Rows of a table walk: index → column → (type, value).
type Rows<K> = BTreeMap<K, BTreeMap<u32, (String, String)>>;

/// The rows of `entry` in a walk, keyed by `key` of their index.
fn rows<K: Ord>(walk: &[VarBind], entry: &[u32], key: impl Fn(&[u32]) -> Option<K>) -> Rows<K> {
    let mut out: Rows<K> = BTreeMap::new();
    for vb in walk {
        let Some([column, index @ ..]) = vb.oid.strip_prefix(entry) else {
            continue;
        };
        let k = key(index).unwrap_or_else(|| panic!("a malformed index: {}", dotted(&vb.oid)));
        out.entry(k)
            .or_default()
            .insert(*column, (vb.kind.clone(), vb.value.clone()));
    }
    out
}

/// The comparable key of an inetCidrRouteTable row: family, destination, length, next hop,
/// and ifIndex (which tells apart on-link routes of several devices).
type InetKey = (u32, Vec<u32>, u32, Vec<u32>, String);

fn inet_keyed(r: &Rows<InetIndex>) -> Rows<InetKey> {
    r.iter()
        .map(|(i, cols)| {
            let if_index = cols.get(&7).map(|c| c.1.clone()).unwrap_or_default();
            let key = (
                i.family,
                i.dest.clone(),
                i.len,
                i.next_hop.clone(),
                if_index,
            );
            (key, cols.clone())
        })
        .collect()
}

/// fibre's values as net-snmp shows them: Type reject(2), blackhole(5) and other(1) are
/// local(3) there, and Proto is always local(2) there.
fn projected(
    mut cols: BTreeMap<u32, (String, String)>,
    type_col: u32,
    proto_col: u32,
) -> BTreeMap<u32, (String, String)> {
    if let Some(t) = cols.get_mut(&type_col) {
        if ["1", "2", "5"].contains(&t.1.as_str()) {
            t.1 = "3".into();
        }
    }
    cols.remove(&proto_col);
    cols
}

/// Whether fibre's row is of a reject route: Type reject(2) or blackhole(5).
fn reject(cols: &BTreeMap<u32, (String, String)>) -> bool {
    cols.get(&8).is_some_and(|t| t.1 == "2" || t.1 == "5")
}

struct Fixture {
    ns: Netns,
    dir: PathBuf,
    own: Snmpd,
    fib: Snmpd,
    /// (family, dest, len) → the IANA protocol fibre must show.
    protos: BTreeMap<(u32, Vec<u32>, u32), u32>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.own.stop();
        self.fib.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture() -> Fixture {
    // The devices first, settled (the kernel adds IPv6 prefix routes on its own time, and
    // both walks must see the same table).
    let ns = veths::namespace("snmp", veths::THREE_VETHS);
    let mut script = String::new();
    let mut protos = BTreeMap::new();
    for i in 0..ROUTES {
        let (line, (family, dest, len, iana)) = route(i);
        script += &line;
        protos.insert((family, dest, len), iana);
    }
    let out = ns.ip_batch_str(&[], &script).expect("ip -batch");
    assert!(out.success, "the kernel refused lines: {}", out.stderr);
    let dir = std::env::temp_dir().join(format!("fibre-snmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let own = Snmpd::start(ns.name(), &dir, "own", agent::PORT, true)
        .expect("snmpd (own IP-FORWARD-MIB)");
    let fib = Snmpd::start(ns.name(), &dir, "fib", agent::PORT + 1, false)
        .expect("snmpd (AgentX master)");
    Fixture {
        ns,
        dir,
        own,
        fib,
        protos,
    }
}

/// Starts `fibre mirror --agentx` on the fibre-side snmpd and waits until the subtree answers.
fn subagent(f: &Fixture, tables: &str, tag: &str) -> MirrorProcess {
    subagent_on(f, &f.fib, &["--agentx-tables", tables], tag)
}

/// Starts `fibre mirror --agentx` with `options` on `snmpd`, and waits until it serves.
fn subagent_on(f: &Fixture, snmpd: &Snmpd, options: &[&str], tag: &str) -> MirrorProcess {
    let socket = f.dir.join(format!("mirror-{tag}.sock"));
    let mut extra = vec!["--agentx".to_string(), snmpd.agentx.display().to_string()];
    extra.extend(options.iter().map(|o| o.to_string()));
    let fibre = Path::new(env!("CARGO_BIN_EXE_fibre"));
    let m = MirrorProcess::start(fibre, f.ns.name(), socket, &extra, Duration::from_secs(60))
        .expect("fibre mirror");
    wait_served(snmpd, Duration::from_secs(30));
    m
}

/// Waits until snmpd answers ipCidrRouteNumber through fibre's subagent.
fn wait_served(snmpd: &Snmpd, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        // ipCidrRouteNumber: fibre serves it, net-snmp does not.
        let got = snmpd.client().get(&["1.3.6.1.2.1.4.24.3.0".into()]);
        if got
            .as_ref()
            .is_ok_and(|v| v.first().is_some_and(|vb| vb.kind == "Gauge32"))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the subagent did not serve within {within:?}: {got:?}; snmpd: {}",
            snmpd.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_subagent_answers_as_net_snmp_does_over_the_same_kernel_table() {
    if skip_or_fail("snmp_agentx") {
        return;
    }
    if let Some(why) = agent::unavailable() {
        if std::env::var("FIBRE_KERNEL_TESTS").as_deref() == Ok("required") {
            panic!("snmp_agentx: FIBRE_KERNEL_TESTS=required but {why}");
        }
        eprintln!("SKIPPED snmp_agentx: {why}");
        return;
    }
    let mut f = fixture();
    let own_walk = f.own.client().walk(IP_FORWARD, 50).expect("walk net-snmp");
    let mut mirror = subagent(&f, "main", "main");
    let started = Instant::now();
    let fib_walk = f.fib.client().walk(IP_FORWARD, 50).expect("walk fibre");
    eprintln!(
        "fibre's subtree: {} varbinds in {:.2} s; net-snmp's own: {} varbinds",
        fib_walk.len(),
        started.elapsed().as_secs_f64(),
        own_walk.len()
    );

    // inetCidrRouteTable, table main: IPv4 as net-snmp shows it (one leg of a multipath
    // route); IPv6 rows of table main are among net-snmp's rows of every table.
    let own_inet = inet_keyed(&rows(&own_walk, &INET_ENTRY, inet_index));
    let fib_inet_rows = rows(&fib_walk, &INET_ENTRY, inet_index);
    let fib_inet = inet_keyed(&fib_inet_rows);
    let v4 = |r: &Rows<InetKey>| -> Rows<InetKey> {
        r.iter()
            .filter(|(k, _)| k.0 == 1)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (own4, fib4) = (v4(&own_inet), v4(&fib_inet));
    assert!(
        own4.len() > ROUTES / 3,
        "net-snmp shows {} IPv4 rows",
        own4.len()
    );
    for (key, cols) in &own4 {
        let got = fib_inet
            .get(key)
            .unwrap_or_else(|| panic!("net-snmp's row {key:?} missing"));
        let mut want = cols.clone();
        want.remove(&9);
        assert_eq!(projected(got.clone(), 8, 9), want, "row {key:?}");
    }
    let prefixes = |r: &Rows<InetKey>| -> BTreeSet<(Vec<u32>, u32)> {
        r.keys().map(|k| (k.1.clone(), k.2)).collect()
    };
    assert_eq!(
        prefixes(&fib4),
        prefixes(&own4),
        "IPv4 prefixes of table main"
    );
    for (key, _) in fib_inet.iter().filter(|(k, c)| k.0 == 2 && !reject(c)) {
        assert!(
            own_inet.contains_key(key),
            "fibre's IPv6 row {key:?} is not net-snmp's"
        );
    }
    // Proto, which net-snmp does not read: the kernel's protocol, mapped.
    for (index, cols) in &fib_inet_rows {
        let want = f.protos.get(&(index.family, index.dest.clone(), index.len));
        let proto = cols.get(&9).map(|c| c.1.as_str());
        match want {
            Some(p) => assert_eq!(proto, Some(p.to_string().as_str()), "Proto of {index:?}"),
            // Routes the kernel made (connected subnets): proto kernel, local(2).
            None => assert_eq!(proto, Some("2"), "Proto of {index:?}"),
        }
        assert_eq!(index.policy[0], 254, "table main only: {index:?}");
    }

    // ipCidrRouteTable: net-snmp's rows (first legs) are fibre's, value by value; Age (8) is
    // not shown by net-snmp.
    let ip_key = |i: &[u32]| (i.len() == 13).then(|| i.to_vec());
    let own_ip = rows(&own_walk, &IP_ENTRY, ip_key);
    let fib_ip = rows(&fib_walk, &IP_ENTRY, ip_key);
    assert!(
        own_ip.len() > ROUTES / 3,
        "net-snmp shows {} ipCidr rows",
        own_ip.len()
    );
    for (key, cols) in &own_ip {
        let got = fib_ip
            .get(key)
            .unwrap_or_else(|| panic!("ipCidr row {key:?} missing"));
        let mut got = projected(got.clone(), 6, 7);
        got.remove(&8);
        let mut want = cols.clone();
        want.remove(&7);
        assert_eq!(got, want, "ipCidr row {}", dotted(key));
    }
    let ip_prefixes =
        |r: &Rows<Vec<u32>>| -> BTreeSet<Vec<u32>> { r.keys().map(|k| k[..8].to_vec()).collect() };
    assert_eq!(
        ip_prefixes(&fib_ip),
        ip_prefixes(&own_ip),
        "ipCidr destinations and masks"
    );

    // The counts say what the walk found.
    let scalar = |oid: &str| {
        let want: Vec<u32> = oid.split('.').map(|s| s.parse().unwrap()).collect();
        fib_walk
            .iter()
            .find(|vb| vb.oid == want)
            .map(|vb| vb.value.clone())
    };
    assert_eq!(
        scalar("1.3.6.1.2.1.4.24.3.0"),
        Some(fib_ip.len().to_string())
    );
    assert_eq!(
        scalar("1.3.6.1.2.1.4.24.6.0"),
        Some(fib_inet_rows.len().to_string())
    );

    probes(&f.fib, &fib_walk);
    // The counts asked above must not stop the mirror from following: a route the kernel
    // takes now shows up through snmpd.
    let va = f.ns.ifindex("va").expect("va");
    f.ns.ip(&["route", "add", "10.255.0.0/16", "via", "192.0.2.9"])
        .expect("ip route add");
    let row = format!("1.3.6.1.2.1.4.24.7.1.7.1.4.10.255.0.0.16.4.254.0.0.{va}.1.4.192.0.2.9");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = f
            .fib
            .client()
            .get(std::slice::from_ref(&row))
            .expect("snmpget");
        if got.first().is_some_and(|vb| vb.value == va.to_string()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new route never showed: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    f.ns.ip(&["route", "del", "10.255.0.0/16"])
        .expect("ip route del");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = f
            .fib
            .client()
            .get(std::slice::from_ref(&row))
            .expect("snmpget");
        if got.first().is_some_and(|vb| vb.kind == "noSuchInstance") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the deleted route stayed: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let set = f.fib.client().set_integer("1.3.6.1.2.1.4.24.6.0", 5);
    assert!(
        set.contains("notWritable"),
        "a SET must be refused notWritable: {set}"
    );

    // snmpd restarted in the middle of a walk (once it has answered 1,000 varbinds of the
    // subtree's 185,000): the subagent comes back, the next walk is whole.
    let mut walk = f.fib.client().walk_spawn(IP_FORWARD, 50).expect("walk");
    let lines = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (out, lines) = (walk.stdout.take().expect("piped"), Arc::clone(&lines));
        std::thread::spawn(move || {
            for _ in BufReader::new(out).lines().map_while(Result::ok) {
                lines.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines.load(Ordering::Relaxed) < 1_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    f.fib.restart().expect("restart snmpd");
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(walk.id() as i32, libc::SIGKILL) };
    let _ = walk.wait();
    let _ = reader.join();
    eprintln!(
        "the walk interrupted by snmpd's restart had {} of {} varbinds",
        lines.load(Ordering::Relaxed),
        fib_walk.len()
    );
    wait_served(&f.fib, Duration::from_secs(60));
    let again = f
        .fib
        .client()
        .walk(IP_FORWARD, 50)
        .expect("walk after the restart");
    assert!(
        again == fib_walk,
        "the walk after snmpd's restart differs: {} varbinds, {} before",
        again.len(),
        fib_walk.len()
    );

    // With priority 1, a subagent takes the tables over from snmpd's own modules: the first
    // column through the snmpd that has them is fibre's (as walked through the other).
    let over = subagent_on(&f, &f.own, &["--agentx-priority", "1"], "over");
    let column = f
        .own
        .client()
        .walk("1.3.6.1.2.1.4.24.7.1.7", 50)
        .expect("walk");
    let fibre_column: Vec<&VarBind> = fib_walk
        .iter()
        .filter(|vb| vb.oid.starts_with(&[1, 3, 6, 1, 2, 1, 4, 24, 7, 1, 7]))
        .collect();
    assert!(
        column.iter().eq(fibre_column),
        "priority 1 does not take inetCidrRouteTable over"
    );
    drop(over);

    // Every table: IPv6 rows are net-snmp's, one for one.
    let log = mirror.kill();
    assert!(
        log.matches(" open on ").count() >= 2,
        "one session per snmpd run: {log}"
    );
    // The subagent gone, snmpd answers for its subtree at once: within the client's 5 s,
    // where a master still waiting on a dead subagent would time out.
    let started = Instant::now();
    let gone = f
        .fib
        .client()
        .with_timeout(5)
        .get(&["1.3.6.1.2.1.4.24.6.0".into()])
        .expect("snmpget");
    assert_eq!(gone[0].kind, "noSuchObject", "{gone:?}");
    eprintln!(
        "after the subagent was killed, snmpd answered in {:?}",
        started.elapsed()
    );
    let mut mirror = subagent(&f, "all", "all");
    let all_walk = f
        .fib
        .client()
        .walk("1.3.6.1.2.1.4.24.7", 50)
        .expect("walk fibre (all)");
    let fib_all = inet_keyed(&rows(&all_walk, &INET_ENTRY, inet_index));
    let v6 = |r: &Rows<InetKey>| -> Rows<InetKey> {
        r.iter()
            .filter(|(k, c)| k.0 == 2 && !reject(c))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (own6, fib6) = (v6(&own_inet), v6(&fib_all));
    assert!(
        own6.len() > ROUTES / 4,
        "net-snmp shows {} IPv6 rows",
        own6.len()
    );
    let missing: Vec<_> = own6
        .keys()
        .filter(|k| !fib6.contains_key(*k))
        .take(5)
        .collect();
    let extra: Vec<_> = fib6
        .keys()
        .filter(|k| !own6.contains_key(*k))
        .take(5)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "IPv6 rows of every table: net-snmp's missing from fibre's {missing:?}, fibre's not net-snmp's {extra:?}"
    );
    // net-snmp leaves out IPv6 reject routes (RTF_REJECT in /proc/net/ipv6_route); fibre
    // shows every one.
    let rejects = fib_all
        .iter()
        .filter(|(k, c)| k.0 == 2 && reject(c))
        .count();
    let want = (0..ROUTES)
        .filter(|i| i.is_multiple_of(3) && i % 10 < 3)
        .count();
    assert_eq!(rejects, want, "IPv6 reject routes shown");
    for (key, cols) in &own6 {
        let mut want = cols.clone();
        want.remove(&9);
        assert_eq!(projected(fib6[key].clone(), 8, 9), want, "IPv6 row {key:?}");
    }
    mirror.stop();
}

/// Get and GetNext at OIDs around the walked ones, through snmpd: each must answer as the
/// walk says (the walk itself having been checked against net-snmp).
fn probes(snmpd: &Snmpd, walk: &[VarBind]) {
    let base: Vec<u32> = IP_FORWARD.split('.').map(|s| s.parse().unwrap()).collect();
    let mut oids: Vec<Vec<u32>> = vec![
        base.clone(),
        [&base[..], &[3]].concat(),
        [&base[..], &[5]].concat(),
        [&base[..], &[4, 1, 17]].concat(),
        [&base[..], &[7, 1, 18]].concat(),
        [&base[..], &[8]].concat(),
    ];
    // Rows only below (the counts' and the discards' OIDs are among these fixed probes): their
    // OIDs are long enough for every change made to them.
    for scalar in [3, 6, 8] {
        oids.push([&base[..], &[scalar, 0]].concat());
    }
    let rows: Vec<&VarBind> = walk.iter().filter(|vb| vb.oid.len() > 12).collect();
    // A fixed pseudo-random choice: the same probes on every machine.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while oids.len() < 1_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut o = rows[(x % rows.len() as u64) as usize].oid.clone();
        let n = o.len();
        match (x >> 32) % 5 {
            0 => {}
            1 => o[n - 1] = o[n - 1].saturating_sub(1),
            2 => o.truncate(11 + (x >> 40) as usize % (n - 10)),
            3 => o[12 + (x >> 40) as usize % (n - 12)] = 300 + (x >> 50) as u32 % 100,
            _ => o.push((x >> 48) as u32 % 3),
        }
        oids.push(o);
    }
    let in_subtree = |o: &[u32]| o.starts_with(&base);
    for chunk in oids.chunks(20) {
        let names: Vec<String> = chunk.iter().map(|o| dotted(o)).collect();
        let got = snmpd.client().get(&names).expect("snmpget");
        assert_eq!(got.len(), chunk.len(), "snmpget {names:?}");
        for (o, vb) in chunk.iter().zip(&got) {
            match walk.iter().find(|w| w.oid == *o) {
                Some(w) => assert_eq!(
                    (&vb.kind, &vb.value),
                    (&w.kind, &w.value),
                    "GET {}",
                    dotted(o)
                ),
                None => assert!(
                    vb.kind == "noSuchInstance" || vb.kind == "noSuchObject",
                    "GET {}: {vb:?}",
                    dotted(o)
                ),
            }
        }
        let got = snmpd.client().get_next(&names).expect("snmpgetnext");
        assert_eq!(got.len(), chunk.len(), "snmpgetnext {names:?}");
        for (o, vb) in chunk.iter().zip(&got) {
            match walk.iter().find(|w| w.oid > *o) {
                Some(w) => assert_eq!(vb, w, "GETNEXT {}", dotted(o)),
                None => assert!(
                    !in_subtree(&vb.oid) || vb.kind == "endOfMibView",
                    "GETNEXT {} past the subtree: {vb:?}",
                    dotted(o)
                ),
            }
        }
    }
}
