//! MRT routing dumps (RFC 6396), read with `bgpkit-parser`: the prefixes a RIB dump holds.
//!
//! TABLE_DUMP (v1, such as RIPE RIS bviews of 2000) and TABLE_DUMP_V2 RIB dumps list each
//! prefix once per peer; BGP4MP update files announce and withdraw. [`rib_prefixes`] keeps
//! every announced prefix once, in first-seen order, which is what a benchmark table or an
//! analyst's prefix list needs.
use bgpkit_parser::models::ElemType;
use bgpkit_parser::BgpkitParser;
use std::collections::HashSet;
use std::io::Read;
use std::net::IpAddr;

/// Distinct announced prefixes of an (uncompressed) MRT stream, host bits masked.
///
/// A record that cannot be parsed ends the read with an error naming the record's position;
/// nothing is returned half-read.
pub fn rib_prefixes<R: Read>(input: R) -> Result<Vec<(IpAddr, u8)>, String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (n, elem) in BgpkitParser::from_reader(input)
        .into_fallible_elem_iter()
        .enumerate()
    {
        let elem = elem.map_err(|e| format!("element {}: {e}", n + 1))?;
        if elem.elem_type != ElemType::ANNOUNCE {
            continue;
        }
        let net = elem.prefix.prefix.trunc();
        let key = (net.addr(), net.prefix_len());
        if seen.insert(key) {
            out.push(key);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn shared(name: &str) -> Option<std::fs::File> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/mrt")
            .join(name);
        match std::fs::File::open(&path) {
            Ok(f) => Some(f),
            Err(e) => {
                // A user's fresh clone has no shared data; CI has it and sets this.
                assert!(
                    std::env::var_os("FIBRE_DATA_REQUIRED").is_none(),
                    "FIBRE_DATA_REQUIRED is set but {} cannot be read: {e}",
                    path.display()
                );
                eprintln!(
                    "skipped: {} absent (shared data not beside the repo)",
                    path.display()
                );
                None
            }
        }
    }

    #[test]
    fn reads_the_2000_ris_bview_in_table_dump_v1() {
        let Some(f) = shared("ripe-rrc00-bview.20000111.0032.gz") else {
            return;
        };
        let prefixes = rib_prefixes(flate2::read::GzDecoder::new(f)).unwrap();
        // A year-2000 view: tens of thousands of IPv4 prefixes.
        assert!(prefixes.len() > 50_000, "{}", prefixes.len());
        assert!(prefixes.iter().all(|(a, _)| a.is_ipv4()));
        assert!(prefixes.contains(&("3.0.0.0".parse().unwrap(), 8)));
    }

    #[test]
    fn truncated_input_is_an_error_not_a_short_table() {
        let Some(f) = shared("ripe-rrc00-bview.20000111.0032.gz") else {
            return;
        };
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(f)
            .take(100_000)
            .read_to_end(&mut bytes)
            .unwrap();
        bytes.truncate(99_990);
        assert!(rib_prefixes(&bytes[..]).is_err());
    }
}
