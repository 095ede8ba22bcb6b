//! The wave equation's physics: in a homogeneous medium the direct wave arrives at `r/v`
//! (within one sample) with the amplitude of the 3D Green's function, `s(t − r/v)/(4πv²r)`,
//! so its decay follows 1/r (within 2%); the absorbing layers reflect less than 1% of the
//! amplitude at normal incidence and less than 5% at 45°, measured as the difference to the
//! same run in a domain large enough that nothing returns in time, corrected for the longer
//! path of the reflection. A rigid face reflects as a mirror: a shot beside it equals, cell for
//! cell, the shot and its mirror image in a domain twice as deep.

use stencil35d::wave::{Face, Receiver, Source, WaveKernel, Wavefield, Wavelet};
use stencil35d::{Grid, Plan, Solver};

const V: f64 = 2000.0;
const H: f64 = 10.0;
const DT: f64 = 1e-3;
const FREQ: f64 = 15.0;

/// Runs one shot on a homogeneous model of `dims` with the source at cell `src` and
/// receivers at cells `recs`; returns the traces.
fn shot(dims: [usize; 3], src: [f64; 3], recs: &[[f64; 3]], steps: usize) -> Vec<Vec<f64>> {
    let velocity = Grid::<f32>::from_fn(dims, |_, _, _| V as f32).unwrap();
    let kernel = WaveKernel::new(H, DT, V);
    let mut field = Wavefield::new(kernel, &velocity).unwrap();
    field
        .add_source(Source {
            position: src.map(|c| c * H),
            wavelet: Wavelet::ricker(FREQ),
        })
        .unwrap();
    let receivers: Vec<Receiver> = recs
        .iter()
        .map(|c| Receiver::at(c.map(|v| v * H)))
        .collect();
    field.add_receivers(&receivers).unwrap();
    let plan = Plan::for_wavefield(&field).unwrap();
    Solver::new(plan).run(&mut field, steps).unwrap();
    field.traces().to_vec()
}

/// Time and value of a trace's largest magnitude, the time refined by a parabola through the
/// three samples around it.
fn peak(trace: &[f64]) -> (f64, f64) {
    let (i, _) = trace
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .unwrap();
    let (a, b, c) = (trace[i - 1], trace[i], trace[i + 1]);
    let shift = 0.5 * (a - c) / (a - 2.0 * b + c);
    (((i as f64) + shift) * DT, b)
}

#[test]
fn the_direct_wave_arrives_at_r_over_v_and_decays_as_one_over_r() {
    let dims = [124, 96, 96];
    let src = [30.0, 48.0, 48.0];
    let recs: Vec<[f64; 3]> = (0..5)
        .map(|i| [50.0 + 10.0 * i as f64, 48.0, 48.0])
        .collect();
    let traces = shot(dims, src, &recs, 520);
    let delay = 1.0 / FREQ;
    let mut scaled = Vec::new();
    for (rec, trace) in recs.iter().zip(&traces) {
        let r = (rec[0] - src[0]) * H;
        let (t, a) = peak(trace);
        let arrival = t - delay;
        assert!(
            (arrival - r / V).abs() <= DT,
            "receiver at {r} m: arrival {arrival:.4} s, r/v {:.4} s",
            r / V
        );
        // The Green's function's peak: 1/(4πv²r) for a wavelet peaking at 1.
        scaled.push(a * r * 4.0 * std::f64::consts::PI * V * V);
    }
    let mean = scaled.iter().sum::<f64>() / scaled.len() as f64;
    for s in &scaled {
        assert!((s / mean - 1.0).abs() < 0.02, "amplitude × r: {scaled:?}");
    }
    assert!(
        (mean - 1.0).abs() < 0.05,
        "amplitude × 4πv²r = {mean}, expected 1"
    );
}

/// The layer's reflection seen at `rec` from a source at `src` near the low-x face, against
/// the same cells shifted `extra` cells away from that face in a larger domain; scaled by
/// the ratio of the reflected path (`mirror` distance) to the direct one.
fn reflection(dims: [usize; 3], src: [f64; 3], rec: [f64; 3], steps: usize) -> f64 {
    let extra = 120.0;
    let near = shot(dims, src, &[rec], steps);
    let far_dims = [dims[0] + extra as usize, dims[1], dims[2]];
    let shift = |c: [f64; 3]| [c[0] + extra, c[1], c[2]];
    let far = shot(far_dims, shift(src), &[shift(rec)], steps);
    let direct = far[0].iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let back = near[0]
        .iter()
        .zip(&far[0])
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    // The reflection comes from the mirror image of the source in the layer's inner face.
    let face = 20.0;
    let image = [2.0 * face - src[0], src[1], src[2]];
    let dist = |a: [f64; 3], b: [f64; 3]| (0..3).map(|i| (a[i] - b[i]).powi(2)).sum::<f64>().sqrt();
    back / direct * dist(image, rec) / dist(src, rec)
}

#[test]
fn the_absorbing_layers_reflect_under_one_percent_at_normal_incidence() {
    let r = reflection([80, 70, 70], [40.0, 35.0, 35.0], [28.0, 35.0, 35.0], 330);
    eprintln!("normal incidence: reflection {:.2}%", 100.0 * r);
    assert!(r < 0.01, "reflection {:.2}%", 100.0 * r);
}

#[test]
fn the_absorbing_layers_reflect_under_five_percent_at_45_degrees() {
    let r = reflection([80, 96, 70], [34.0, 36.0, 35.0], [34.0, 64.0, 35.0], 360);
    eprintln!("45°: reflection {:.2}%", 100.0 * r);
    assert!(r < 0.05, "reflection {:.2}%", 100.0 * r);
}

/// The pressure after `steps` steps of a homogeneous `f64` model of `dims` with `kernel` and a
/// Ricker source at each cell of `sources`. A kernel with a rigid face must be planned one step
/// per pass (its mirror is refreshed before every step); any other takes the planner's choice,
/// which depends on the machine: the CPU engines agree bit for bit at every `dim_t`, so the
/// comparisons below hold whichever it picks.
fn pressure_after(
    kernel: WaveKernel,
    dims: [usize; 3],
    sources: &[[usize; 3]],
    steps: usize,
) -> Grid<f64> {
    let velocity = Grid::<f64>::from_fn(dims, |_, _, _| V).unwrap();
    let mut field = Wavefield::new(kernel, &velocity).unwrap();
    for s in sources {
        field
            .add_source(Source {
                position: s.map(|c| c as f64 * H),
                wavelet: Wavelet::ricker(FREQ),
            })
            .unwrap();
    }
    let plan = Plan::for_wavefield(&field).unwrap();
    if field.kernel().has_rigid_faces() {
        assert_eq!(plan.dim_t(), 1, "{plan}");
    }
    Solver::new(plan).run(&mut field, steps).unwrap();
    field.pressure().clone()
}

#[test]
fn a_rigid_face_reflects_as_the_mirror_image_of_the_shot() {
    // Order 8 (R = 4): the mirror plane of the rigid top lies at z = R − ½ = 3.5. The twice as
    // deep domain (2·(nz − R) cells, absorbing on both ends) puts that plane at its middle,
    // nz − R − ½, so its cell z + s (s = nz − 2R) is cell z of the rigid one. Its two sources
    // are the shot's and the shot's mirror image.
    let (nx, ny, nz, r) = (40, 36, 44, 4);
    let kernel = WaveKernel::new(H, DT, V).with_pml(12);
    let rigid = kernel.clone().with_face(2, 0, Face::Rigid);
    let src = [20, 18, 11];
    let steps = 220;
    let near = pressure_after(rigid, [nx, ny, nz], &[src], steps);
    let s = nz - 2 * r;
    let image = [src[0], src[1], 2 * (nz - r) - 1 - (src[2] + s)];
    let deep = pressure_after(
        kernel,
        [nx, ny, 2 * (nz - r)],
        &[[src[0], src[1], src[2] + s], image],
        steps,
    );
    let (mut largest, mut worst) = (0.0f64, 0.0f64);
    for z in r..nz - r {
        for y in r..ny - r {
            for x in r..nx - r {
                let (a, b) = (near.get(x, y, z), deep.get(x, y, z + s));
                largest = largest.max(b.abs());
                worst = worst.max((a - b).abs());
            }
        }
    }
    // The wave has reached the face and come back past the source (11 cells of 10 m at
    // 2000 m/s take 55 steps; the wavelet lasts about 130).
    assert!(near.get(src[0], src[1], r).abs() > 1e-3 * largest);
    // The same sums in the same order on both sides of the mirror: equal to rounding.
    assert!(
        worst <= 1e-12 * largest,
        "differs by {worst:e} of {largest:e}"
    );
    // The boundary layer comes back zero, as every wavefield's.
    assert!((0..r).all(|z| near.get(src[0], src[1], z) == 0.0));
}
