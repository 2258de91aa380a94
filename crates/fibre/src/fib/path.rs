//! Which instructions bulk lookups run on, chosen once at run time.
//!
//! Machines differ: AMD Zen 3 has AVX2 but no AVX-512, Zen 4 and recent Intel server parts have
//! AVX-512 with a vector population count (VPOPCNTDQ), which Poptrie's node step needs. One
//! binary carries every path; [`LookupPath::chosen`] picks one for both families by a
//! measured rule ([`LookupPath::default_rule`]), unless the `FIBRE_LOOKUP` environment variable names another
//! (`scalar`, `avx2`, `avx512`): the bench compares paths that way, and the tests force each
//! path the machine has through [`crate::fib::LpmView::lookup_bulk_on`].
use std::sync::OnceLock;

/// A way of running bulk lookups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LookupPath {
    /// One lookup after another per lane, interleaved in software (any CPU).
    Scalar,
    /// 4 lanes a vector, gathers, a population count from nibble tables (x86-64 with AVX2).
    Avx2,
    /// 8 lanes a vector (IPv4: 16 of 32 bits), gathers and VPOPCNTQ (x86-64 with AVX-512F and
    /// AVX512-VPOPCNTDQ).
    Avx512,
}

impl LookupPath {
    /// Every path, narrowest first.
    pub const ALL: [LookupPath; 3] = [LookupPath::Scalar, LookupPath::Avx2, LookupPath::Avx512];

    /// The name `FIBRE_LOOKUP` and the bench use.
    pub fn name(self) -> &'static str {
        match self {
            LookupPath::Scalar => "scalar",
            LookupPath::Avx2 => "avx2",
            LookupPath::Avx512 => "avx512",
        }
    }

    /// The path called `name` (see [`LookupPath::name`]).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether this CPU can run the path.
    pub fn supported(self) -> bool {
        match self {
            LookupPath::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            LookupPath::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            LookupPath::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The paths this CPU can run, narrowest first.
    pub fn available() -> Vec<LookupPath> {
        Self::ALL.into_iter().filter(|p| p.supported()).collect()
    }

    /// The path bulk lookups take: `FIBRE_LOOKUP`'s when set and supported, else
    /// [`LookupPath::default_rule`]. Decided on first use (every bulk call asks) and kept for
    /// the life of the process.
    pub fn chosen() -> LookupPath {
        static CHOSEN: OnceLock<LookupPath> = OnceLock::new();
        // An unusable request falls back to the default; `choose` names the problem for
        // callers that report it (the bench does).
        *CHOSEN.get_or_init(|| {
            Self::choose(std::env::var("FIBRE_LOOKUP").ok().as_deref())
                .unwrap_or_else(|_| Self::default_rule())
        })
    }

    /// The default rule, from `fibre bench` and `fib_profile` on AMD Zen 4 and Intel Emerald
    /// Rapids (AVX-512): AVX-512 where the CPU has it, for both families, else the scalar path.
    /// - IPv6 (128-bit keys), Zen 4: 18.5 ns a W1 bulk lookup on the full view against 23.7 ns
    ///   scalar (issue 15's second round). A node level of a 128-bit key costs the scalar path a
    ///   two-word shift and its lane bookkeeping; a vector does 8 lanes in a few instructions,
    ///   and IPv6 walks several levels.
    /// - IPv4, Zen 4: scalar until issue 15's ninth round (8.4 ns AVX-512 against 6.5 ns scalar,
    ///   W1). With the keys read straight into lanes (no scalar copy into two arrays) AVX-512 is
    ///   level on W1 (4.26-4.54 ns against 4.41-4.71 scalar, ahead in four runs of five) and a
    ///   quarter ahead on W2 (uniform addresses, where lanes end at different levels: 5.11-5.25
    ///   against 6.53-7.03), five runs of `fib_profile 4 1000000 time`, both paths in each.
    /// - Intel Xeon, Emerald Rapids (family 6 model 207; issue 15's twenty-seventh round). Its
    ///   kernel reports it not affected by Downfall (GDS), so its gathers run without that
    ///   microcode fix. AVX-512 is ahead on both families, three runs of
    ///   `fib_profile 4 1000000 time` and two of `fib_profile 6 1000000 time`, every path in
    ///   each: IPv4 W1 5.7-7.4 ns against 6.9-9.6 scalar and 9.8-13.2 AVX2, W2 4.2-6.4 against
    ///   9.1-12.1; IPv6 W1 10.2-13.7 against 23.4-28.2 scalar, W2 1.4-1.8 against 1.8-2.4. The
    ///   Intel parts with VPOPCNTDQ that Downfall affects (Ice Lake, Tiger Lake, Rocket Lake)
    ///   run gathers under its microcode fix, much slower; not measured: there
    ///   `FIBRE_LOOKUP=scalar` may be the better choice.
    /// - AVX2 is nowhere ahead. On Zen 4 its 4-lane gathers and table-driven popcount only tie
    ///   the scalar path (IPv6 23.3 ns). On AMD Zen 3 (EPYC, family 25 model 1: AVX2 without
    ///   AVX-512), where the rule gives scalar, AVX2 is behind in every round: W1 IPv4 17-25 ns
    ///   against 14-17 scalar, IPv6 53-114 against 44-54, IPv6 W2 5.6-10.6 against 3.7-4.7
    ///   (three rounds of `fib_profile 4|6 1000000 time`, both paths in each, issue 15's
    ///   nineteenth round, on a busy machine). AVX2 is there to be forced and measured.
    ///
    /// Until the ninth round the families had different paths; one rule serves both now.
    pub fn default_rule() -> LookupPath {
        if LookupPath::Avx512.supported() {
            LookupPath::Avx512
        } else {
            LookupPath::Scalar
        }
    }

    /// The path a `FIBRE_LOOKUP` value selects (`None` or empty: the default), or why it
    /// cannot be used here.
    pub fn choose(requested: Option<&str>) -> Result<LookupPath, String> {
        match requested.map(str::trim).filter(|s| !s.is_empty()) {
            None => Ok(Self::default_rule()),
            Some(name) => match Self::parse(name) {
                None => Err(format!(
                    "FIBRE_LOOKUP={name}: not a lookup path (scalar, avx2, avx512)"
                )),
                Some(p) if !p.supported() => Err(format!(
                    "FIBRE_LOOKUP={name}: this CPU lacks the instructions"
                )),
                Some(p) => Ok(p),
            },
        }
    }
}

impl std::fmt::Display for LookupPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::LookupPath;

    #[test]
    fn a_request_is_honoured_only_where_the_cpu_can_run_it() {
        assert_eq!(LookupPath::choose(Some("scalar")), Ok(LookupPath::Scalar));
        assert!(LookupPath::choose(Some("sse9"))
            .unwrap_err()
            .contains("sse9"));
        for p in LookupPath::ALL {
            assert_eq!(LookupPath::choose(Some(p.name())).is_ok(), p.supported());
            assert_eq!(LookupPath::parse(p.name()), Some(p));
        }
        let default = LookupPath::choose(None).unwrap();
        assert!(default.supported());
        // The rule: AVX-512 where the CPU has it, else scalar (never AVX2).
        let rule = if LookupPath::Avx512.supported() {
            LookupPath::Avx512
        } else {
            LookupPath::Scalar
        };
        assert_eq!(default, rule);
        assert_eq!(
            LookupPath::choose(Some(" ")),
            Ok(default),
            "blank is the default"
        );
    }
}
