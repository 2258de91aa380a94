//! Arbitrary bytes as a sequence of calls on the public FIB API (`PrefixSet`, `Fib`,
//! `Poptrie`), with arbitrary prefixes and ids: no call may panic or touch memory out of bounds,
//! refused ids are refused with an error, and whatever was accepted answers as the reference
//! algorithm given the accepted `(prefix, id)` set does. Shared by the fuzz target (`fuzz/fuzz_targets/fib_api.rs`)
//! and the no-panic property test (`tests/fib_api_never_panics.rs`).
use fibre::addr::Bits;
use fibre::fib::PrefixSet;
use fibre::fib::{Fib, LpmAlgorithm, Poptrie, Reference, MAX_ID, NO_ROUTE};
use fibre::{Address, Prefix};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Bytes read one field at a time; the input running out ends the sequence.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes([
            self.byte()?,
            self.byte()?,
            self.byte()?,
            self.byte()?,
        ]))
    }
    /// Bits for a key or prefix: a few random bytes spread over the address, so that prefixes
    /// share their first bits often (nested and sibling prefixes).
    fn bits<A: Address>(&mut self) -> Option<A::Bits> {
        let (hi, lo) = (self.byte()?, self.byte()?);
        let v = (u64::from(hi) << 56) | (u64::from(lo) << 40) | u64::from(lo);
        // The top bits of the address.
        Some(if A::Bits::WIDTH == 32 {
            A::Bits::from_u64(v >> 32)
        } else {
            A::Bits::from_u64(v) << 64
        })
    }
    /// An id: mostly small, sometimes at or above the largest storable one.
    fn id(&mut self) -> Option<u32> {
        Some(match self.byte()? % 8 {
            0 => MAX_ID + u32::from(self.byte()? % 3),
            1 => self.u32()?,
            _ => u32::from(self.byte()?),
        })
    }
}

/// Runs the calls `data` spells for one family.
pub fn run<A: fibre::fib::FibFamily>(data: &[u8]) {
    let mut input = Input(data);
    let width = A::Bits::WIDTH;
    let mut fib: Fib<A> = Fib::new();
    // What was accepted, in the reference.
    let mut accepted: Fib<A, Reference<A>> = Fib::new();
    let mut set: PrefixSet<A> = PrefixSet::new();
    let mut poptrie: Option<Poptrie<A>> = None;
    while let Some(op) = input.byte() {
        let Some(bits) = input.bits::<A>() else { break };
        let p = Prefix::from_bits(bits, input.byte().unwrap_or(0) % (width + 1))
            .unwrap_or_else(|| Prefix::any());
        match op % 6 {
            // Fib::set: an id above MAX_ID is refused and changes nothing.
            0 => {
                let Some(id) = input.id() else { break };
                let r = fib.set(p, Some(id));
                assert_eq!(r.is_err(), id > MAX_ID, "id {id} at {p}");
                if r.is_ok() {
                    accepted.set(p, Some(id)).expect("accepted by the FIB");
                }
            }
            1 => {
                fib.set(p, None).expect("removal takes no id");
                accepted.set(p, None).expect("removal takes no id");
            }
            // Publish, then every answer is the reference's.
            2 => {
                fib.publish();
                accepted.publish();
                for _ in 0..4 {
                    let Some(k) = input.bits::<A>() else { break };
                    let key = A::from_bits(k);
                    assert_eq!(fib.lookup(key), accepted.lookup(key), "lookup of {key}");
                }
            }
            // The bare encoding: a set with any ids, built or patched.
            3 => {
                let Some(id) = input.id() else { break };
                set.insert(p, id);
                let bad = set.iter().any(|(_, &id)| id > MAX_ID);
                match Poptrie::build(&set) {
                    Ok(built) => {
                        assert!(!bad, "build accepted an id above MAX_ID");
                        poptrie = Some(built);
                    }
                    Err(e) => assert!(bad && e.id > MAX_ID, "build refused {e}"),
                }
            }
            4 => {
                let named = input.byte().unwrap_or(0) % 2 == 0;
                set.remove(&p);
                if let Some(pt) = poptrie.as_mut() {
                    // A change not named to `update` may leave answers unspecified, never
                    // unsound: the lookups below must still return.
                    let changed = if named { vec![p] } else { vec![] };
                    let _ = pt.update(&set, &changed);
                }
            }
            _ => {
                if let Some(pt) = poptrie.as_ref() {
                    let key = A::from_bits(bits);
                    let got = pt.view().lookup(key.to_bits());
                    assert!(
                        got <= MAX_ID || got == NO_ROUTE,
                        "answer {got} was never stored"
                    );
                    let mut out = [0u32; 3];
                    pt.view().lookup_bulk(&[bits, bits, bits], &mut out);
                    assert_eq!(out, [got; 3], "bulk and single lookups agree");
                }
            }
        }
    }
    fib.publish();
    // A patched FIB equals a fresh build in its own form: its leaf cells stay as wide as the
    // widest id it held, and a slot's form depends on that width (`Fib::fresh_like`). A
    // fresh build of the same routes answers alike.
    let (fresh_image, _) = fib.fresh_like();
    assert_eq!(fib.image(), fresh_image, "patched equals built in its form");
    let fresh = Fib::<A>::from_routes(accepted.routes()).expect("accepted ids");
    for (p, _) in accepted.routes() {
        let key = p.addr();
        assert_eq!(
            fib.lookup(key),
            fresh.lookup(key),
            "patched and fresh at {key}"
        );
    }
    // What the image does not show (where chunks are stored) the audit checks.
    fib.audit().expect("the accounts balance");
}

/// Both families from one input.
pub fn run_both(data: &[u8]) {
    run::<Ipv4Addr>(data);
    run::<Ipv6Addr>(data);
}
