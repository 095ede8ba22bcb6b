//! Rigid faces: before each step the boundary layer of `u` at a rigid face takes the mirror
//! image of the cells inside it, the discrete form of a zero normal derivative.

use super::{Face, WaveKernel, Wavefield};
use crate::{Grid, Real};

/// Mirrors the `R` cells inside each rigid face of `kernel` into its boundary layer of `u`:
/// `u[R − 1 − k] = u[R + k]` at a low face, `u[n − R + k] = u[n − R − 1 − k]` at a high one.
/// Faces across x go first, then y, then z, each over the whole extent of the other axes, so
/// an edge or corner between rigid faces takes the mirror of a mirror.
pub(crate) fn mirror_rigid_faces<T: Real>(kernel: &WaveKernel, u: &mut Grid<T>) {
    for (axis, side) in rigid_sides(kernel) {
        for (from, to) in mirror_pairs(kernel.radius(), u.dims()[axis], side) {
            copy_layer(u, axis, from, to);
        }
    }
}

/// Zeroes the boundary layers of `field`'s rigid faces in both time levels, as a run ends: the
/// state handed back has the zero boundary layer of every wavefield (the next step mirrors it
/// afresh), whichever buffer each level came from.
pub(crate) fn settle_rigid_faces<T: Real>(field: &mut Wavefield<T>) {
    let kernel = field.kernel().clone();
    for u in [&mut field.u, &mut field.prev] {
        for (axis, side) in rigid_sides(&kernel) {
            for (_, to) in mirror_pairs(kernel.radius(), u.dims()[axis], side) {
                layer_cells(u, axis, to, |data, cell| data[cell] = T::zero());
            }
        }
    }
}

/// The rigid faces of `kernel` as `(axis, side)`, faces across x first, then y, then z: the
/// order the mirror goes in, on the host and on the GPU.
pub(crate) fn rigid_sides(kernel: &WaveKernel) -> impl Iterator<Item = (usize, usize)> + '_ {
    kernel.faces.iter().enumerate().flat_map(|(axis, faces)| {
        faces
            .iter()
            .enumerate()
            .filter(|(_, f)| **f == Face::Rigid)
            .map(move |(side, _)| (axis, side))
    })
}

/// The layers `(from, to)` a rigid face on side `side` of an axis of `n` cells copies.
fn mirror_pairs(r: usize, n: usize, side: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..r).map(move |k| {
        if side == 0 {
            (r + k, r - 1 - k)
        } else {
            (n - r - 1 - k, n - r + k)
        }
    })
}

/// Copies layer `from` of `axis` onto layer `to` across the whole grid.
fn copy_layer<T: Real>(u: &mut Grid<T>, axis: usize, from: usize, to: usize) {
    let stride = match axis {
        0 => 1,
        1 => u.pitch(),
        _ => u.plane_stride(),
    };
    let shift = from * stride;
    layer_cells(u, axis, to, |data, cell| {
        data[cell] = data[cell - to * stride + shift]
    });
}

/// Calls `visit(storage, index)` for each cell of layer `at` of `axis`.
fn layer_cells<T: Real>(
    u: &mut Grid<T>,
    axis: usize,
    at: usize,
    mut visit: impl FnMut(&mut [T], usize),
) {
    let [nx, ny, nz] = u.dims();
    let (pitch, plane) = (u.pitch(), u.plane_stride());
    let data = u.storage_mut();
    let (outer, inner, o_stride, i_stride, offset) = match axis {
        0 => (nz, ny, plane, pitch, at),
        1 => (nz, nx, plane, 1, at * pitch),
        _ => (ny, nx, pitch, 1, at * plane),
    };
    for o in 0..outer {
        for i in 0..inner {
            visit(data, offset + o * o_stride + i * i_stride);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rigid_face_mirrors_the_cells_inside_it_and_leaves_the_rest() {
        let k = WaveKernel::new(10.0, 1e-3, 3000.0)
            .with_order(4)
            .with_face(0, 1, Face::Rigid)
            .with_face(2, 0, Face::Rigid);
        let dims = [9, 7, 8];
        let mut u = Grid::<f64>::random(dims, -1.0, 1.0, 5).unwrap();
        let before = u.clone();
        mirror_rigid_faces(&k, &mut u);
        let [nx, ny, nz] = dims;
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    // x high (layers 7, 8 from 6, 5), then z low (layers 1, 0 from 2, 3).
                    let mx = match x {
                        7 => 6,
                        8 => 5,
                        x => x,
                    };
                    let mz = match z {
                        1 => 2,
                        0 => 3,
                        z => z,
                    };
                    assert_eq!(u.get(x, y, z), before.get(mx, y, mz), "({x}, {y}, {z})");
                }
            }
        }
    }

    #[test]
    fn a_rigid_face_needs_room_for_its_mirror() {
        let k = WaveKernel::new(10.0, 1e-3, 3000.0)
            .with_face(1, 0, Face::Rigid)
            .with_face(1, 1, Face::Free);
        assert!(k.validate_dims([40, 12, 40]).is_ok());
        let e = k.validate_dims([40, 11, 40]).unwrap_err().to_string();
        assert!(e.contains("rigid") && e.contains("at least 12"), "{e}");
    }
}
