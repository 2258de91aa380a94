//! What the subagent answers to one PDU from the master, apart from any socket: Get, GetNext
//! and GetBulk read one router snapshot; SETs are refused; the rest is acknowledged or ends
//! the session. The session sends the bytes; tests and the fuzz target call [`answer`]
//! directly.
use super::mib::{Found, Mib};
use super::pdu::{self, error, Pdu, Request, SearchRange, Value, VarBind};
use crate::router::Router;
use std::sync::Arc;

/// Most varbinds one GetBulk answer carries: bounds the work and memory of one PDU whatever
/// its max-repetitions; the master asks again from where the answer ends.
pub const BULK_MAX_VARBINDS: usize = 10_000;

/// What to do about a PDU.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Send these bytes; for a Get, GetNext or GetBulk, the varbinds they carry.
    Reply(Vec<u8>, Option<usize>),
    /// Nothing to send (CleanupSet, a response to the subagent).
    Nothing,
    /// The master closed the session, with this reason.
    Closed(u8),
    /// The master answered that the session is not open.
    NotOpen,
}

/// The answer to `p`, reading the router from `source` (once, and only for a read).
pub fn answer(mib: &mut Mib, source: &dyn Fn() -> Arc<Router>, p: &Pdu) -> Answer {
    let h = &p.header;
    let read = |vbs: Vec<VarBind>| {
        let n = vbs.len();
        Answer::Reply(pdu::response(h, error::NONE, 0, &vbs), Some(n))
    };
    match &p.request {
        Request::Get(_) | Request::GetNext(_) | Request::GetBulk { .. } if p.context.is_some() => {
            Answer::Reply(pdu::response(h, error::UNSUPPORTED_CONTEXT, 0, &[]), None)
        }
        Request::Get(ranges) => {
            let router = source();
            read(ranges.iter().map(|r| get(mib, &router, r)).collect())
        }
        Request::GetNext(ranges) => {
            let router = source();
            read(
                ranges
                    .iter()
                    .map(|r| next(mib, &router, &r.start, r.include, &r.end))
                    .collect(),
            )
        }
        Request::GetBulk {
            non_repeaters,
            max_repetitions,
            ranges,
        } => {
            let router = source();
            read(bulk(mib, &router, *non_repeaters, *max_repetitions, ranges))
        }
        // Read-only: the first varbind is not writable; the master then sends CleanupSet.
        Request::TestSet(n) => Answer::Reply(
            pdu::response(h, error::NOT_WRITABLE, u16::from(*n > 0), &[]),
            None,
        ),
        // Never reached after a refused TestSet; answered all the same: commitFailed (14),
        // undoFailed (15).
        Request::CommitSet => Answer::Reply(pdu::response(h, 14, 0, &[]), None),
        Request::UndoSet => Answer::Reply(pdu::response(h, 15, 0, &[]), None),
        // No response (RFC 2741 §7.2.4.4).
        Request::CleanupSet => Answer::Nothing,
        Request::Close(reason) => Answer::Closed(*reason),
        Request::Response { error, .. } if *error == error::NOT_OPEN => Answer::NotOpen,
        // A late answer to a ping already given up on, or to Close.
        Request::Response { .. } => Answer::Nothing,
        Request::Other(_) => Answer::Reply(pdu::response(h, error::PROCESSING_ERROR, 0, &[]), None),
    }
}

fn get(mib: &mut Mib, router: &Arc<Router>, range: &SearchRange) -> VarBind {
    let value = match mib.get(router, &range.start) {
        Found::Value(v) => v.into(),
        Found::NoSuchInstance => Value::NoSuchInstance,
        Found::NoSuchObject => Value::NoSuchObject,
    };
    VarBind {
        name: range.start.clone(),
        value,
    }
}

/// The first OID from `start` (itself if `include`) up to `end` (exclusive; empty: none).
fn next(mib: &mut Mib, router: &Arc<Router>, start: &[u32], include: bool, end: &[u32]) -> VarBind {
    let before_end = |oid: &[u32]| end.is_empty() || oid < end;
    if include && before_end(start) {
        if let Found::Value(v) = mib.get(router, start) {
            return VarBind {
                name: start.to_vec(),
                value: v.into(),
            };
        }
    }
    match mib.get_next(router, start) {
        Some((name, v)) if before_end(&name) => VarBind {
            name,
            value: v.into(),
        },
        _ => VarBind {
            name: start.to_vec(),
            value: Value::EndOfMibView,
        },
    }
}

/// GetBulk (RFC 2741 §7.2.3.3): the non-repeaters once, then rounds of the others, each
/// from where it last ended, until max-repetitions, every repeater's end of view, or
/// [`BULK_MAX_VARBINDS`].
fn bulk(
    mib: &mut Mib,
    router: &Arc<Router>,
    non_repeaters: u16,
    max_repetitions: u16,
    ranges: &[SearchRange],
) -> Vec<VarBind> {
    let split = usize::from(non_repeaters).min(ranges.len());
    let (once, repeated) = ranges.split_at(split);
    let mut vbs: Vec<VarBind> = once
        .iter()
        .map(|r| next(mib, router, &r.start, r.include, &r.end))
        .collect();
    let mut at: Vec<(Vec<u32>, bool)> = repeated
        .iter()
        .map(|r| (r.start.clone(), r.include))
        .collect();
    for _ in 0..max_repetitions {
        if repeated.is_empty() || vbs.len() + repeated.len() > BULK_MAX_VARBINDS {
            break;
        }
        let mut all_ended = true;
        for (r, (start, include)) in repeated.iter().zip(at.iter_mut()) {
            let vb = next(mib, router, start, *include, &r.end);
            all_ended &= vb.value == Value::EndOfMibView;
            start.clone_from(&vb.name);
            *include = false;
            vbs.push(vb);
        }
        if all_ended {
            break;
        }
    }
    vbs
}
