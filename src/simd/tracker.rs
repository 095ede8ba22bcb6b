//! [`Tracker`]: where the row kernels fold the finiteness of their outputs between rows.

use crate::real::{Real, SimdVec};

/// Most lanes of any vector type (16 `f32` at AVX-512).
const MAX_LANES: usize = 16;

/// A finiteness tracker the row kernels fold their outputs into ([`SimdVec::track_finite`]),
/// kept between rows as the lanes of a vector of any level: a row loads it into a register and
/// stores it back (one load and one store per row; a horizontal sum per row would cost a row of
/// a memory-bound sweep several percent).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct Tracker<T>([T; MAX_LANES]);

impl<T: Real> Tracker<T> {
    /// A tracker that has seen only finite values.
    pub(crate) fn new() -> Self {
        Tracker([T::zero(); MAX_LANES])
    }

    /// Whether every value folded in was finite.
    pub(crate) fn is_finite(&self) -> bool {
        self.0.iter().all(|v| v.is_finite())
    }

    /// The tracker as a vector of level `S`.
    #[inline(always)]
    pub(crate) fn get<V: SimdVec<Scalar = T>>(&self) -> V {
        // SAFETY: the array holds MAX_LANES >= V::LANES scalars.
        unsafe { V::load(self.0.as_ptr()) }
    }

    /// Stores `v` as the tracker.
    #[inline(always)]
    pub(crate) fn set<V: SimdVec<Scalar = T>>(&mut self, v: V) {
        // SAFETY: the array holds MAX_LANES >= V::LANES scalars.
        unsafe { v.store(self.0.as_mut_ptr()) }
    }
}
