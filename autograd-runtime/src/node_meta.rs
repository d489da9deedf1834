//! [`NodeMeta`]: the shape and dtype of each forward output of a node (PyTorch's
//! `InputMetadata`), packed: one output whose shape fits in one word (up to four
//! dimensions: 53 bits for one, 26 each for two, 17 for three, 13 for four) and whose
//! dtype name is at most 255 bytes takes 16 bytes of the record (the dtype name's address,
//! and one word with the shape and the name's length) instead of 64 for a list of
//! [`TensorMeta`]. Every other case (no output, several, larger shapes) is a boxed list.
//! Measured on the chain bench: the backward and freeing passes wait on the records'
//! memory, and this was a sixth of a record (24 bytes until the dtype's length moved into
//! the shape's word).

use crate::mem::StrWord;
use crate::tensor::{Tensor, TensorMeta, same_dtype};

/// The metadata of a node's forward outputs (see the module documentation).
pub(crate) enum NodeMeta {
    /// Exactly one output: its dtype name, and its shape packed by [`pack`].
    One(StrWord),
    /// Anything else (boxed twice: one word, so that the enum is two).
    List(Box<Box<[Option<TensorMeta>]>>),
}

/// Bits per dimension for each rank, and the rank in the low 3 bits.
const WIDTH: [u32; 5] = [0, 53, 26, 17, 13];

/// Dimension `d` at position `i` of a rank-`rank` word, if it fits in its field.
#[inline(always)]
fn field(d: usize, rank: usize, i: u32) -> Option<u64> {
    let w = WIDTH[rank];
    let d = d as u64; // `usize` is at most 64 bits on every target Rust supports
    (d < 1 << w).then_some(d << (3 + w * i))
}

/// `shape` in one word (below `2^56`, for [`StrWord`]), if it fits. One arm per rank (a loop over
/// `WIDTH` cost about 30 instructions a call; the engine packs each gradient's shape to
/// validate it).
#[inline]
fn pack(shape: &[usize]) -> Option<u64> {
    match *shape {
        [] => Some(0),
        [a] => Some(1 | field(a, 1, 0)?),
        [a, b] => Some(2 | field(a, 2, 0)? | field(b, 2, 1)?),
        [a, b, c] => Some(3 | field(a, 3, 0)? | field(b, 3, 1)? | field(c, 3, 2)?),
        [a, b, c, d] => {
            Some(4 | field(a, 4, 0)? | field(b, 4, 1)? | field(c, 4, 2)? | field(d, 4, 3)?)
        }
        _ => None,
    }
}

/// The dimensions of a packed word, into `out` (at least 4 long); returns the rank.
fn unpack(word: u64, out: &mut [usize; 4]) -> usize {
    let rank = (word & 7) as usize;
    let w = WIDTH[rank];
    for (i, d) in out.iter_mut().take(rank).enumerate() {
        *d = ((word >> (3 + w * i as u32)) & ((1 << w) - 1)) as usize;
    }
    rank
}

impl NodeMeta {
    /// The metadata of `outputs`.
    #[inline]
    pub(crate) fn of<T: Tensor>(outputs: &[T]) -> Self {
        if let [t] = outputs
            && let Some(dims) = pack(t.shape())
            && let Some(w) = StrWord::new(t.dtype(), dims)
        {
            return NodeMeta::One(w);
        }
        NodeMeta::List(Box::new(
            outputs.iter().map(|t| Some(TensorMeta::of(t))).collect(),
        ))
    }

    /// The metadata of one output.
    pub(crate) fn one<T: Tensor>(t: &T) -> Self {
        Self::of(std::slice::from_ref(t))
    }

    /// Number of outputs.
    pub(crate) fn len(&self) -> usize {
        match self {
            NodeMeta::One(_) => 1,
            NodeMeta::List(l) => l.len(),
        }
    }

    /// Whether `t` has output `i`'s shape and dtype (`true` when nothing is recorded for it).
    #[inline]
    pub(crate) fn matches<T: Tensor>(&self, i: usize, t: &T) -> bool {
        match self {
            NodeMeta::One(w) if i == 0 => {
                let dtype = t.dtype();
                pack(t.shape()).and_then(|d| StrWord::word_of(dtype, d)) == Some(w.word())
                    && same_dtype(w.str(), dtype)
            }
            NodeMeta::One(_) => true,
            NodeMeta::List(l) => l
                .get(i)
                .and_then(Option::as_ref)
                .is_none_or(|m| m.shape() == t.shape() && same_dtype(m.dtype(), t.dtype())),
        }
    }

    /// Output `i`'s metadata, if recorded.
    pub(crate) fn get(&self, i: usize) -> Option<TensorMeta> {
        match self {
            NodeMeta::One(w) if i == 0 => {
                let mut d = [0; 4];
                let rank = unpack(w.value(), &mut d);
                Some(TensorMeta::new(&d[..rank], w.str()))
            }
            NodeMeta::One(_) => None,
            NodeMeta::List(l) => l.get(i).cloned().flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_pack_and_unpack_exactly_or_not_at_all() {
        let fits: [&[usize]; 7] = [
            &[],
            &[(1 << 53) - 1],
            &[3, (1 << 26) - 1],
            &[1, 2, (1 << 17) - 1],
            &[8191, 1, 0, 5],
            &[0],
            &[7, 7],
        ];
        for s in fits {
            let mut d = [0; 4];
            let r = unpack(pack(s).expect("fits"), &mut d);
            assert_eq!(&d[..r], s);
        }
        let too_big: [&[usize]; 4] = [
            &[1 << 53],
            &[1 << 26, 1],
            &[1, 1, 1 << 17],
            &[1, 2, 3, 4, 5],
        ];
        for s in too_big {
            assert_eq!(pack(s), None, "{s:?}");
        }
        // Different shapes never pack to the same word.
        assert_ne!(pack(&[2, 3]), pack(&[3, 2]));
        assert_ne!(pack(&[6]), pack(&[6, 1]));
        assert_eq!(std::mem::size_of::<NodeMeta>(), 16);
    }
}
