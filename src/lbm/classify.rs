//! Per-node facts the fast engines derive once from the flags (and keep until the geometry
//! changes), so the hot loop reads one byte per node and takes the plain streaming-collision
//! path for almost every vector of nodes:
//!
//! * a **class** byte: 0 for bulk fluid (a fluid node none of whose 18 neighbours is a wall),
//!   otherwise bits saying what the general path must do (copy a wall node, bounce populations
//!   back, add a moving wall's momentum, reset an inlet or outlet);
//! * a **links** word for nodes next to walls: bit `i` is set when the population of direction
//!   `i` would stream in from a wall node, i.e. when the neighbour at `x − c_i` is a wall.
//!
//! Neighbours outside the lattice are found the way every engine finds them: wrapped around a
//! periodic axis, clamped to the face on a closed one.

use rayon::prelude::*;

use super::cell::{Cell, CellTable, FLUID};
use super::model::{Q, VELOCITIES};

const _: () = assert!(Q <= 32, "links need one bit per direction");
use super::populations::Layout;

/// A bulk fluid node: no wall neighbour, no boundary condition.
pub(crate) const BULK: u8 = 0;
/// The node is a wall (resting or moving): its populations never change.
pub(crate) const IS_WALL: u8 = 1;
/// Some population streams in from a wall: bounce back (see the links word).
pub(crate) const NEAR_WALL: u8 = 2;
/// Some population streams in from a moving wall: add its momentum term.
pub(crate) const NEAR_MOVING: u8 = 4;
/// The node is a velocity inlet.
pub(crate) const IS_INLET: u8 = 8;
/// The node is a pressure outlet.
pub(crate) const IS_OUTLET: u8 = 16;

/// The neighbour coordinate `v` (possibly −1 or n) on an axis of `n` nodes: wrapped when the
/// axis is periodic, clamped to the lattice otherwise. Every engine uses this rule.
#[inline]
pub(crate) fn neighbour(v: isize, n: usize, periodic: bool) -> usize {
    if periodic {
        // Neighbours lie at most one period outside; a compare beats a division in the
        // per-row pointer set-up, which runs for every row of every level.
        let n = n as isize;
        if v < 0 {
            (if v >= -n { v + n } else { v.rem_euclid(n) }) as usize
        } else if v >= n {
            (if v < 2 * n { v - n } else { v.rem_euclid(n) }) as usize
        } else {
            v as usize
        }
    } else {
        v.clamp(0, n as isize - 1) as usize
    }
}

/// Class bytes and links words, indexed like the population arrays.
#[derive(Clone, Debug)]
pub(crate) struct Classes {
    pub(crate) class: Vec<u8>,
    pub(crate) links: Vec<u32>,
    /// Whether every node is bulk fluid (no wall, inlet or outlet anywhere): the GPU kernels
    /// then read no class bytes.
    pub(crate) all_bulk: bool,
}

impl Classes {
    /// Derives classes and links from the flags.
    pub(crate) fn build(
        layout: &Layout,
        flags: &[u8],
        table: &CellTable,
        periodic: [bool; 3],
    ) -> Classes {
        let kinds: Vec<Cell> = (0..table.flag_count())
            .map(|f| table.cell(f as u8))
            .collect();
        let [nx, ny, nz] = layout.dims;
        let mut class = vec![BULK; layout.cells_len()];
        let mut links = vec![0u32; layout.cells_len()];
        class
            .par_chunks_mut(layout.plane)
            .zip(links.par_chunks_mut(layout.plane))
            .enumerate()
            .for_each(|(z, (class, links))| {
                for y in 0..ny {
                    for x in 0..nx {
                        let o = y * layout.pitch + x;
                        let own = kinds[flags[layout.offset(x, y, z)] as usize];
                        let (mut c, mut l) = (BULK, 0u32);
                        match own {
                            Cell::Wall | Cell::MovingWall { .. } => c |= IS_WALL,
                            Cell::Inlet { .. } => c |= IS_INLET,
                            Cell::Outlet { .. } => c |= IS_OUTLET,
                            Cell::Fluid => {}
                        }
                        if c & IS_WALL == 0 {
                            for (i, v) in VELOCITIES.iter().enumerate().skip(1) {
                                let n = [
                                    neighbour(x as isize - v[0] as isize, nx, periodic[0]),
                                    neighbour(y as isize - v[1] as isize, ny, periodic[1]),
                                    neighbour(z as isize - v[2] as isize, nz, periodic[2]),
                                ];
                                let flag = flags[layout.offset(n[0], n[1], n[2])];
                                if flag == FLUID {
                                    continue;
                                }
                                match kinds[flag as usize] {
                                    Cell::Wall => l |= 1 << i,
                                    Cell::MovingWall { .. } => {
                                        l |= 1 << i;
                                        c |= NEAR_MOVING;
                                    }
                                    _ => {}
                                }
                            }
                            if l != 0 {
                                c |= NEAR_WALL;
                            }
                        }
                        class[o] = c;
                        links[o] = l;
                    }
                }
            });
        let all_bulk = class.par_iter().all(|&c| c == BULK);
        Classes {
            class,
            links,
            all_bulk,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::{Cell, Face, Lattice, Physics};

    #[test]
    fn neighbour_rule() {
        assert_eq!(neighbour(-1, 5, true), 4);
        assert_eq!(neighbour(5, 5, true), 0);
        assert_eq!(neighbour(-1, 5, false), 0);
        assert_eq!(neighbour(5, 5, false), 4);
        assert_eq!(neighbour(-1, 1, true), 0);
    }

    #[test]
    fn cavity_classes() {
        let mut lat = Lattice::<f32>::new([6, 5, 4], Physics::bgk(0.7)).unwrap();
        for f in Face::ALL {
            lat.set_face(f, Cell::Wall).unwrap();
        }
        lat.set_face(
            Face::YMax,
            Cell::MovingWall {
                velocity: [0.1, 0.0, 0.0],
            },
        )
        .unwrap();
        let layout = *lat.layout();
        lat.prepare();
        let c = lat.classes().clone();
        let at = |x, y, z| layout.offset(x, y, z);
        assert_eq!(c.class[at(0, 2, 2)], IS_WALL);
        // (1, 2, 1): walls at x = 0 and z = 0.
        let o = at(1, 2, 1);
        assert_eq!(c.class[o], NEAR_WALL);
        for (i, v) in VELOCITIES.iter().enumerate() {
            let from_wall = v[0] == 1 || v[2] == 1;
            assert_eq!(c.links[o] >> i & 1 == 1, from_wall, "direction {i}");
        }
        // Below the lid.
        assert_eq!(c.class[at(2, 3, 2)], NEAR_WALL | NEAR_MOVING);
        // A 6x5x4 box has no bulk node at all; a bigger one does.
        let mut big = Lattice::<f32>::new([7, 7, 7], Physics::bgk(0.7)).unwrap();
        for f in Face::ALL {
            big.set_face(f, Cell::Wall).unwrap();
        }
        let l = *big.layout();
        big.prepare();
        assert_eq!(big.classes().class[l.offset(3, 3, 3)], BULK);
    }
}
