//! Keeping a `Vec`'s allocation across calls whose element types differ only
//! in a lifetime (the engine's per-thread buffers).

/// Empties `v` without running its elements' destructors (they are leaked),
/// in constant time; the capacity stays.
///
/// For a caller that knows no element needs dropping (the engine's vertex
/// states once every gradient buffer was taken): then it only skips a walk
/// over the elements. It is memory-safe for any `X`, since leaking is.
#[inline]
pub(crate) fn forget_elements<X>(v: &mut Vec<X>) {
    // SAFETY: `0 <= capacity`, and there are no elements in `0..0` that would
    // have to be initialised; the elements beyond are never read or dropped
    // again (leaked), which is sound.
    unsafe { v.set_len(0) };
}

/// An empty vector with the allocation of the empty vector `v`, for an
/// element type of the same size and alignment (`VState<'a, T>` to
/// `VState<'b, T>`).
///
/// # Panics
/// If `v` is not empty.
pub(crate) fn recycle<A, B>(v: Vec<A>) -> Vec<B> {
    const {
        assert!(size_of::<A>() == size_of::<B>() && align_of::<A>() == align_of::<B>());
    }
    assert!(v.is_empty());
    if size_of::<A>() == 0 {
        return Vec::new();
    }
    let mut v = std::mem::ManuallyDrop::new(v);
    let cap = v.capacity();
    // SAFETY: the pointer, length and capacity come from a `Vec<A>` that is
    // not used again (`ManuallyDrop`): the memory was allocated by the global
    // allocator (or is dangling with `cap == 0`) for `cap` values of `A`,
    // which is `cap` values of `B` with the same alignment (asserted above;
    // `A` is not zero-sized); the length is 0, so no value of `B` has to be
    // initialised.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<B>(), 0, cap) }
}
