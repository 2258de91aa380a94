//! Scenario tests: the same batch file through `ip -j -force -batch` in a fresh namespace and
//! through fibre's `-j -force` mode; every printed JSON document and every failing line must be
//! the same. This checks the routes the kernel derives from links and addresses (local,
//! broadcast, connected, anycast, ff00::/8, secondaries, link down/up/del), `linkdown`/`dead`
//! flags, and the JSON that `route get`, `route show` and `rule show` print.
//!
//! Needs root and `ip netns`; skips with a message elsewhere, fails when FIBRE_KERNEL_TESTS=required.
#[path = "support/kernel_build.rs"]
mod kernel_build;
use fibre::io::iproute2::{Batch, BatchMode};
use kernel_build::router_like_the_kernel;
use kernel_oracle::{skip_or_fail, Netns};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// IPv6 ECMP next hops are listed from the leg the kernel's flow hash picked (S-class): compare
/// them as a set. Route lists are compared in order (ip prints them in the kernel's dump order:
/// tables by hash bucket, IPv4 by trie leaf, IPv6 after what each route covers); other lists
/// as multisets.
fn normalise(v: &mut Value) {
    match v {
        Value::Array(items) => {
            for i in items.iter_mut() {
                normalise(i);
            }
            let routes = items.first().is_some_and(|i| i.get("dst").is_some());
            if !routes {
                items.sort_by_key(|i| i.to_string());
            } else {
                // The kernel adds a device's ff00::/8 route when its linkwatch sees the carrier,
                // and both ends of a veth pair get it in one run whose order is a race (usually
                // the end brought up second first, as fibre lists them): that run is a set.
                let multicast = |i: &Value| i["dst"] == "ff00::/8" && i["type"] == "multicast";
                let mut start = 0;
                while start < items.len() {
                    let run = items[start..].iter().take_while(|i| multicast(i)).count();
                    items[start..start + run].sort_by_key(|i| i.to_string());
                    start += run.max(1);
                }
            }
        }
        Value::Object(m) => {
            for (_, x) in m.iter_mut() {
                normalise(x);
            }
        }
        _ => {}
    }
}

/// `route get DST` lines without `fibmatch` after a `#any-leg GW GW...` comment: the answer
/// for DST may name any of those legs.
fn any_leg_answers(text: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut pending = None;
    for line in text.lines() {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["#any-leg", legs @ ..] => pending = Some(legs.iter().map(|s| s.to_string()).collect()),
            ["route", "get", dst, ..] => {
                if let Some(legs) = pending.take() {
                    out.insert(dst.to_string(), legs);
                }
            }
            _ => {}
        }
    }
    out
}

/// The error messages of a batch's standard error, in order ("Command failed" lines left out).
fn messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("Command failed"))
        .map(str::to_string)
        .collect()
}

fn failed_lines(stderr: &str) -> BTreeSet<usize> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("Command failed "))
        .filter_map(|r| r.rsplit(':').next()?.parse().ok())
        .collect()
}

/// Splits a batch where the kernel needs time: at `#settle` lines, and after each run of `link`
/// and `addr` commands (carrier detection and IPv6 address setup finish asynchronously).
fn chunks(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut after_setup = false;
    for line in text.lines() {
        let word = line.split_whitespace().next().unwrap_or("");
        let setup = word == "link" || word == "addr";
        if line.trim() == "#settle"
            || (after_setup && !setup && !word.starts_with('#') && !word.is_empty())
        {
            out.push(String::new());
        }
        if !word.starts_with('#') && !word.is_empty() {
            after_setup = setup;
        }
        // Keep every line (a settle line too) so that line numbers stay the file's.
        out.last_mut().expect("one chunk").push_str(line);
        out.last_mut().expect("one chunk").push('\n');
    }
    out
}

fn scenario(path: &Path) {
    let text = std::fs::read_to_string(path).expect("scenario file");
    let ns = Netns::create("scenario").expect("namespace");
    // The kernel notices carrier changes asynchronously: run its batch in chunks split at
    // `#settle` lines and give it a moment between them.
    let (mut k_out, mut k_failed, mut offset) = (String::new(), BTreeSet::new(), 0);
    let mut k_messages = Vec::new();
    for chunk in chunks(&text) {
        let r = ns.ip_batch_str(&["-j"], &chunk).expect("ip -batch");
        k_out.push_str(&r.stdout);
        k_failed.extend(failed_lines(&r.stderr).into_iter().map(|n| n + offset));
        k_messages.extend(messages(&r.stderr));
        offset += chunk.lines().count();
        std::thread::sleep(std::time::Duration::from_millis(1200));
    }
    let mut batch = Batch::new(router_like_the_kernel());
    batch.json = true;
    batch.mode = BatchMode::Force;
    batch.name = path.display().to_string();
    // Each test has its own namespace; the chunks of one batch run one after the other.
    let ours = batch.run_text(&text);

    // Read from what each printed: a line that ends ip's batch (an `invarg` in its parser) has
    // no "Command failed" line in either.
    assert_eq!(
        k_failed,
        failed_lines(&ours.stderr),
        "the same lines fail\nfibre: {}",
        ours.stderr
    );
    // And the same words: ip's errors (errno or the kernel's message) as fibre prints them.
    assert_eq!(
        k_messages,
        messages(&ours.stderr),
        "the same error messages"
    );
    let theirs: Vec<&str> = k_out.lines().filter(|l| !l.trim().is_empty()).collect();
    // fibre also prints a JSON error object for each failed line; ip prints nothing there.
    let mine: Vec<&str> = ours
        .stdout
        .lines()
        .filter(|l| !l.starts_with("{\"error\""))
        .collect();
    assert_eq!(
        theirs.len(),
        mine.len(),
        "as many printed documents\nkernel:\n{k_out}\nfibre:\n{}",
        ours.stdout
    );
    let legs = any_leg_answers(&text);
    for (k, f) in theirs.iter().zip(&mine) {
        let (mut kv, mut fv): (Value, Value) = (
            serde_json::from_str(k).expect("ip JSON"),
            serde_json::from_str(f).expect("fibre JSON"),
        );
        if let Some(gateways) = kv[0]["dst"].as_str().and_then(|d| legs.get(d)) {
            // The kernel's leg depends on its hash key (S-class): any leg of the route will do.
            for v in [&mut kv, &mut fv] {
                let g = v[0]["gateway"].as_str().unwrap_or("").to_string();
                assert!(
                    gateways.contains(&g),
                    "{g} is not a leg of {gateways:?}: {k}"
                );
                v[0]["gateway"] = Value::Null;
            }
        }
        normalise(&mut kv);
        normalise(&mut fv);
        assert_eq!(kv, fv, "\nkernel: {k}\nfibre:  {f}");
    }
}

#[test]
fn links_and_addresses_derive_the_kernels_routes() {
    if skip_or_fail("links_and_addresses_derive_the_kernels_routes") {
        return;
    }
    scenario(&scenarios().join("links-and-addresses.batch"));
}

#[test]
fn route_get_and_rule_show_print_ips_json() {
    if skip_or_fail("route_get_and_rule_show_print_ips_json") {
        return;
    }
    scenario(&scenarios().join("route-get-json.batch"));
}

#[test]
fn special_addresses_link_changes_and_refusals_match_the_kernel() {
    if skip_or_fail("special_addresses_link_changes_and_refusals_match_the_kernel") {
        return;
    }
    scenario(&scenarios().join("mends.batch"));
}

#[test]
fn address_lifetimes_replacements_and_prefix_routes_match_the_kernel() {
    if skip_or_fail("address_lifetimes_replacements_and_prefix_routes_match_the_kernel") {
        return;
    }
    scenario(&scenarios().join("address-changes.batch"));
}

#[test]
fn nexthop_objects_match_the_kernel() {
    if skip_or_fail("nexthop_objects_match_the_kernel") {
        return;
    }
    scenario(&scenarios().join("nexthops.batch"));
}

#[test]
fn gateway_checks_after_what_changes_them_match_the_kernel() {
    if skip_or_fail("gateway_checks_after_what_changes_them_match_the_kernel") {
        return;
    }
    scenario(&scenarios().join("gateways.batch"));
}

#[test]
fn sources_chosen_among_addresses_match_the_kernel() {
    if skip_or_fail("sources_chosen_among_addresses_match_the_kernel") {
        return;
    }
    scenario(&scenarios().join("sources.batch"));
}

#[test]
fn edge_router_example_matches_kernel() {
    if skip_or_fail("edge_router_example_matches_kernel") {
        return;
    }
    scenario(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/edge-router.batch"));
}

/// `route get` as text, as ip prints it, for the queries of a scenario: the changes before its
/// first link change set up a namespace and fibre alike, then the queries run as one batch in
/// both; standard output and error must be the same, byte for byte.
fn route_get_text(path: &Path) {
    let text = std::fs::read_to_string(path).expect("scenario file");
    let head: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("link set wa down"))
        .collect();
    let setup: String = head
        .iter()
        .filter(|l| !l.starts_with("route get") && !l.contains(" show"))
        .map(|l| format!("{l}\n"))
        .collect();
    let queries: String = head
        .iter()
        .filter(|l| l.starts_with("route get"))
        .map(|l| format!("{l}\n"))
        .collect();
    let ns = Netns::create("gettext").expect("namespace");
    for chunk in chunks(&setup) {
        ns.ip_batch_str(&[], &chunk).expect("ip -batch");
        std::thread::sleep(std::time::Duration::from_millis(1200));
    }
    let k = ns.ip_batch_str(&[], &queries).expect("ip -batch");
    let mut batch = Batch::new(router_like_the_kernel());
    batch.mode = BatchMode::Force;
    batch.run_text(&setup);
    let ours = batch.run_text(&queries);
    assert!(!k.stdout.is_empty(), "the kernel answered nothing");
    assert_eq!(k.stdout, ours.stdout, "route get text");
    // The batch's file name aside (ip read a temporary file).
    let unnamed = |e: &str| -> Vec<String> {
        e.lines()
            .map(|l| match l.strip_prefix("Command failed ") {
                Some(at) => format!("Command failed {}", at.rsplit(':').next().unwrap_or("")),
                None => l.to_string(),
            })
            .collect()
    };
    assert_eq!(
        unnamed(&k.stderr),
        unnamed(&ours.stderr),
        "route get errors"
    );
}

#[test]
fn route_get_prints_ips_text() {
    if skip_or_fail("route_get_prints_ips_text") {
        return;
    }
    route_get_text(&scenarios().join("mends.batch"));
}

fn scenarios() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios")
}

/// Values ip cannot read, one line at a time after `link set lo up` (tests/scenarios/
/// bad-values.lines): the same standard error, byte for byte but for the batch's name (ip's
/// `invarg` words and the empty line some leave after them, or the kernel's refusal), and the
/// same verdict.
#[test]
fn bad_values_are_refused_in_ips_words() {
    if skip_or_fail("bad_values_are_refused_in_ips_words") {
        return;
    }
    let text = std::fs::read_to_string(scenarios().join("bad-values.lines")).expect("lines");
    let ns = Netns::create("badvalues").expect("namespace");
    ns.ip_batch_str(&[], "link set lo up\n").expect("ip -batch");
    let without_names = |stderr: &str| -> String {
        stderr
            .lines()
            .filter(|l| !l.starts_with("Command failed"))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let mut wrong = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let k = ns
            .ip_batch_str(&[], &format!("{line}\n"))
            .expect("ip -batch");
        let mut batch = Batch::new(router_like_the_kernel());
        assert!(batch.run_text("link set lo up\n").success());
        let ours = batch.run_text(&format!("{line}\n"));
        let (theirs, mine) = (without_names(&k.stderr), without_names(&ours.stderr));
        // The verdict too: ip's exit status (255 after `invarg`, 1 otherwise).
        if theirs != mine || k.status != Some(i32::from(ours.status)) {
            wrong.push(format!(
                "{line}\n  ip:    {theirs:?} status {:?}\n  fibre: {mine:?} status {}",
                k.status, ours.status
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
