//! The naive lattice-Boltzmann engine: one parallel SIMD sweep over the lattice per time step
//! (rayon over z-planes, the row kernel inside). Every step reads and writes all 19 arrays, so
//! it runs at the memory bandwidth: the baseline the blocked engine is measured against.

use rayon::prelude::*;

use super::lanes::FlowReal;
use super::populations::Populations;
use super::rows::{FlowKernel, Level, NodeBytes, Row};
use crate::{Lane, SimdVec};

/// One sweep from `src` to `dst` (same layout): the shared, read-only state of the tasks.
struct Sweep<'a, T: FlowReal> {
    kernel: &'a FlowKernel<T>,
    src: Level<T>,
    dst: Level<T>,
    bytes: NodeBytes,
    dims: [usize; 3],
}

// SAFETY: `src` and the byte arrays are only read; each task writes only plane z of `dst`, and
// no two tasks have the same z. The buffers outlive the sweep (borrowed by `step`).
unsafe impl<T: FlowReal> Sync for Sweep<'_, T> {}

/// Advances every node one step from `src` into `dst` on the current rayon pool; returns false
/// if any value written is infinite or NaN. `periodic` and `bytes` describe the lattice.
pub(crate) fn step<T: FlowReal>(
    kernel: &FlowKernel<T>,
    src: &Populations<T>,
    periodic: [bool; 3],
    bytes: &NodeBytes,
    dst: &mut Populations<T>,
) -> bool {
    let layout = *src.layout();
    let sweep = Sweep {
        kernel,
        // The source level is never written through this pointer.
        src: Level::lattice(src.storage().as_ptr().cast_mut(), &layout, periodic),
        dst: Level::lattice(dst.storage_mut().as_mut_ptr(), &layout, periodic),
        bytes: *bytes,
        dims: layout.dims,
    };
    if kernel.forced() {
        sweep.run::<true>()
    } else {
        sweep.run::<false>()
    }
}

impl<T: FlowReal> Sweep<'_, T> {
    fn run<const FORCED: bool>(&self) -> bool {
        (0..self.dims[2])
            .into_par_iter()
            .map(|z| self.plane::<FORCED>(z))
            .reduce(|| true, |a, b| a & b)
    }

    fn plane<const FORCED: bool>(&self, z: usize) -> bool {
        let [nx, ny, _] = self.dims;
        let mut check = T::Simd::splat(T::zero());
        for y in 0..ny {
            let row = Row::new(&self.src, &self.dst, &self.bytes, y as isize, z as isize);
            // SAFETY: both levels are whole lattices (every row and column exists, neighbours
            // are mapped inside), the byte arrays are the lattice's, and row (y, z) of dst is
            // written by this task only and aliases no source.
            unsafe { self.kernel.row::<FORCED, true>(&row, 0, nx, &mut check) };
        }
        check.sum().is_finite()
    }
}
