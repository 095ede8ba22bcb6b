//! The wave engines (naive and blocked) against the scalar reference through the public API,
//! on random initial fields with sources and receivers: every space order 2-8, absorbing
//! layers on every face, a free surface on top, rigid faces, and no layers at all; odd sizes and a grid with
//! a single updated cell per axis beyond the layers; every dim_t 1..=6 the planner may pick,
//! with boxes that cut the grid in x, y and z and with whole planes, step counts that are not
//! multiples of dim_t; 1 and 2 threads; f32 and f64. The reference is FMA-free scalar code,
//! so the tolerance is f32 1e-5 and f64 1e-12 relative (max norm over the field), a few ulps
//! per step; naive and blocked share their row kernels and agree bit for bit.

mod common;

use common::tolerance;
use stencil35d::wave::test_shot::{diff, random_shot as field, same};
use stencil35d::wave::{Face, WaveKernel, Wavefield};
use stencil35d::{Engine, PlanBuilder, Real, Solver};

/// Engine settings of one run.
#[derive(Clone, Copy, Debug)]
struct Setup {
    engine: Engine,
    dim_t: usize,
    tile: Option<[usize; 2]>,
    z_chunks: Option<usize>,
    threads: usize,
}

const REFERENCE: Setup = Setup {
    engine: Engine::Reference,
    dim_t: 1,
    tile: None,
    z_chunks: None,
    threads: 1,
};

fn run<T: Real>(input: &Wavefield<T>, setup: Setup, steps: usize) -> Wavefield<T> {
    let mut b = PlanBuilder::new(input.kernel().clone(), T::DTYPE, input.dims())
        .engine(setup.engine)
        .threads(setup.threads);
    if setup.engine == Engine::Blocked {
        b = b.dim_t(setup.dim_t);
        if let Some(t) = setup.tile {
            b = b.tile(t);
        }
        if let Some(n) = setup.z_chunks {
            b = b.z_chunks(n);
        }
    }
    let plan = b.build().unwrap_or_else(|e| panic!("{setup:?}: {e}"));
    let mut f = input.clone();
    Solver::new(plan)
        .run(&mut f, steps)
        .unwrap_or_else(|e| panic!("{setup:?}: {e}"));
    f
}

/// Every engine setting against the reference on one kernel and size.
fn check_all<T: Real>(kernel: WaveKernel, dims: [usize; 3], steps: usize) {
    let input = field::<T>(kernel.clone(), dims, 7);
    let reference = run(&input, REFERENCE, steps);
    let tol = tolerance::<T>();
    let naive = |threads| Setup {
        engine: Engine::Naive,
        threads,
        ..REFERENCE
    };
    let base = run(&input, naive(1), steps);
    let d = diff(&base, &reference);
    assert!(d <= tol, "{kernel} {dims:?} naive: {d:e}");
    // The parallel sweep over planes computes each cell as one thread does.
    let parallel = run(&input, naive(2), steps);
    assert!(
        same(&parallel, &base),
        "{kernel} {dims:?} naive on 2 threads: differs from 1 thread by {:e}",
        diff(&parallel, &base)
    );
    // A rigid face runs one step per pass.
    let deepest = if kernel.has_rigid_faces() { 1 } else { 6 };
    for threads in [1, 2] {
        for dim_t in 1..=deepest {
            for (tile, z_chunks) in [
                (None, None),
                (Some([7, 5]), Some(3)),
                (Some([64, 9]), Some(1)),
            ] {
                let setup = Setup {
                    engine: Engine::Blocked,
                    dim_t,
                    tile,
                    z_chunks,
                    threads,
                };
                let got = run(&input, setup, steps);
                assert!(
                    same(&got, &base),
                    "{kernel} {dims:?} {setup:?}: differs from naive by {:e}",
                    diff(&got, &base)
                );
            }
        }
    }
}

fn kernel(order: usize, pml: usize) -> WaveKernel {
    let mut k = WaveKernel::new(10.0, 1e-3, 2500.0)
        .with_order(order)
        .with_pml(pml);
    k.spacing = [10.0, 12.0, 9.0];
    k
}

#[test]
fn every_order_with_absorbing_layers_matches_the_reference_f32() {
    for order in [2, 4, 6, 8] {
        let r = order / 2;
        check_all::<f32>(kernel(order, r + 4), [23 + r, 19, 21], 11);
    }
}

#[test]
fn every_order_with_absorbing_layers_matches_the_reference_f64() {
    for order in [2, 4, 6, 8] {
        let r = order / 2;
        check_all::<f64>(kernel(order, r + 4), [21, 20 + r, 17 + 2 * r], 9);
    }
}

#[test]
fn a_free_surface_and_no_layers_match_the_reference() {
    check_all::<f32>(kernel(8, 8).with_free_surface(), [22, 21, 20], 10);
    let mut free = kernel(4, 3);
    free.faces = [[Face::Free; 2]; 3];
    check_all::<f64>(free, [13, 12, 11], 10);
}

#[test]
fn rigid_faces_match_the_reference() {
    let k = kernel(8, 8)
        .with_face(2, 0, Face::Rigid)
        .with_face(0, 1, Face::Rigid)
        .with_face(1, 0, Face::Rigid);
    check_all::<f32>(k, [23, 21, 20], 10);
    // A closed box: rigid on every face, no layers.
    let mut closed = kernel(4, 3);
    closed.faces = [[Face::Rigid; 2]; 3];
    check_all::<f64>(closed, [13, 12, 11], 10);
}

#[test]
fn tiny_grids_with_one_cell_beyond_the_layers_match_the_reference() {
    // The narrowest layers (R + 4 cells) on both sides of 2R + 9 cells leave one inner cell
    // per axis.
    check_all::<f32>(kernel(8, 8), [17, 17, 17], 7);
    check_all::<f64>(kernel(2, 5), [11, 11, 11], 7);
}
