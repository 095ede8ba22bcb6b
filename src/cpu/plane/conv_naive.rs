//! The naive convolution engine: bands of output rows shared out on the pool; each output row
//! is the filter's taps accumulated over full-width padded input rows ([`Window`]), SIMD over
//! x, one output row at a time (the kernel of [`super::conv_rows`] with groups of one row).
//! Every tap of every output row loads its input: `kw·kh` loads per output vector.

use super::conv_rows::{block_vectors, group};
use super::items::{for_each_item, piece, Shared};
use super::padded::Window;
use super::steps::run_steps;
use super::taps::Taps;
use crate::engine::Failure;
use crate::plane::Filter2;
use crate::simd::{with_isa, Isa, Level, Tracker, WithIsa};
use crate::{Grid, Real};

/// Output rows per work item.
const BAND_ROWS: usize = 16;

/// Applies `filter` `steps` times to `grid` with the naive engine at `level` on `pool`,
/// `scratch` the second buffer; `grid` ends with the newest finite state.
pub(crate) fn run<T: Real>(
    filter: &Filter2,
    level: Level,
    pool: &rayon::ThreadPool,
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
) -> Result<(), Failure> {
    with_isa(
        level,
        Naive {
            filter,
            pool,
            grid,
            scratch,
            steps,
        },
    )
}

/// [`run`] as a computation generic over the level.
struct Naive<'a, T: Real> {
    filter: &'a Filter2,
    pool: &'a rayon::ThreadPool,
    grid: &'a mut Grid<T>,
    scratch: &'a mut Grid<T>,
    steps: usize,
}

impl<T: Real> WithIsa for Naive<'_, T> {
    type Output = Result<(), Failure>;

    fn call<S: Isa>(self) -> Self::Output {
        let f = self.filter;
        let taps = Taps::new(f.size(), 1, |i, j| f.weight(i, j), T::of);
        let step = |src: &Grid<T>, dst: &mut Grid<T>| step::<T, S>(f, &taps, self.pool, src, dst);
        run_steps(self.grid, self.scratch, self.steps, 0, step)
    }
}

/// Rows a thread's window keeps: those a group of one output row reads, and one more.
fn scratch_slots(filter: &Filter2) -> usize {
    filter.size()[1] + 1
}

/// Elements of the window each thread of a pass on rows of `nx` allocates (see
/// [`Window::new`]).
pub(super) fn scratch_elems<T>(filter: &Filter2, nx: usize) -> usize {
    super::padded::window_elems::<T>(filter, nx, scratch_slots(filter))
}

/// One application of `filter` (laid out as `taps`, groups of one row) from `src` into `dst`
/// on `pool`; false if any output is infinite or NaN.
fn step<T: Real, S: Isa>(
    filter: &Filter2,
    taps: &Taps<T>,
    pool: &rayon::ThreadPool,
    src: &Grid<T>,
    dst: &mut Grid<T>,
) -> bool {
    let [nx, ny, _] = src.dims();
    let [_, kh] = filter.size();
    let ay = filter.anchor()[1] as isize;
    let pitch = dst.pitch();
    let out = Shared::new(dst.storage_mut().as_mut_ptr());
    let bands = ny.div_ceil(BAND_ROWS);
    for_each_item(
        pool,
        bands,
        || {
            let mut w = Window::new(src, filter, nx, scratch_slots(filter));
            w.set_columns(0..nx);
            w
        },
        |window, band| {
            let mut inputs = vec![std::ptr::null(); kh];
            let mut check = Tracker::new();
            for y in piece(0..ny, band, bands) {
                for (j, input) in inputs.iter_mut().enumerate() {
                    *input = window.row(y as isize + j as isize - ay);
                }
                let row = [out.get().wrapping_add(y * pitch)];
                // SAFETY: the inputs are readable at columns x + i for x < nx, i < kw (see
                // `Window::row`); output row y, columns 0 .. nx, belongs to this band alone
                // and aliases no input (dst is not src, the window's slots are its own); the
                // level is the one `with_isa` picked.
                unsafe {
                    S::enter(
                        #[inline(always)]
                        || {
                            group::<T, S, 1, { block_vectors(1) }>(
                                taps, &inputs, &row, 1, 0, nx, &mut check,
                            )
                        },
                    )
                };
            }
            check.is_finite()
        },
    )
}
