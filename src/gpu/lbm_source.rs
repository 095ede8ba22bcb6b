//! Specialising the lattice-Boltzmann kernel source: the precision, periodicity, forcing and the
//! collision's relaxation constants (computed as `src/lbm/collide.rs` computes them) become
//! compile-time constants in front of the one templated CUDA source `kernels/lbm.cu`.

use crate::lbm::{Lattice, Physics, Storage, VELOCITIES, WEIGHTS};
use crate::Real;

/// The CUDA source of the lattice-Boltzmann kernels.
const LBM_CU: &str = include_str!("kernels/lbm.cu");

/// Resident 128-thread blocks per SM the `f64` two-copy step is compiled for (94 registers):
/// on the H200 (256³, 200 steps, median of 3) the cavity ran 11,429-11,433 MLUPS against 8,026
/// at the kernel's default of 8 (64 registers, 120 bytes spilled), 10,642 at 1 block, 10,646 at
/// 4 and 9,493 at 6, and the periodic box 12,826 against 8,087.
const F64_MIN_BLOCKS: usize = 5;

/// Whether the two-copy step loads the populations before testing the node's class
/// (`STENCIL35D_LBM_EARLY_LOADS=1`; for measurements: more registers, one memory latency less).
fn early_loads() -> bool {
    crate::tuning::Tuning::current()
        .gpu
        .lbm_early_loads
        .unwrap_or(false)
}

/// A brace list of `T` literals.
fn list<T: Real>(values: impl IntoIterator<Item = f64>) -> String {
    let items: Vec<String> = values
        .into_iter()
        .map(|v| T::of(v).cuda_literal())
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// The specialised source for `lat` as it stands: its physics, periodic axes, storage and
/// whether every node is bulk fluid (then the kernels read no class bytes); `lat` prepared
/// ([`Lattice::prepare`]). `long_launch`: a step takes several launches (`LONG_LAUNCH` in
/// `lbm.cu`).
pub(crate) fn lattice_source<T: Real>(lat: &Lattice<T>, long_launch: bool) -> String {
    let source = lbm_source::<T>(
        lat.physics(),
        lat.periodic(),
        lat.storage(),
        lat.classes().all_bulk,
    );
    match long_launch {
        true => format!("#define LONG_LAUNCH 1\n{source}"),
        false => source,
    }
}

/// The specialised source for `physics` on a lattice with these periodic axes, in `T`, with
/// populations held in `storage`; `all_bulk` when no node is a wall, inlet or outlet.
pub(crate) fn lbm_source<T: Real>(
    physics: &Physics,
    periodic: [bool; 3],
    storage: Storage,
    all_bulk: bool,
) -> String {
    let (wp, wm) = physics.rates();
    let force = physics.force;
    let w = [WEIGHTS[0], WEIGHTS[1], WEIGHTS[4]];
    let class = |k: usize| if k < 3 { 1 } else { 2 };
    let cf = |k: usize| -> f64 {
        let c = VELOCITIES[k + 1];
        (0..3).map(|a| c[a] as f64 * force[a]).sum()
    };
    let even = 1.0 - wp / 2.0;
    let odd = 1.0 - wm / 2.0;
    let lit = |v: f64| T::of(v).cuda_literal();
    let mut text = format!("#define REAL {}\n", T::CUDA_NAME);
    text += &format!("#define FORCED {}\n", physics.has_force() as u8);
    text += &format!("#define EARLY_LOADS {}\n", early_loads() as u8);
    text += &format!("#define STORAGE {}\n", storage.code());
    text += &format!("#define ALL_BULK {}\n", all_bulk as u8);
    let gpu = &crate::tuning::Tuning::current().gpu;
    // The two-copy step's resident blocks per SM: the kernel's own default (8) except in f64,
    // where 64 registers spill (see LBM_MIN_BLOCKS in lbm.cu).
    let min_blocks = gpu
        .lbm_min_blocks
        .or((T::DTYPE == crate::DType::F64).then_some(F64_MIN_BLOCKS));
    if let Some(n) = min_blocks {
        text += &format!("#define LBM_MIN_BLOCKS {n}\n");
    }
    if let Some(n) = gpu.lbm_aa_min_blocks {
        text += &format!("#define LBM_AA_MIN_BLOCKS {n}\n");
    }
    for (axis, p) in ["PX", "PY", "PZ"].iter().zip(periodic) {
        text += &format!("#define {axis} {}\n", p as u8);
    }
    text += &format!("#define WP {}\n", lit(wp));
    text += &format!("#define HALF_WP {}\n", lit(wp / 2.0));
    text += &format!("#define HALF_WM {}\n", lit(wm / 2.0));
    text += &format!("#define WP_W {}\n", list::<T>(w.map(|w| wp * w)));
    text += &format!("#define WM3_W {}\n", list::<T>(w.map(|w| 3.0 * wm * w)));
    text += &format!("#define HALF_FORCE {}\n", list::<T>(force.map(|f| f / 2.0)));
    text += &format!("#define FORCE {}\n", list::<T>(force));
    text += &format!("#define EVEN_W {}\n", list::<T>(w.map(|w| 3.0 * even * w)));
    text += &format!(
        "#define EVEN_C {}\n",
        list::<T>((0..9).map(|k| 9.0 * even * w[class(k)] * cf(k)))
    );
    text += &format!(
        "#define ODD_C {}\n",
        list::<T>((0..9).map(|k| 3.0 * odd * w[class(k)] * cf(k)))
    );
    text + LBM_CU
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::compile::test_support::{nvrtc_present, ptx_for_sm90};
    use crate::lbm::MAGIC_POISEUILLE;

    /// Every lattice-Boltzmann kernel variant compiles with NVRTC when NVRTC is installed, even
    /// without a GPU (PTX for sm_90): f32 and f64, BGK and TRT, with and without force, closed
    /// and periodic axes; each module holds the two-copy and both in-place (AA) kernels.
    #[test]
    fn nvrtc_compiles_every_lbm_variant() {
        if !nvrtc_present() {
            return;
        }
        let compile = |src: String, what: &str| {
            let (text, seconds) = ptx_for_sm90(src, what);
            for name in ["lbm_step", "lbm_aa_even", "lbm_aa_odd"] {
                assert!(text.contains(name), "{what}: {name} missing");
            }
            println!("{what}: {seconds:.2} s");
        };
        let physics = [
            Physics::bgk(0.8),
            Physics::trt(0.6, MAGIC_POISEUILLE),
            Physics::trt(0.7, 0.25).with_force([1e-5, -2e-6, 3e-6]),
            Physics::bgk(0.9).with_force([0.0, 1e-6, 0.0]),
        ];
        for (k, p) in physics.iter().enumerate() {
            let periodic = [k % 2 == 1, k >= 2, k == 3];
            compile(
                lbm_source::<f32>(p, periodic, Storage::Native, k == 0),
                &format!("f32 {p}"),
            );
            compile(
                lbm_source::<f64>(p, periodic, Storage::Native, k == 1),
                &format!("f64 {p}"),
            );
            let storage = [Storage::F16s, Storage::F16c][k % 2];
            compile(
                lbm_source::<f32>(p, periodic, storage, k >= 2),
                &format!("f32 {p} {storage}"),
            );
        }
    }

    #[test]
    fn sources_carry_the_constants() {
        let src = lbm_source::<f32>(
            &Physics::bgk(0.8),
            [true, false, true],
            Storage::F16c,
            false,
        );
        assert!(
            src.starts_with("#define REAL float\n#define FORCED 0\n#define EARLY_LOADS "),
            "{src}"
        );
        assert!(
            src.contains("#define PX 1\n#define PY 0\n#define PZ 1\n#define WP 1.25f\n"),
            "{src}"
        );
        let d = lbm_source::<f64>(
            &Physics::trt(0.6, 0.25).with_force([1e-5, 0.0, 0.0]),
            [false; 3],
            Storage::Native,
            true,
        );
        assert!(d.contains("#define REAL double") && d.contains("#define FORCED 1"));
        assert!(src.contains("#define STORAGE 2\n") && d.contains("#define STORAGE 0\n"));
        assert!(src.contains("#define ALL_BULK 0\n") && d.contains("#define ALL_BULK 1\n"));
        // f64's two-copy step is compiled for F64_MIN_BLOCKS, f32's for the kernel's default.
        assert!(d.contains(&format!("#define LBM_MIN_BLOCKS {F64_MIN_BLOCKS}\n")));
        let prelude = &src[..src.find("#define PX").expect("the axes are defined")];
        assert!(!prelude.contains("LBM_MIN_BLOCKS"), "{prelude}");
    }

    /// A lattice is all bulk while every node is fluid; one wall (or inlet) anywhere ends it.
    #[test]
    fn lattices_without_boundaries_read_no_class_bytes() {
        let source = |lat: &mut Lattice<f32>| {
            lat.prepare();
            lattice_source(lat, false)
        };
        let mut lat = Lattice::<f32>::new([5, 4, 3], Physics::bgk(0.8)).unwrap();
        assert!(source(&mut lat).contains("#define ALL_BULK 1\n"));
        lat.set_cell(4, 3, 2, crate::lbm::Cell::Wall).unwrap();
        assert!(source(&mut lat).contains("#define ALL_BULK 0\n"));
        lat.set_cell(4, 3, 2, crate::lbm::Cell::Fluid).unwrap();
        assert!(source(&mut lat).contains("#define ALL_BULK 1\n"));
        lat.set_cell(
            0,
            0,
            0,
            crate::lbm::Cell::Inlet {
                velocity: [0.01, 0.0, 0.0],
            },
        )
        .unwrap();
        assert!(source(&mut lat).contains("#define ALL_BULK 0\n"));
    }
}
