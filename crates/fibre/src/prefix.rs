//! Prefixes: an address and a length, always masked.
//!
//! Invariant (kept by every constructor): the bits of `bits` past `len` are zero, so two prefixes
//! that cover the same addresses compare equal. The order is the order of an in-order walk of a
//! routing table and of SNMP's GETNEXT: by network address, then shorter before longer.
use crate::addr::{Address, Bits};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// An address prefix (`ADDR/LEN`), its host bits always zero.
///
/// Parsing with `str::parse` is strict; [`Prefix::parse_masked`] masks host bits instead.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix<A: Address> {
    bits: A::Bits,
    len: u8,
}

/// Why a prefix did not parse; `text` is the input as given, for messages that name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixError {
    /// The input as given.
    pub text: String,
    /// What was wrong with it.
    pub kind: PrefixErrorKind,
}

/// The ways a prefix can fail to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixErrorKind {
    /// Not an address of this family.
    BadAddress,
    /// The length is not a number in 0..=width.
    BadLength,
    /// Bits are set past the length (`10.0.0.1/8`): the kernel refuses this for IPv4 routes.
    HostBitsSet,
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            PrefixErrorKind::BadAddress => write!(f, "\"{}\" is not a valid address", self.text),
            PrefixErrorKind::BadLength => {
                write!(f, "\"{}\" has an invalid prefix length", self.text)
            }
            PrefixErrorKind::HostBitsSet => {
                write!(
                    f,
                    "\"{}\": invalid prefix for given prefix length",
                    self.text
                )
            }
        }
    }
}
impl std::error::Error for PrefixError {}

impl<A: Address> Prefix<A> {
    /// The prefix of `len` bits containing `addr`; host bits are masked away.
    ///
    /// # Panics
    /// If `len` exceeds the address width (a programming error, not an input error: parsers check).
    #[inline]
    pub fn new(addr: A, len: u8) -> Self {
        assert!(len <= A::WIDTH, "prefix length {len} > {}", A::WIDTH);
        Prefix {
            bits: addr.to_bits() & A::Bits::mask(len),
            len,
        }
    }
    /// Like [`Prefix::new`] but refuses host bits past the length, as the kernel does for IPv4.
    pub fn new_strict(addr: A, len: u8) -> Option<Self> {
        let p = Self::from_bits(addr.to_bits(), len)?;
        (p.bits == addr.to_bits()).then_some(p)
    }
    /// From raw key bits (masked); `None` if `len` is too long.
    #[inline]
    pub fn from_bits(bits: A::Bits, len: u8) -> Option<Self> {
        (len <= A::WIDTH).then(|| Prefix {
            bits: bits & A::Bits::mask(len),
            len,
        })
    }
    /// The whole address space (`0.0.0.0/0`, `::/0`), which iproute2 calls `default`.
    pub fn any() -> Self {
        Prefix {
            bits: A::Bits::ZERO,
            len: 0,
        }
    }
    /// A host prefix (`/32`, `/128`).
    pub fn host(addr: A) -> Self {
        Prefix {
            bits: addr.to_bits(),
            len: A::WIDTH,
        }
    }
    /// The network address (host bits zero).
    #[inline]
    pub fn addr(&self) -> A {
        A::from_bits(self.bits)
    }
    /// The network address as its integer key.
    #[inline]
    pub fn bits(&self) -> A::Bits {
        self.bits
    }
    /// The prefix length in bits. (A prefix is never "empty": length 0 covers everything.)
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u8 {
        self.len
    }
    /// True for the zero-length prefix (this is not "empty": it covers everything).
    #[inline]
    pub fn is_default(&self) -> bool {
        self.len == 0
    }
    /// True for a full-length prefix (`/32`, `/128`).
    #[inline]
    pub fn is_host(&self) -> bool {
        self.len == A::WIDTH
    }
    /// Does this prefix cover `addr`?
    #[inline]
    pub fn contains(&self, addr: A) -> bool {
        self.contains_bits(addr.to_bits())
    }
    /// The first `len` bits agree: a count of leading zeros, where a mask would be a shift by a
    /// variable amount (for `u128` a branchy sequence, on every trie level). Exact because a
    /// prefix's bits past its length are always zero (every constructor masks them).
    #[inline]
    fn contains_bits(&self, bits: A::Bits) -> bool {
        (bits ^ self.bits).leading_zeros() >= self.len as u32
    }
    /// Does this prefix cover all of `other` (itself included)?
    #[inline]
    pub fn covers(&self, other: &Prefix<A>) -> bool {
        self.len <= other.len && self.contains_bits(other.bits)
    }
    /// The last address inside the prefix (the IPv4 subnet broadcast address).
    pub fn last(&self) -> A {
        A::from_bits(self.bits | !A::Bits::mask(self.len))
    }
    /// The longest prefix covering both.
    pub fn common(&self, other: &Prefix<A>) -> Prefix<A> {
        let same = (self.bits ^ other.bits)
            .leading_zeros()
            .min(A::WIDTH as u32) as u8;
        let len = same.min(self.len).min(other.len);
        Prefix {
            bits: self.bits & A::Bits::mask(len),
            len,
        }
    }
    /// Bit `index` of the network address (MSB first); used to pick a child in the trie.
    #[inline]
    pub fn bit(&self, index: u8) -> bool {
        self.bits.bit(index)
    }
    /// Parses `ADDR/LEN`, or `ADDR` as a host prefix; host bits are masked away.
    pub fn parse_masked(text: &str) -> Result<Self, PrefixError> {
        let (addr, len) = Self::split(text)?;
        Ok(Self::new(addr, len))
    }
    /// Parses like [`Prefix::parse_masked`] but refuses host bits past the length.
    pub fn parse_strict(text: &str) -> Result<Self, PrefixError> {
        let (addr, len) = Self::split(text)?;
        Self::new_strict(addr, len).ok_or(PrefixError {
            text: text.to_string(),
            kind: PrefixErrorKind::HostBitsSet,
        })
    }
    fn split(text: &str) -> Result<(A, u8), PrefixError> {
        let err = |kind| PrefixError {
            text: text.to_string(),
            kind,
        };
        let (a, l) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let addr = A::from_str(a).map_err(|_| err(PrefixErrorKind::BadAddress))?;
        let len = match l {
            None => A::WIDTH,
            Some(l) if !l.is_empty() && l.len() <= 3 && l.bytes().all(|b| b.is_ascii_digit()) => {
                let n: u16 = l.parse().map_err(|_| err(PrefixErrorKind::BadLength))?;
                if n > A::WIDTH as u16 {
                    return Err(err(PrefixErrorKind::BadLength));
                }
                n as u8
            }
            Some(_) => return Err(err(PrefixErrorKind::BadLength)),
        };
        Ok((addr, len))
    }
}

impl<A: Address> FromStr for Prefix<A> {
    type Err = PrefixError;
    /// Strict: `10.0.0.1/8` is an error. Use [`Prefix::parse_masked`] to mask instead.
    fn from_str(s: &str) -> Result<Self, PrefixError> {
        Self::parse_strict(s)
    }
}

impl<A: Address> Ord for Prefix<A> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.bits.cmp(&other.bits).then(self.len.cmp(&other.len))
    }
}
impl<A: Address> PartialOrd for Prefix<A> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<A: Address> fmt::Display for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}
impl<A: Address> fmt::Debug for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Snapshots store a prefix as (address, length) and refuse host bits or a length past the
/// family's width on the way back in, so that no prefix breaks the invariant `new` keeps.
#[cfg(feature = "snapshot")]
impl<A: Address + serde::Serialize> serde::Serialize for Prefix<A> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde::Serialize::serialize(&(self.addr(), self.len), s)
    }
}

#[cfg(feature = "snapshot")]
impl<'de, A: Address + serde::Deserialize<'de>> serde::Deserialize<'de> for Prefix<A> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (addr, len): (A, u8) = serde::Deserialize::deserialize(d)?;
        Prefix::new_strict(addr, len).ok_or_else(|| {
            serde::de::Error::custom(format!("prefix {addr}/{len} is not one of its family"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};
    type P4 = Prefix<Ipv4Addr>;
    type P6 = Prefix<Ipv6Addr>;

    #[test]
    fn parse_and_format_both_families() {
        assert_eq!(
            "10.0.0.0/8".parse::<P4>().unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert_eq!("10.1.2.3".parse::<P4>().unwrap().len(), 32);
        assert_eq!(
            "2001:db8::/32".parse::<P6>().unwrap().to_string(),
            "2001:db8::/32"
        );
        assert_eq!(
            P6::parse_masked("2001:db8::1/32").unwrap().to_string(),
            "2001:db8::/32"
        );
    }

    #[test]
    fn errors_name_the_text() {
        let e = "10.0.0.1/8".parse::<P4>().unwrap_err();
        assert_eq!(e.kind, PrefixErrorKind::HostBitsSet);
        assert!(e.to_string().contains("10.0.0.1/8"));
        for bad in [
            "10.0.0.0/33",
            "10.0.0.0/",
            "10.0.0/8",
            "x/8",
            "10.0.0.0/+8",
            "::/129",
            "",
        ] {
            let r = if bad.contains(':') {
                bad.parse::<P6>().map(|_| ())
            } else {
                bad.parse::<P4>().map(|_| ())
            };
            let e = r.unwrap_err();
            assert_eq!(e.text, bad);
        }
        assert!("1.2.3.4/8".parse::<P6>().is_err());
    }

    #[test]
    fn cover_common_order() {
        let a: P4 = "10.0.0.0/8".parse().unwrap();
        let b: P4 = "10.1.0.0/16".parse().unwrap();
        let c: P4 = "11.0.0.0/8".parse().unwrap();
        assert!(a.covers(&b) && !b.covers(&a) && a.covers(&a));
        assert_eq!(a.common(&c).to_string(), "10.0.0.0/7");
        assert_eq!(b.common(&a), a);
        assert!(a < b && b < c);
        assert!(P4::any() < a);
        assert_eq!(b.last(), Ipv4Addr::new(10, 1, 255, 255));
        assert_eq!(P6::any().common(&P6::any()), P6::any());
    }

    proptest::proptest! {
        /// `contains` and `covers` count leading zeros: the same answers as the mask, at every
        /// length, with addresses that share long runs of bits.
        #[test]
        fn containment_is_the_mask(a in proptest::prelude::any::<u128>(), flips in 0u32..130,
                                   la in 0u8..=128, lb in 0u8..=128) {
            let b = if flips < 128 { a ^ (1u128 << flips) } else { a };
            let (pa, pb) = (P6::new(Ipv6Addr::from(a), la), P6::new(Ipv6Addr::from(b), lb));
            let mask = |l: u8| if l == 0 { 0 } else { u128::MAX << (128 - l as u32) };
            proptest::prop_assert_eq!(pa.contains(Ipv6Addr::from(b)), b & mask(la) == a & mask(la));
            proptest::prop_assert_eq!(pa.covers(&pb), la <= lb && b & mask(la) == a & mask(la));
            let (a4, b4) = ((a >> 96) as u32, (b >> 96) as u32);
            let (la4, lb4) = (la.min(32), lb.min(32));
            let (qa, qb) = (P4::new(Ipv4Addr::from(a4), la4), P4::new(Ipv4Addr::from(b4), lb4));
            let mask4 = |l: u8| if l == 0 { 0 } else { u32::MAX << (32 - l as u32) };
            proptest::prop_assert_eq!(qa.contains(Ipv4Addr::from(b4)), b4 & mask4(la4) == a4 & mask4(la4));
            proptest::prop_assert_eq!(qa.covers(&qb), la4 <= lb4 && b4 & mask4(la4) == a4 & mask4(la4));
        }
    }
}
