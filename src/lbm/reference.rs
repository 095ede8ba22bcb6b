//! The reference lattice-Boltzmann step: the textbook scheme as an obvious scalar loop over
//! nodes and directions, one thread. It shares no code with the fast engines (no classes, no
//! links, no row kernels; it even finds opposite directions by searching the velocity set), so
//! the tests and `bench --verify` can trust it as the oracle.

use super::cell::Cell;
use super::classify::neighbour;
use super::lattice::Lattice;
use super::model::{Q, VELOCITIES, WEIGHTS};
use super::physics::Collision;
use super::populations::Populations;
use crate::Real;

/// Advances `lat`'s populations by one step into `dst` (same dimensions); `lat` is unchanged.
pub(crate) fn step<T: Real>(lat: &Lattice<T>, dst: &mut Populations<T>) {
    let [nx, ny, nz] = lat.dims();
    let src = &lat.pop;
    let opposite: [usize; Q] = std::array::from_fn(|i| {
        let c = VELOCITIES[i];
        (0..Q)
            .find(|&j| (0..3).all(|a| VELOCITIES[j][a] == -c[a]))
            .expect("the velocity set is symmetric")
    });
    let c = |i: usize, a: usize| T::of(VELOCITIES[i][a] as f64);
    let w = |i: usize| T::of(WEIGHTS[i]);
    let t = T::of;
    let force = lat.physics.force.map(T::of);
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let here = lat.cell(x, y, z);
                if here.is_wall() {
                    for i in 0..Q {
                        dst.set(i, x, y, z, src.get(i, x, y, z));
                    }
                    continue;
                }
                // Pull streaming with half-way bounce-back.
                let mut f = [T::zero(); Q];
                for i in 0..Q {
                    let v = VELOCITIES[i];
                    let (fx, fy, fz) = (
                        neighbour(x as isize - v[0] as isize, nx, lat.periodic[0]),
                        neighbour(y as isize - v[1] as isize, ny, lat.periodic[1]),
                        neighbour(z as isize - v[2] as isize, nz, lat.periodic[2]),
                    );
                    f[i] = match lat.cell(fx, fy, fz) {
                        Cell::Wall => src.get(opposite[i], x, y, z),
                        Cell::MovingWall { velocity } => {
                            let cu: f64 = (0..3).map(|a| v[a] as f64 * velocity[a]).sum();
                            src.get(opposite[i], x, y, z) + t(6.0 * WEIGHTS[i] * cu)
                        }
                        _ => src.get(i, fx, fy, fz),
                    };
                }
                let rho = f.iter().fold(T::zero(), |s, &v| s + v);
                let j: [T; 3] =
                    std::array::from_fn(|a| (0..Q).fold(T::zero(), |s, i| s + c(i, a) * f[i]));
                let feq = |rho: T, u: [T; 3]| -> [T; Q] {
                    let usq = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
                    std::array::from_fn(|i| {
                        let cu = c(i, 0) * u[0] + c(i, 1) * u[1] + c(i, 2) * u[2];
                        w(i) * rho * (t(1.0) + t(3.0) * cu + t(4.5) * cu * cu - t(1.5) * usq)
                    })
                };
                let out: [T; Q] = match here {
                    Cell::Inlet { velocity } => feq(rho, velocity.map(T::of)),
                    Cell::Outlet { density } => feq(t(density), j.map(|ja| ja / rho)),
                    _ => {
                        let u: [T; 3] = std::array::from_fn(|a| (j[a] + force[a] / t(2.0)) / rho);
                        let eq = feq(rho, u);
                        // Guo's forcing term S_i = w_i [3 (c_i − u) + 9 (c_i·u) c_i] · F.
                        let source: [T; Q] = std::array::from_fn(|i| {
                            let cu = c(i, 0) * u[0] + c(i, 1) * u[1] + c(i, 2) * u[2];
                            let mut s = T::zero();
                            for a in 0..3 {
                                s = s
                                    + (t(3.0) * (c(i, a) - u[a]) + t(9.0) * cu * c(i, a))
                                        * force[a];
                            }
                            w(i) * s
                        });
                        match lat.physics.collision {
                            Collision::Bgk { tau } => {
                                let tau = t(tau);
                                std::array::from_fn(|i| {
                                    f[i] - (f[i] - eq[i]) / tau
                                        + (t(1.0) - t(0.5) / tau) * source[i]
                                })
                            }
                            Collision::Trt { .. } => {
                                let (wp, wm) = lat.physics.rates();
                                let (wp, wm) = (t(wp), t(wm));
                                let half = t(0.5);
                                std::array::from_fn(|i| {
                                    let o = opposite[i];
                                    let (fp, fm) = (half * (f[i] + f[o]), half * (f[i] - f[o]));
                                    let (ep, em) = (half * (eq[i] + eq[o]), half * (eq[i] - eq[o]));
                                    let (sp, sm) = (
                                        half * (source[i] + source[o]),
                                        half * (source[i] - source[o]),
                                    );
                                    f[i] - wp * (fp - ep) - wm * (fm - em)
                                        + (t(1.0) - half * wp) * sp
                                        + (t(1.0) - half * wm) * sm
                                })
                            }
                        }
                    }
                };
                for (i, v) in out.into_iter().enumerate() {
                    dst.set(i, x, y, z, v);
                }
            }
        }
    }
}
