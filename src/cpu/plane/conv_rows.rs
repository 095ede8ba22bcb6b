//! The convolution kernel: a group of `ROWS` output rows over a run of columns, computed with
//! register blocking: for each block of columns, `ROWS × XV` vector accumulators stay in
//! registers while every input row of the group is read once per tap column and feeds each
//! output row that reads it ([`Taps`]). With `ROWS = 1` it is a plain row of taps accumulated
//! (the naive engine, the separable row pass with one input row per output row); with `ROWS`
//! above 1 each loaded input vector feeds up to `ROWS` fused multiply-adds, so loads per output
//! fall from `kw·kh` to `kw·(kh + ROWS − 1) / ROWS`.
//!
//! Written once over the lane type (vector, one lane), the rows per group and the vectors per
//! block; the weights are scalars broadcast at each use (with AVX-512 the broadcast is part of
//! the FMA's memory operand), so only the accumulators and one loaded vector take registers.

use super::taps::{RowTaps, Taps, MAX_ROWS};
use crate::simd::{FlowLane, Isa, OneLane, Tracker, Vector};
use crate::{Lane, Real, SimdVec};

/// Accumulator chains per block. Two FMA units of four cycles' latency need eight independent
/// chains to stay busy; sixteen also halve the loop and weight-broadcast work per FMA. On one
/// thread of the 2-core AMD EPYC Zen 5 (`f32` 4096², blocked), 16 chains against 8 took
/// 9.4 against 10.1 ms for `dense:5x5`, 13.7 against 14.7 for `dense:7x7` and 39 against
/// 50 for `dense:15x15`, whose 225 taps then ran near two FMAs per cycle.
const CHAINS: usize = 16;

/// Vectors per block for groups of `rows` output rows: [`CHAINS`] accumulators in all.
pub(crate) const fn block_vectors(rows: usize) -> usize {
    let v = CHAINS / rows;
    if v == 0 {
        1
    } else {
        v
    }
}

/// One group: output rows `out[0 .. valid]` at columns `x0 .. x1` from the group's input rows
/// `inputs[r]` (`r` in `0 .. kh + ROWS − 1`, each indexable so that `inputs[r][x + i]` is the
/// value filter column `i` reads for output column `x`), folding the outputs into `check`.
/// Runs inside the level's entry ([`Isa::enter`]).
///
/// # Safety
/// Every input row with taps must be readable at `x0 + i .. x1 + i` for each of its tap
/// columns `i`; `out[k]` for `k < valid` writable at `x0 .. x1` and aliasing no input; `taps`
/// made for `ROWS` rows (`ROWS ≤ MAX_ROWS`, `XV = block_vectors(ROWS)`); the CPU runs `S`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn group<T: Real, S: Isa, const ROWS: usize, const XV: usize>(
    taps: &Taps<T>,
    inputs: &[*const T],
    out: &[*mut T; ROWS],
    valid: usize,
    x0: usize,
    x1: usize,
    check: &mut Tracker<T>,
) {
    type V<T, S> = Vector<T, S>;
    debug_assert_eq!((taps.rows, inputs.len()), (ROWS, taps.inputs.len()));
    let lanes = V::<T, S>::LANES;
    let block = XV * lanes;
    let mut acc: V<T, S> = check.get();
    let g = Group {
        taps,
        inputs,
        out,
        valid,
    };
    // SAFETY (whole body): every block lies inside x0 .. x1 (the overlapping last block
    // starts at x1 − width ≥ x0), which the caller's contract covers.
    unsafe {
        let mut x = x0;
        while x + block <= x1 {
            g.block::<V<T, S>, XV>(x, &mut acc);
            x += block;
        }
        if x < x1 {
            if x1 - x0 >= block {
                // Recompute the last full block; the overlap rewrites identical values.
                g.block::<V<T, S>, XV>(x1 - block, &mut acc);
            } else {
                while x + lanes <= x1 {
                    g.block::<V<T, S>, 1>(x, &mut acc);
                    x += lanes;
                }
                if x < x1 && x1 - x0 >= lanes {
                    g.block::<V<T, S>, 1>(x1 - lanes, &mut acc);
                } else {
                    for xs in x..x1 {
                        let mut one = <T::One<S> as crate::Lane>::splat(T::zero());
                        g.block::<T::One<S>, 1>(xs, &mut one);
                        acc = V::<T, S>::track_finite(acc, V::<T, S>::splat(one.get()));
                    }
                }
            }
        }
    }
    check.set(acc);
}

/// One group's operands (see [`group`]).
struct Group<'a, T, const ROWS: usize> {
    taps: &'a Taps<T>,
    inputs: &'a [*const T],
    out: &'a [*mut T; ROWS],
    valid: usize,
}

impl<T: Real, const ROWS: usize> Group<'_, T, ROWS> {
    /// `XV` lanes-wide vectors of every valid output row at columns `x ..`, stored and folded
    /// into `acc` (a finiteness tracker of lane type `L`).
    ///
    /// # Safety
    /// As for [`group`], for the columns `x .. x + XV·WIDTH`.
    #[inline(always)]
    unsafe fn block<L: FlowLane<Scalar = T>, const XV: usize>(&self, x: usize, check: &mut L) {
        let zero = L::splat(T::zero());
        let mut acc = [[zero; XV]; ROWS];
        for (r, t) in self.taps.inputs.iter().enumerate() {
            if t.len == 0 {
                continue;
            }
            let q = self.inputs[r].wrapping_add(x);
            // SAFETY: forwarded from the caller.
            unsafe {
                if ROWS == 1 {
                    feed::<T, L, ROWS, XV, 0, 1>(self.taps, t, q, &mut acc);
                } else {
                    by_span::<T, L, ROWS, XV>(self.taps, t, q, &mut acc);
                }
            }
        }
        for (k, row) in acc.iter().enumerate().take(self.valid.min(ROWS)) {
            for (v, &value) in row.iter().enumerate() {
                // SAFETY: output row k < valid is writable at x .. x + XV·WIDTH.
                unsafe { value.put(self.out[k].wrapping_add(x + v * L::WIDTH)) };
                *check = value.mul_add(L::splat(T::zero()), *check);
            }
        }
    }
}

/// [`feed`] for the run-time span `t.lo .. t.hi` of output rows, as constants so that the
/// accumulators stay in registers (one arm per span of up to [`MAX_ROWS`] rows).
///
/// # Safety
/// As for [`feed`].
#[inline(always)]
unsafe fn by_span<T: Real, L: FlowLane<Scalar = T>, const ROWS: usize, const XV: usize>(
    taps: &Taps<T>,
    t: &RowTaps,
    q: *const T,
    acc: &mut [[L; XV]; ROWS],
) {
    macro_rules! call {
        ($l:literal, $h:literal) => {
            // SAFETY: forwarded from the caller.
            unsafe { feed::<T, L, ROWS, XV, $l, $h>(taps, t, q, acc) }
        };
    }
    match (t.lo, t.hi) {
        (0, 1) => call!(0, 1),
        (0, 2) => call!(0, 2),
        (0, 3) => call!(0, 3),
        (0, 4) => call!(0, 4),
        (1, 2) => call!(1, 2),
        (1, 3) => call!(1, 3),
        (1, 4) => call!(1, 4),
        (2, 3) => call!(2, 3),
        (2, 4) => call!(2, 4),
        (3, 4) => call!(3, 4),
        (lo, hi) => unreachable!("taps feed output rows {lo}..{hi} of a group"),
    }
}
const _: () = assert!(
    MAX_ROWS == 4,
    "by_span lists the spans of MAX_ROWS = 4 rows"
);

/// Accumulates the taps `t` of one input row (`q[i]` the value tap column `i` reads for the
/// block's first column) into the accumulators of output rows `LO .. HI`.
///
/// # Safety
/// `q` readable at `i .. i + XV·WIDTH` for each tap column `i` of `t`.
#[inline(always)]
unsafe fn feed<
    T: Real,
    L: FlowLane<Scalar = T>,
    const ROWS: usize,
    const XV: usize,
    const LO: usize,
    const HI: usize,
>(
    taps: &Taps<T>,
    t: &RowTaps,
    q: *const T,
    acc: &mut [[L; XV]; ROWS],
) {
    let cols = &taps.cols[t.start..t.start + t.len];
    let weights = &taps.weights[t.start * MAX_ROWS..(t.start + t.len) * MAX_ROWS];
    for (&i, w) in cols.iter().zip(weights.chunks_exact(MAX_ROWS)) {
        for (v, lane) in (0..XV).map(|v| (v, v * L::WIDTH)) {
            // SAFETY: the caller guarantees q at i .. i + XV·WIDTH.
            let value = unsafe { L::load(q.wrapping_add(i + lane)) };
            for k in LO..HI.min(ROWS) {
                acc[k][v] = value.mul_add(L::splat(w[k]), acc[k][v]);
            }
        }
    }
}
