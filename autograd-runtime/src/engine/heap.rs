//! [`ReadyHeap`]: the ready vertices of a pass, the largest key on top, with the tie rule
//! of PyTorch's ready queue.
//!
//! PyTorch keeps ready nodes in a `std::priority_queue` ordered by sequence number alone,
//! so among equal keys (every leaf's `AccumulateGrad` has the same one, and nodes recorded
//! on different threads can share one) the order is whatever libstdc++'s `push_heap` and
//! `pop_heap` leave. The two are written out here step for step (`bits/stl_heap.h`:
//! `__push_heap`, `__adjust_heap`), so that the same pushes and pops give the same order
//! of equal keys as PyTorch's engine; a Rust `BinaryHeap` breaks ties its own way.

/// A binary max-heap of `(key, vertex index)`, compared by key only.
#[derive(Default)]
pub(super) struct ReadyHeap {
    items: Vec<(u64, u32)>,
}

impl ReadyHeap {
    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.items.clear();
    }

    /// `std::push_heap` on the vector with `item` appended.
    pub(super) fn push(&mut self, item: (u64, u32)) {
        self.items.push(item);
        let hole = self.items.len() - 1;
        self.sift_up(hole, 0, item);
    }

    /// `std::pop_heap` then `pop_back`: the top item.
    pub(super) fn pop(&mut self) -> Option<(u64, u32)> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.items[0], last);
        self.adjust(last);
        Some(top)
    }

    /// libstdc++'s `__push_heap`: moves the hole at `hole` up while its parent's key is
    /// smaller than `item`'s (not above `top`), then puts `item` there.
    fn sift_up(&mut self, mut hole: usize, top: usize, item: (u64, u32)) {
        while hole > top {
            let parent = (hole - 1) / 2;
            if self.items[parent].0 >= item.0 {
                break;
            }
            self.items[hole] = self.items[parent];
            hole = parent;
        }
        self.items[hole] = item;
    }

    /// libstdc++'s `__adjust_heap` from the root: the hole goes down to a leaf, always
    /// to the larger child (the right one when they are equal), and `item` (the old
    /// last element) is then sifted up from there.
    fn adjust(&mut self, item: (u64, u32)) {
        let len = self.items.len();
        let mut hole = 0;
        let mut child = 0;
        while child < (len - 1) / 2 {
            child = 2 * (child + 1);
            if self.items[child].0 < self.items[child - 1].0 {
                child -= 1;
            }
            self.items[hole] = self.items[child];
            hole = child;
        }
        if len.is_multiple_of(2) && child == (len - 2) / 2 {
            child = 2 * (child + 1);
            self.items[hole] = self.items[child - 1];
            hole = child - 1;
        }
        self.sift_up(hole, 0, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The orders libstdc++'s `std::priority_queue<std::pair<uint64_t, unsigned>>`
    /// with a key-only comparison pops, written down from a C++ run (g++ 12) of the same
    /// pushes and pops: equal keys come out neither first-in-first-out nor
    /// last-in-first-out.
    #[test]
    fn equal_keys_come_out_in_libstdcxx_order() {
        let mut h = ReadyHeap::default();
        for i in 0..6 {
            h.push((7, i));
        }
        h.push((9, 6));
        let order: Vec<u32> = std::iter::from_fn(|| h.pop().map(|(_, i)| i)).collect();
        assert_eq!(order, [6, 0, 5, 2, 4, 1, 3]);
        // Pushes and pops interleaved: a pop after every third push.
        let mut order = Vec::new();
        for (n, k) in [5, 5, 3, 5, 8, 5, 5, 3, 3, 5, 8, 5].into_iter().enumerate() {
            h.push((k, n as u32));
            if n % 3 == 2 {
                order.extend(h.pop().map(|(_, i)| i));
            }
        }
        order.extend(std::iter::from_fn(|| h.pop().map(|(_, i)| i)));
        assert_eq!(order, [0, 4, 3, 10, 9, 11, 5, 6, 1, 7, 8, 2]);
    }

    #[test]
    fn larger_keys_come_first() {
        let mut h = ReadyHeap::default();
        for (k, i) in [
            (3, 0),
            (10, 1),
            (1, 2),
            (7, 3),
            (10, 4),
            (0, 5),
            (u64::MAX, 6),
        ] {
            h.push((k, i));
        }
        let keys: Vec<u64> = std::iter::from_fn(|| h.pop().map(|(k, _)| k)).collect();
        assert_eq!(keys, [u64::MAX, 10, 10, 7, 3, 1, 0]);
        assert!(h.is_empty());
    }
}
