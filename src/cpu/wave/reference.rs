//! The reference wave engine: the update written cell by cell as the equations read, in
//! scalar arithmetic without fused multiply-adds — the oracle the other engines are tested
//! against. Every cell takes the layer's update (which is the plain update where `η`, its
//! difference and `φ` are zero), so the engines' split into inner and layer segments is
//! tested, not shared.

use super::step::{advance, failure, inject, WaveScratch};
use crate::engine::Failure;
use crate::wave::Wavefield;
use crate::Real;

/// Advances `field` by `steps` steps.
pub(crate) fn run<T: Real>(
    field: &mut Wavefield<T>,
    scratch: &mut WaveScratch<T>,
    steps: usize,
) -> Result<(), Failure> {
    let r = field.kernel().radius();
    for s in 1..=steps {
        step(field, scratch);
        let injected = inject(field, scratch);
        let finite =
            scratch.u.find_non_finite().is_none() && scratch.phi.find_non_finite().is_none();
        if !(injected && finite) {
            return Err(failure(scratch, r, s));
        }
        advance(field, scratch);
    }
    Ok(())
}

/// One step into `scratch`.
fn step<T: Real>(field: &Wavefield<T>, scratch: &mut WaveScratch<T>) {
    let k = field.kernel();
    let r = k.radius();
    let w = k.weights();
    let [nx, ny, nz] = field.dims();
    let inv: Vec<T> = k.spacing.iter().map(|h| T::of(1.0 / (h * h))).collect();
    let d = &field.damping;
    let (u, one) = (&field.u, T::one());
    let two = one + one;
    for z in r..nz - r {
        for y in r..ny - r {
            for x in r..nx - r {
                let mut lap = [T::zero(); 3];
                for (a, l) in lap.iter_mut().enumerate() {
                    let mut s = T::of(w[0]) * u.get(x, y, z);
                    for (dist, &wd) in w.iter().enumerate().skip(1) {
                        let (lo, hi) = match a {
                            0 => (u.get(x - dist, y, z), u.get(x + dist, y, z)),
                            1 => (u.get(x, y - dist, z), u.get(x, y + dist, z)),
                            _ => (u.get(x, y, z - dist), u.get(x, y, z + dist)),
                        };
                        s = s + T::of(wd) * (lo + hi);
                    }
                    *l = s * inv[a];
                }
                let lap = lap[0] + lap[1] + lap[2];
                let (c, prev, coef) = (
                    u.get(x, y, z),
                    field.prev.get(x, y, z),
                    field.coef.get(x, y, z),
                );
                let eta = d.eta[0][x] + d.eta[1][y] + d.eta[2][z];
                let phi = field.phi.get(x, y, z);
                let new = ((two + two * eta - eta * eta) * c - prev + coef * (lap + phi))
                    / (one + two * eta);
                let grad = d.grad[0][x] * (u.get(x + 1, y, z) - u.get(x - 1, y, z))
                    + d.grad[1][y] * (u.get(x, y + 1, z) - u.get(x, y - 1, z))
                    + d.grad[2][z] * (u.get(x, y, z + 1) - u.get(x, y, z - 1));
                scratch.u.set(x, y, z, new);
                scratch
                    .phi
                    .set(x, y, z, (phi - grad) / ((one + d.leak) + eta));
            }
        }
    }
}
