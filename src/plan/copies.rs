//! How many copies of a lattice's populations gpu-naive keeps when the user does not say: one
//! (the in-place AA scheme) where it measured at least as fast as two copies, or where only one
//! fits on the card; two otherwise.

use super::kernel::Kernel;
use crate::engine::Engine;
use crate::gpu::lbm::WORD_BYTES;
use crate::gpu::GpuInfo;
use crate::lbm::{LbmKernel, Storage};
use crate::memory::Footprint;
use crate::DType;

/// The storage scheme of a lattice plan and the reason the report gives for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Copies {
    /// One copy updated in place (AA pattern) instead of two.
    pub in_place: bool,
    /// Why, for the plan's report (`None` where the choice does not apply or was the user's).
    pub why: Option<&'static str>,
}

/// The planner's scheme for `kernel` on `engine`: in place on gpu-naive when the lattice is
/// closed on some axis (walls at its faces: the AA kernels measured 1.04× two copies in `f32`
/// and 1.06× in `f64` on the H200's 256³ cavity; 16-bit storage keeps two copies, see
/// [`SIXTEEN_BIT_WALLS`]), or when two copies exceed the card's memory; two copies when
/// periodic on every axis (in place 0.94× in `f32`, 0.89× in f16s, 0.87× in f16c on the 256³
/// box).
pub(super) fn choose(
    kernel: &Kernel,
    engine: Engine,
    dtype: DType,
    dims: [usize; 3],
    gpu: Option<&GpuInfo>,
) -> Copies {
    let none = Copies {
        in_place: false,
        why: None,
    };
    let Some(lattice) = kernel.lbm() else {
        return none;
    };
    if engine != Engine::GpuNaive {
        return none;
    }
    let (in_place, why) = if gpu.is_some_and(|g| !two_copies_fit(lattice, dtype, dims, g)) {
        (true, ONLY_ONE_FITS)
    } else if lattice.periodic.iter().all(|&p| p) {
        (false, NO_WALLS)
    } else if lattice.storage != Storage::Native {
        (false, SIXTEEN_BIT_WALLS)
    } else {
        (true, WALLS)
    };
    Copies {
        in_place,
        why: Some(why),
    }
}

const ONLY_ONE_FITS: &str = "two copies of the populations exceed the card's memory, one fits";
const NO_WALLS: &str = "periodic on every axis, where in place measured 0.87-0.94x two copies \
                        (H200, 256^3 box)";
/// Why a walled lattice in 16-bit storage keeps two copies.
const SIXTEEN_BIT_WALLS: &str = "in 16-bit storage in place measured 0.95x two copies in f16c \
                                 and 0.99x in f16s (H200, 256^3 cavity), 0.90x in f16s at \
                                 512^3";
const WALLS: &str = "walls at the closed faces, where in place measured 1.04-1.06x two copies \
                     (H200, 256^3 cavity); two copies instead for a lattice with an inlet or \
                     outlet on a closed face, which the AA kernels cannot run";

/// Whether two copies of `lattice`'s populations, its flags and node words fit in the card's
/// memory.
fn two_copies_fit(lattice: &LbmKernel, dtype: DType, dims: [usize; 3], gpu: &GpuInfo) -> bool {
    Footprint::lattice_stored(dtype, lattice.storage, 2, 1 + WORD_BYTES)
        .bytes(dims)
        .is_some_and(|b| b <= gpu.memory_bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stencil;

    fn lattice(periodic: [bool; 3], storage: Storage) -> Kernel {
        Kernel::Lbm(LbmKernel {
            periodic,
            forced: false,
            storage,
        })
    }

    fn in_place(kernel: &Kernel, dims: [usize; 3], gpu: &GpuInfo) -> bool {
        choose(kernel, Engine::GpuNaive, DType::F32, dims, Some(gpu)).in_place
    }

    #[test]
    fn walled_lattices_run_in_place_except_in_16_bit_storage() {
        let gpu = GpuInfo::h100_for_tests();
        let cube = [256; 3];
        for storage in Storage::ALL {
            let native = storage == Storage::Native;
            assert_eq!(in_place(&lattice([false; 3], storage), cube, &gpu), native);
            assert_eq!(
                in_place(&lattice([true, false, true], storage), cube, &gpu),
                native
            );
            assert!(!in_place(&lattice([true; 3], storage), cube, &gpu));
        }
    }

    #[test]
    fn a_lattice_too_large_for_two_copies_runs_in_place() {
        let gpu = GpuInfo::h100_for_tests();
        // 80 GB: two f32 copies of 1000³ nodes take 152 GB, one 76 GB; 700³ takes 52 GB.
        let periodic = lattice([true; 3], Storage::Native);
        assert!(in_place(&periodic, [1000; 3], &gpu));
        assert!(!in_place(&periodic, [700; 3], &gpu));
        let c = choose(
            &periodic,
            Engine::GpuNaive,
            DType::F32,
            [1000; 3],
            Some(&gpu),
        );
        assert_eq!(c.why, Some(ONLY_ONE_FITS));
    }

    #[test]
    fn other_engines_and_kernels_have_no_scheme() {
        let gpu = GpuInfo::h100_for_tests();
        let walled = lattice([false; 3], Storage::Native);
        for engine in [Engine::Naive, Engine::Blocked, Engine::Reference] {
            let c = choose(&walled, engine, DType::F32, [64; 3], Some(&gpu));
            assert_eq!((c.in_place, c.why), (false, None));
        }
        let star = Kernel::from(Stencil::seven_point(0.5, 0.1));
        let c = choose(&star, Engine::GpuNaive, DType::F32, [64; 3], Some(&gpu));
        assert_eq!((c.in_place, c.why), (false, None));
    }
}
