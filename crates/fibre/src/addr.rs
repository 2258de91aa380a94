//! Addresses as fixed-width keys.
//!
//! Every structure in fibre is written once, generic over [`Address`], and instantiated for
//! [`Ipv4Addr`] (32-bit keys) and [`Ipv6Addr`] (128-bit keys). An address is handled as an unsigned
//! integer whose most significant bit is the first bit on the wire, so prefix tests are shifts and
//! masks:
//!
//! ```text
//!   10.1.2.3/16  ->  key 0x0a01_0203, len 16
//!   bit index      0        8        16       24     31
//!                  00001010 00000001 00000010 00000011
//!                  |---- prefix ----| (host bits masked away)
//! ```
use std::fmt::{Debug, Display};
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::{BitAnd, BitOr, BitXor, Not, Shl, Shr};
use std::str::FromStr;

/// Address family, numbered as in the kernel (`AF_INET`, `AF_INET6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// IPv4 (`AF_INET`).
    Inet = 2,
    /// IPv6 (`AF_INET6`).
    Inet6 = 10,
}

impl Family {
    /// The family of `addr`.
    pub fn of(addr: &IpAddr) -> Family {
        match addr {
            IpAddr::V4(_) => Family::Inet,
            IpAddr::V6(_) => Family::Inet6,
        }
    }
    /// The iproute2 spelling: `inet` / `inet6`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Inet => "inet",
            Family::Inet6 => "inet6",
        }
    }
}

/// Runs generic code for the family chosen at run time: the one place a run-time [`Family`]
/// becomes a type. `with_family!(family, A => body)` evaluates `body` with the type `A` standing
/// for `Ipv4Addr` or `Ipv6Addr`.
///
/// ```
/// use fibre::{with_family, Address, Family};
/// fn width<A: Address>() -> u8 { A::WIDTH }
/// assert_eq!(with_family!(Family::Inet6, A => width::<A>()), 128);
/// ```
#[macro_export]
macro_rules! with_family {
    ($family:expr, $A:ident => $body:expr) => {
        match $family {
            $crate::Family::Inet => {
                type $A = ::std::net::Ipv4Addr;
                $body
            }
            $crate::Family::Inet6 => {
                type $A = ::std::net::Ipv6Addr;
                $body
            }
        }
    };
}

/// The unsigned integer behind an address: `u32` or `u128`.
pub trait Bits:
    Copy
    + Eq
    + Ord
    + Hash
    + Debug
    + Default
    + Send
    + Sync
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + Not<Output = Self>
    + Shl<u32, Output = Self>
    + Shr<u32, Output = Self>
    + 'static
{
    /// Width in bits: 32 or 128.
    const WIDTH: u8;
    /// All bits clear.
    const ZERO: Self;
    /// All bits set.
    const ONES: Self;
    /// Number of leading zero bits.
    fn leading_zeros(self) -> u32;
    /// Number of set bits.
    fn count_ones(self) -> u32;
    /// `self + 1`, wrapping to zero past the maximum.
    fn wrapping_add_one(self) -> Self;
    /// The low 64 bits, truncating.
    fn low_u64(self) -> u64;
    /// `v` zero-extended (or truncated) to this width.
    fn from_u64(v: u64) -> Self;

    /// The network mask of a prefix of `len` bits (`len` may be 0 or WIDTH).
    #[inline]
    fn mask(len: u8) -> Self {
        if len == 0 {
            Self::ZERO
        } else {
            Self::ONES << (Self::WIDTH - len) as u32
        }
    }
    /// Bit `index`, counted from the most significant bit (the first bit on the wire).
    #[inline]
    fn bit(self, index: u8) -> bool {
        debug_assert!(index < Self::WIDTH);
        (self >> (Self::WIDTH - 1 - index) as u32) & Self::from_u64(1) != Self::ZERO
    }
}

macro_rules! impl_bits {
    ($t:ty) => {
        impl Bits for $t {
            const WIDTH: u8 = <$t>::BITS as u8;
            const ZERO: Self = 0;
            const ONES: Self = <$t>::MAX;
            #[inline]
            fn leading_zeros(self) -> u32 {
                <$t>::leading_zeros(self)
            }
            #[inline]
            fn count_ones(self) -> u32 {
                <$t>::count_ones(self)
            }
            #[inline]
            fn wrapping_add_one(self) -> Self {
                self.wrapping_add(1)
            }
            #[inline]
            fn low_u64(self) -> u64 {
                self as u64
            }
            #[inline]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
        }
    };
}
impl_bits!(u32);
impl_bits!(u128);

/// An IP address of one family, convertible to and from its integer key.
pub trait Address:
    Copy + Eq + Ord + Hash + Debug + Display + FromStr + Send + Sync + Into<IpAddr> + 'static
{
    /// The integer key type: `u32` or `u128`.
    type Bits: Bits;
    /// A prefix of this family packed into a small key in [`crate::prefix::Prefix`] order:
    /// what the ordered maps of prefixes are keyed by ([`crate::packed`]).
    type Packed: crate::packed::PackedPrefix<Self>;
    /// The address family.
    const FAMILY: Family;
    /// Address width in bits: 32 or 128.
    const WIDTH: u8 = <Self::Bits as Bits>::WIDTH;
    /// The address as its integer key, first wire bit most significant.
    fn to_bits(self) -> Self::Bits;
    /// The address whose integer key is `bits`.
    fn from_bits(bits: Self::Bits) -> Self;
    /// The unspecified address (`0.0.0.0`, `::`).
    fn unspecified() -> Self {
        Self::from_bits(Self::Bits::ZERO)
    }
    /// Narrows a family-less address; `None` for the other family.
    fn from_ip(ip: IpAddr) -> Option<Self>;
}

impl Address for Ipv4Addr {
    type Bits = u32;
    type Packed = u64;
    const FAMILY: Family = Family::Inet;
    #[inline]
    fn to_bits(self) -> u32 {
        u32::from(self)
    }
    #[inline]
    fn from_bits(bits: u32) -> Self {
        Ipv4Addr::from(bits)
    }
    fn from_ip(ip: IpAddr) -> Option<Self> {
        match ip {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        }
    }
}

impl Address for Ipv6Addr {
    type Bits = u128;
    type Packed = crate::packed::PackedV6;
    const FAMILY: Family = Family::Inet6;
    #[inline]
    fn to_bits(self) -> u128 {
        u128::from(self)
    }
    #[inline]
    fn from_bits(bits: u128) -> Self {
        Ipv6Addr::from(bits)
    }
    fn from_ip(ip: IpAddr) -> Option<Self> {
        match ip {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_bits() {
        assert_eq!(u32::mask(0), 0);
        assert_eq!(u32::mask(8), 0xff00_0000);
        assert_eq!(u32::mask(32), u32::MAX);
        assert_eq!(u128::mask(128), u128::MAX);
        assert_eq!(u128::mask(1), 1u128 << 127);
        let k = Ipv4Addr::new(128, 0, 0, 1).to_bits();
        assert!(k.bit(0));
        assert!(!k.bit(1));
        assert!(k.bit(31));
    }
}
