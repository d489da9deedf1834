//! [`StrWord`]: a `&'static str` and a 56-bit value in two words (the string's address,
//! and one word holding the value and the string's length), for the model's `NodeMeta`
//! (`node_meta.rs`): a node output's dtype and packed shape in 16 bytes of every record
//! instead of 24.

use std::ptr::NonNull;

/// A `&'static str` of at most 255 bytes and a value below `2^56` (see the module
/// documentation). The fields are private: only [`StrWord::new`] pairs an address with a
/// length, so [`StrWord::str`] always rebuilds the string it was given.
#[derive(Clone, Copy)]
pub(crate) struct StrWord {
    ptr: NonNull<u8>,
    /// The value, and the string's length in the top byte ([`LEN_SHIFT`]).
    word: u64,
}

// SAFETY: a `StrWord` is a `&'static str` (its address and length) and a number: the
// string's bytes are never written, so sending it is sending a `&'static str`.
unsafe impl Send for StrWord {}
// SAFETY: as for `Send`.
unsafe impl Sync for StrWord {}

/// Where the string's length sits in the word; the value has the bits below.
const LEN_SHIFT: u32 = 56;

impl StrWord {
    /// `s` and `value`, if `s` is at most 255 bytes long and `value` below `2^56`.
    #[inline]
    pub(crate) fn new(s: &'static str, value: u64) -> Option<Self> {
        Some(StrWord {
            ptr: NonNull::from(s.as_bytes()).cast(),
            word: Self::word_of(s, value)?,
        })
    }

    /// The word a `StrWord` of `s` and `value` holds (equal words: equal values and
    /// lengths), without building one; `None` where [`new`](Self::new) gives `None`.
    #[inline]
    pub(crate) fn word_of(s: &'static str, value: u64) -> Option<u64> {
        let len = u8::try_from(s.len()).ok()?;
        (value >> LEN_SHIFT == 0).then_some(value | u64::from(len) << LEN_SHIFT)
    }

    /// The value and the string's length in one word (see [`word_of`](Self::word_of)).
    #[inline]
    pub(crate) fn word(&self) -> u64 {
        self.word
    }

    /// The value.
    #[inline]
    pub(crate) fn value(&self) -> u64 {
        self.word & ((1 << LEN_SHIFT) - 1)
    }

    /// The string.
    #[inline]
    pub(crate) fn str(&self) -> &'static str {
        let len = (self.word >> LEN_SHIFT) as usize;
        // SAFETY: `ptr` and the length were taken from one `&'static str` in `new` (the
        // fields are private and never changed): its bytes, valid UTF-8 that stays
        // allocated and unchanged for the rest of the program.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.ptr.as_ptr(), len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::StrWord;

    #[test]
    fn the_string_and_value_come_back_whole_or_do_not_fit() {
        static LONG: [u8; 256] = [b'x'; 256];
        let long = std::str::from_utf8(&LONG).unwrap();
        for s in ["f32", "", "float64", &long[..255]] {
            for value in [0, 1, (1 << 56) - 1] {
                let w = StrWord::new(s, value).expect("fits");
                assert_eq!((w.str(), w.value()), (s, value));
                assert_eq!(StrWord::word_of(s, value), Some(w.word()));
            }
        }
        assert!(StrWord::new(long, 0).is_none());
        assert!(StrWord::new("f32", 1 << 56).is_none());
        // The same value with strings of other lengths never gives the same word.
        assert_ne!(StrWord::word_of("f32", 2), StrWord::word_of("f3", 2));
    }
}
