//! A covering prefix's change, re-encoded only where its id shows.
//!
//! When a prefix `p` that covers others is added, deleted or changes id, and no other prefix
//! under it changes in the same batch, the prefixes below its node are the ones the old
//! structure was encoded from: only the id pushed into the slots that nothing more specific
//! covers changes (`p`'s, or what covered `p`). A child whose slot a prefix longer than `p`
//! paints is answered by that prefix or longer ones throughout, and a fresh encoding gives
//! the same subtree: it is kept as it is, its cell copied, nothing below it touched or
//! retired. Only the nodes whose slots hold the changed id are encoded again. Before issue
//! 15's thirteenth round the whole subtree under `p` was encoded afresh: thousands of nodes
//! for 2409:8000::/20 in the IPv6 view.
use super::patch::{retire_below, retire_own};
use super::*;

/// Re-encoding under a changed covering prefix, into a [`Scratch`]'s nodes and leaves (a
/// subtree's top node at 0), with the old blocks it replaces retired.
pub(super) struct Repaint<'a> {
    pub(super) ar: &'a Arenas,
    pub(super) nodes: &'a mut Vec<Node>,
    pub(super) leaves: &'a mut Vec<u32>,
    /// Scratch nodes that are old cells kept as they are (see [`Scratch::kept`]).
    pub(super) kept: &'a mut Vec<u32>,
    pub(super) retired: &'a mut Vec<Block>,
}

impl Repaint<'_> {
    /// Encodes at `at` the node that replaces `old`, covering bits `off..off + 6` of
    /// `prefixes` (every one longer than `off`, in trie order, the ones `old` was encoded
    /// from), whose default `default` may differ from `old`'s. A child under a slot one of
    /// `prefixes` paints is `old`'s, kept whole; a child under a default slot is re-encoded
    /// over `old`'s the same way; a child `old` lacks is encoded afresh. Retires `old`'s own
    /// blocks and what its children that are not kept reached.
    pub(super) fn node<K: Bits>(
        &mut self,
        old: Node,
        prefixes: &[(K, u8, u32)],
        off: u32,
        default: u32,
        at: usize,
    ) {
        let mut slot = [0; 64];
        let Painted { vector, edges, own } = paint(prefixes, off, default, &mut slot);
        let base0 = self.leaves.len() as u32;
        let leafvec = leaf_runs(&slot, vector, edges, |id| self.leaves.push(id));
        let base1 = self.nodes.len() as u32;
        self.nodes.resize(
            self.nodes.len() + vector.count_ones() as usize,
            Node::default(),
        );
        self.nodes[at] = Node {
            vector,
            leafvec,
            base0,
            base1,
        };
        // `old`'s leaves and its children's cells: the node's cell is the caller's.
        retire_own(old, self.retired);
        // Each child's prefixes are contiguous in trie order, slots ascending.
        let mut child = base1 as usize;
        let mut rest = prefixes;
        while let Some(start) = rest.iter().position(|p| p.1 as u32 > off + 6) {
            let v = stride(rest[start].0, off);
            let end = rest[start..]
                .iter()
                .position(|p| stride(p.0, off) != v)
                .map_or(rest.len(), |e| start + e);
            let below = &rest[start..end];
            if !old.has_child(v) {
                encode_node(
                    self.nodes,
                    self.leaves,
                    below,
                    off + 6,
                    slot[v as usize],
                    child,
                );
            } else if own & (1 << v) != 0 {
                self.nodes[child] = self.ar.nodes.get(old.child(v));
                self.kept.push(child as u32);
            } else {
                let was = self.ar.nodes.get(old.child(v));
                self.node(was, below, off + 6, slot[v as usize], child);
            }
            child += 1;
            rest = &rest[end..];
        }
        // Children `old` had and the node no longer has (none when, as `Repaint` is used,
        // the prefixes below are those `old` was encoded from).
        let mut gone = old.vector & !vector;
        while gone != 0 {
            let v = gone.trailing_zeros();
            gone &= gone - 1;
            let was = self.ar.nodes.get(old.child(v));
            retire_below(self.ar, was, self.retired);
        }
    }
}
