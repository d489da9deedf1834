//! [`OptList`]: a small vector of optional values with inline storage.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// A vector of `Option<X>` that stores up to `N` entries inline (no heap
/// allocation) and spills to a `Vec` beyond that.
///
/// The engine passes gradients around as [`VariableList`](crate::VariableList)
/// (`OptList<Variable<T>, 2>`): most ops have one or two inputs and outputs,
/// so a backward step allocates no list at all. It dereferences to a slice
/// `[Option<X>]`, so indexing, `iter()`, `len()` and `get()` work as on a `Vec`;
/// it can be built with [`variable_list!`](crate::variable_list), `collect()`,
/// [`push`](Self::push) or `From<Vec<Option<X>>>`.
pub struct OptList<X, const N: usize> {
    repr: Repr<X, N>,
}

enum Repr<X, const N: usize> {
    Inline { len: u8, items: [Option<X>; N] },
    Heap(Vec<Option<X>>),
}

impl<X, const N: usize> OptList<X, N> {
    /// A list of the `K` given entries (inline when `K <= N`).
    #[inline]
    pub fn from_array<const K: usize>(items: [Option<X>; K]) -> Self {
        if K <= N && N < 256 {
            let mut it = items.into_iter();
            OptList {
                repr: Repr::Inline {
                    len: K as u8,
                    items: std::array::from_fn(|_| it.next().flatten()),
                },
            }
        } else {
            OptList {
                repr: Repr::Heap(items.into()),
            }
        }
    }

    /// An empty list.
    #[inline]
    pub fn new() -> Self {
        OptList {
            repr: Repr::Inline {
                len: 0,
                items: std::array::from_fn(|_| None),
            },
        }
    }

    /// A list of `len` `None` entries.
    #[inline]
    pub fn with_len(len: usize) -> Self {
        if len <= N && N < 256 {
            OptList {
                repr: Repr::Inline {
                    len: len as u8,
                    items: std::array::from_fn(|_| None),
                },
            }
        } else {
            OptList {
                repr: Repr::Heap((0..len).map(|_| None).collect()),
            }
        }
    }

    /// Makes an empty list `len` entries of `None` without dropping anything
    /// (unused inline slots are always `None`).
    #[inline]
    pub(crate) fn set_none_len(&mut self, len: usize) {
        debug_assert!(self.is_empty());
        match &mut self.repr {
            Repr::Inline { len: l, .. } if len <= N && N < 256 => *l = len as u8,
            _ => *self = Self::with_len(len),
        }
    }

    /// Appends an entry.
    #[inline]
    pub fn push(&mut self, x: Option<X>) {
        if let Repr::Inline { len, items } = &mut self.repr
            && let Some(slot) = items.get_mut(*len as usize)
        {
            // An unused slot is `None` (the type's invariant): nothing to drop. Measured on
            // the chain bench: the drop of the old value kept `push` out of line, about 28
            // instructions a node's gradient.
            std::mem::forget(std::mem::replace(slot, x));
            *len += 1;
            return;
        }
        self.push_slow(x);
    }

    /// [`push`](Self::push) to a full inline list (which spills) or a spilled one.
    #[cold]
    #[inline(never)]
    fn push_slow(&mut self, x: Option<X>) {
        if let Repr::Inline { items, .. } = &mut self.repr {
            let mut v = Vec::with_capacity(N * 2 + 1);
            v.extend(items.iter_mut().map(Option::take));
            self.repr = Repr::Heap(v);
        }
        if let Repr::Heap(v) = &mut self.repr {
            v.push(x);
        }
    }

    /// Drops every entry and makes the list `len` entries of `None` (an inline list stays
    /// inline; a spilled one is freed unless `len` needs it).
    #[inline]
    pub fn reset(&mut self, len: usize) {
        match &mut self.repr {
            Repr::Inline { len: l, items } if len <= N && N < 256 => {
                // All `N` slots, not the first `len`: unused ones are `None` already, and a
                // loop of constant length unrolls (the engine resets two lists per node;
                // the loop over `len` entries was about 20 instructions each).
                for x in items.iter_mut() {
                    *x = None;
                }
                *l = len as u8;
            }
            _ => *self = Self::with_len(len),
        }
    }

    /// Takes entry `i` out, leaving `None` (and `None` if out of range).
    #[inline]
    pub fn take(&mut self, i: usize) -> Option<X> {
        self.get_mut(i).and_then(Option::take)
    }

    /// Converts into a `Vec`.
    pub fn into_vec(self) -> Vec<Option<X>> {
        self.into_iter().collect()
    }
}

impl<X, const N: usize> Default for OptList<X, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<X, const N: usize> Deref for OptList<X, N> {
    type Target = [Option<X>];
    #[inline]
    fn deref(&self) -> &[Option<X>] {
        match &self.repr {
            Repr::Inline { len, items } => &items[..*len as usize],
            Repr::Heap(v) => v,
        }
    }
}

impl<X, const N: usize> DerefMut for OptList<X, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Option<X>] {
        match &mut self.repr {
            Repr::Inline { len, items } => &mut items[..*len as usize],
            Repr::Heap(v) => v,
        }
    }
}

impl<X: Clone, const N: usize> Clone for OptList<X, N> {
    fn clone(&self) -> Self {
        self.iter().cloned().collect()
    }
}

impl<X: fmt::Debug, const N: usize> fmt::Debug for OptList<X, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<X, const N: usize> FromIterator<Option<X>> for OptList<X, N> {
    fn from_iter<I: IntoIterator<Item = Option<X>>>(iter: I) -> Self {
        let mut l = Self::new();
        for x in iter {
            l.push(x);
        }
        l
    }
}

impl<X, const N: usize> From<Vec<Option<X>>> for OptList<X, N> {
    fn from(v: Vec<Option<X>>) -> Self {
        if v.len() <= N {
            v.into_iter().collect()
        } else {
            OptList {
                repr: Repr::Heap(v),
            }
        }
    }
}

impl<X, const N: usize> From<OptList<X, N>> for Vec<Option<X>> {
    fn from(l: OptList<X, N>) -> Self {
        l.into_vec()
    }
}

/// Owning iterator of an [`OptList`].
pub struct IntoIter<X, const N: usize>(IterRepr<X, N>);

enum IterRepr<X, const N: usize> {
    Inline(std::iter::Take<std::array::IntoIter<Option<X>, N>>),
    Heap(std::vec::IntoIter<Option<X>>),
}

impl<X, const N: usize> Iterator for IntoIter<X, N> {
    type Item = Option<X>;
    fn next(&mut self) -> Option<Option<X>> {
        match &mut self.0 {
            IterRepr::Inline(it) => it.next(),
            IterRepr::Heap(it) => it.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Inline(it) => it.size_hint(),
            IterRepr::Heap(it) => it.size_hint(),
        }
    }
}

impl<X, const N: usize> ExactSizeIterator for IntoIter<X, N> {}

impl<X, const N: usize> IntoIterator for OptList<X, N> {
    type Item = Option<X>;
    type IntoIter = IntoIter<X, N>;
    fn into_iter(self) -> IntoIter<X, N> {
        IntoIter(match self.repr {
            Repr::Inline { len, items } => IterRepr::Inline(items.into_iter().take(len as usize)),
            Repr::Heap(v) => IterRepr::Heap(v.into_iter()),
        })
    }
}

impl<'a, X, const N: usize> IntoIterator for &'a OptList<X, N> {
    type Item = &'a Option<X>;
    type IntoIter = std::slice::Iter<'a, Option<X>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, X, const N: usize> IntoIterator for &'a mut OptList<X, N> {
    type Item = &'a mut Option<X>;
    type IntoIter = std::slice::IterMut<'a, Option<X>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// Builds a [`VariableList`](crate::VariableList) from `Option<Variable<T>>`
/// expressions, like `vec!`: `variable_list![Some(g), None]`.
#[macro_export]
macro_rules! variable_list {
    () => { $crate::VariableList::new() };
    ($($x:expr),+ $(,)?) => {
        $crate::VariableList::from_array([$($x),+])
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_then_spill() {
        let mut l: OptList<u32, 2> = OptList::new();
        assert!(l.is_empty());
        l.push(Some(1));
        l.push(None);
        assert_eq!(&l[..], &[Some(1), None]);
        l.push(Some(3));
        assert_eq!(l.len(), 3);
        assert_eq!(l.take(2), Some(3));
        assert_eq!(l.clone().into_vec(), vec![Some(1), None, None]);
        let w: OptList<u32, 2> = OptList::with_len(5);
        assert_eq!(w.len(), 5);
        let v: OptList<u32, 2> = vec![Some(1)].into();
        assert_eq!(v.into_iter().collect::<Vec<_>>(), vec![Some(1)]);
        assert_eq!(
            format!("{:?}", OptList::<u8, 1>::from(vec![Some(1u8), None])),
            "[Some(1), None]"
        );
    }

    #[test]
    fn reset_drops_each_entry_once_and_leaves_the_unused_slots_empty() {
        use std::rc::Rc;
        let x = Rc::new(());
        let mut l: OptList<Rc<()>, 2> = OptList::new();
        l.push(Some(x.clone()));
        l.push(Some(x.clone()));
        assert_eq!(Rc::strong_count(&x), 3);
        l.reset(1);
        assert_eq!(Rc::strong_count(&x), 1);
        assert_eq!(l.len(), 1);
        assert!(l[0].is_none());
        // Growing back shows `None`s, not the dropped entries.
        l.reset(2);
        assert!(l.iter().all(Option::is_none));
        l.reset(0);
        l.set_none_len(2);
        assert!(l.iter().all(Option::is_none));
        // A spilled list goes back inline.
        let mut s: OptList<Rc<()>, 2> = OptList::with_len(3);
        s[2] = Some(x.clone());
        s.reset(1);
        assert_eq!((s.len(), Rc::strong_count(&x)), (1, 1));
    }
}
