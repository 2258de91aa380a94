//! What the bench needs of an address key beyond fibre's `Bits`: bytes on the wire, random draws.
use fibre::addr::Bits;
use rand::Rng;

/// What the Rust peer crates (`prefix-trie`, `poptrie`) need of the key type: u32 and u128
/// qualify.
pub trait PeerKey:
    Bits
    + poptrie::Address
    + num_traits::Unsigned
    + num_traits::PrimInt
    + num_traits::CheckedShr
    + std::fmt::Debug
{
}
impl PeerKey for u32 {}
impl PeerKey for u128 {}

pub trait Key: Bits {
    /// Appends the key in network byte order (the harness file format).
    fn put_be(self, out: &mut Vec<u8>);
    /// A uniform random key in `lo..=hi`.
    fn random_in(rng: &mut impl Rng, lo: Self, hi: Self) -> Self;
}

impl Key for u32 {
    fn put_be(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }
    fn random_in(rng: &mut impl Rng, lo: Self, hi: Self) -> Self {
        rng.gen_range(lo..=hi)
    }
}

impl Key for u128 {
    fn put_be(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }
    fn random_in(rng: &mut impl Rng, lo: Self, hi: Self) -> Self {
        rng.gen_range(lo..=hi)
    }
}
