//! The naive lattice-Boltzmann engine: one parallel SIMD sweep over the lattice per time step
//! (rayon over z-planes, the row kernel inside). Every step reads and writes all 19 arrays, so
//! it runs at the memory bandwidth: the baseline the blocked engine is measured against.

use rayon::prelude::*;

use super::lattice::Lattice;
use super::populations::Populations;
use super::rows::{FlowKernel, Level, NodeBytes, Row};
use crate::simd::{Isa, Tracker};
use crate::{Real, Result};

/// One sweep from `src` to `dst` (same layout): the shared, read-only state of the tasks.
struct Sweep<'a, T: Real, S: Isa> {
    kernel: &'a FlowKernel<T, S>,
    src: Level<T>,
    dst: Level<T>,
    bytes: NodeBytes,
    dims: [usize; 3],
}

// SAFETY: `src` and the byte arrays are only read; each task writes only plane z of `dst`, and
// no two tasks have the same z. The buffers outlive the sweep (borrowed by `step`).
unsafe impl<T: Real, S: Isa> Sync for Sweep<'_, T, S> {}

/// Advances every node one step from `src` into `dst` on the current rayon pool; returns false
/// if any value written is infinite or NaN. `periodic` and `bytes` describe the lattice.
pub(crate) fn step<T: Real, S: Isa>(
    kernel: &FlowKernel<T, S>,
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

/// A lattice advanced on the calling thread alone, without rayon: the unit of work of the
/// lattice probes (`plan::compute`), which run one per pinned core: the compute probe with the
/// blocked engine's kernel ([`SerialLattice::new`]), the stream probe with the naive engine's
/// ([`SerialLattice::streaming`]).
pub(crate) struct SerialLattice<T: Real, S: Isa> {
    lattice: Lattice<T>,
    scratch: Populations<T>,
    kernel: FlowKernel<T, S>,
}

impl<T: Real, S: Isa> SerialLattice<T, S> {
    /// Takes `lattice` (its geometry fixed from now on), stepped with the blocked engine's
    /// kernel (the compute probe's: in cache, no output prefetch).
    pub(crate) fn new(lattice: Lattice<T>) -> Result<Self> {
        Self::with_kernel(lattice, FlowKernel::new)
    }

    /// Takes `lattice`, stepped with the naive engine's kernel ([`FlowKernel::streaming`]; the
    /// stream probe's, which measures naive sweeps from memory).
    pub(crate) fn streaming(lattice: Lattice<T>) -> Result<Self> {
        Self::with_kernel(lattice, FlowKernel::streaming)
    }

    /// Takes `lattice`, stepped with the kernel `make_kernel` builds for it.
    fn with_kernel(
        mut lattice: Lattice<T>,
        make_kernel: fn(&Lattice<T>) -> FlowKernel<T, S>,
    ) -> Result<Self> {
        lattice.prepare();
        let scratch = Populations::new(lattice.dims())?;
        let kernel = make_kernel(&lattice);
        Ok(SerialLattice {
            lattice,
            scratch,
            kernel,
        })
    }

    /// One step of every node; false if any value written is infinite or NaN.
    pub(crate) fn step(&mut self) -> bool {
        let lat = &self.lattice;
        let layout = *lat.pop.layout();
        let sweep = Sweep {
            kernel: &self.kernel,
            src: Level::lattice(lat.pop.storage().as_ptr().cast_mut(), &layout, lat.periodic),
            dst: Level::lattice(
                self.scratch.storage_mut().as_mut_ptr(),
                &layout,
                lat.periodic,
            ),
            bytes: NodeBytes::new(lat),
            dims: layout.dims,
        };
        let planes = 0..layout.dims[2];
        let finite = if self.kernel.forced() {
            planes
                .map(|z| sweep.plane::<true>(z))
                .fold(true, |a, b| a & b)
        } else {
            planes
                .map(|z| sweep.plane::<false>(z))
                .fold(true, |a, b| a & b)
        };
        self.lattice.pop.swap(&mut self.scratch);
        finite
    }

    /// The lattice's nodes.
    pub(crate) fn cells(&self) -> usize {
        self.lattice.cells()
    }
}

impl<T: Real, S: Isa> Sweep<'_, T, S> {
    fn run<const FORCED: bool>(&self) -> bool {
        (0..self.dims[2])
            .into_par_iter()
            .map(|z| self.plane::<FORCED>(z))
            .reduce(|| true, |a, b| a & b)
    }

    fn plane<const FORCED: bool>(&self, z: usize) -> bool {
        let [nx, ny, _] = self.dims;
        let mut check = Tracker::new();
        // SAFETY: the kernel's level was picked by `with_isa`, so the CPU has it. For each row:
        // both levels are whole lattices (every row and column exists, neighbours are mapped
        // inside), the byte arrays are the lattice's, and row (y, z) of dst is written by this
        // task only and aliases no source.
        unsafe {
            S::enter(
                #[inline(always)]
                || {
                    for y in 0..ny {
                        let row =
                            Row::new(&self.src, &self.dst, &self.bytes, y as isize, z as isize);
                        self.kernel
                            .row_at_level::<FORCED, true>(&row, 0, nx, &mut check);
                    }
                },
            )
        };
        check.is_finite()
    }
}
