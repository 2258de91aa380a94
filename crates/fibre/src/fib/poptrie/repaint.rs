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
    /// [`Repaint::node`] for a subtree's top node, at 0 of emptied scratch vectors, with the
    /// kept nodes sorted for [`Poptrie::place`]; returns the top node.
    pub(super) fn subtree<K: Bits>(
        mut self,
        old: Node,
        prefixes: &[(K, u8, u32)],
        off: u32,
        default: u32,
    ) -> Node {
        self.nodes.clear();
        self.leaves.clear();
        self.kept.clear();
        self.nodes.push(Node::default());
        self.node(old, prefixes, off, default, 0);
        self.kept.sort_unstable();
        self.nodes[0]
    }

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
        let pad = self.ar.leaves.pad();
        let (painted, first) = encode_own(
            self.nodes,
            (self.leaves, pad),
            prefixes,
            off,
            default,
            at,
            &mut slot,
        );
        // The slots a prefix below the changed one paints: as before the change.
        let (vector, deep) = (painted.vector, painted.painted);
        // `old`'s leaves and its children's cells: the node's cell is the caller's.
        retire_own(self.ar, old, self.retired);
        for (child, v, below) in children(prefixes, off, first) {
            if !old.has_child(v) {
                // A child `old` lacks (none when, as `Repaint` is used, the prefixes below
                // are those `old` was encoded from; it keeps the encoding sound regardless).
                encode_node(
                    self.nodes,
                    (self.leaves, pad),
                    below,
                    off + 6,
                    slot[v as usize],
                    child,
                );
            } else if deep & (1 << v) != 0 {
                self.nodes[child] = self.ar.nodes.get(old.child(v));
                self.kept.push(child as u32);
            } else {
                let was = self.ar.nodes.get(old.child(v));
                self.node(was, below, off + 6, slot[v as usize], child);
            }
        }
        // Children `old` had and the node no longer has (none either, as `Repaint` is used).
        let mut gone = old.vector & !vector;
        while gone != 0 {
            let v = gone.trailing_zeros();
            gone &= gone - 1;
            let was = self.ar.nodes.get(old.child(v));
            retire_below(self.ar, was, self.retired);
        }
    }
}
