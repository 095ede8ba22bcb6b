//! [`Populations`]: the 19 distribution arrays of a lattice as structure-of-arrays in one
//! allocation. Each array is laid out like a [`crate::Grid`] (x fastest, rows padded to cache
//! lines and away from 4 KiB strides), so a row of one direction is contiguous and SIMD loads
//! of neighbouring cells are plain vector loads. Consecutive arrays start two cache lines apart
//! modulo 4 KiB, so the 19 streams a kernel reads (and the 19 it writes) at the same cell fall
//! into different L1 sets instead of fighting over one.

use std::marker::PhantomData;

use rayon::prelude::*;

use crate::aligned::{AlignedBuf, CACHE_LINE};
use crate::engine::Failure;
use crate::finite::{all_finite, first_bad_plane};
use crate::grid::{padded_stride, padded_stride_by};
use crate::rel_diff::RelDiff;
use crate::{Error, Real, Result};

use super::model::{Q, WEIGHTS};
use super::storage::Storage;

/// Values per task when populations are encoded to or decoded from 16-bit codes in parallel.
const PIECE: usize = 1 << 16;

/// Strides of the population arrays (and of the per-cell byte arrays, which share them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `[nx, ny, nz]`.
    pub(crate) dims: [usize; 3],
    /// Row stride in elements.
    pub(crate) pitch: usize,
    /// Plane stride in elements.
    pub(crate) plane: usize,
    /// Stride between the arrays of two directions, in elements.
    pub(crate) array: usize,
}

const PAGE: usize = 4096;
/// Bytes by which a plane stride that would be a multiple of 4 KiB is lengthened.
const PLANE_BUMP: usize = 2 * CACHE_LINE;
/// Bytes by which consecutive direction arrays are staggered modulo a page.
const STAGGER: usize = 2 * CACHE_LINE;

impl Layout {
    /// The layout for `dims` cells of `T`.
    pub(crate) fn new<T>(dims: [usize; 3]) -> Result<Layout> {
        let too_large = || {
            Error::InvalidArgument(format!(
                "a {}x{}x{} lattice does not fit in memory",
                dims[0], dims[1], dims[2]
            ))
        };
        if dims.contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "lattice dimensions must be positive, got {}x{}x{}",
                dims[0], dims[1], dims[2]
            )));
        }
        let size = std::mem::size_of::<T>();
        let pitch = padded_stride::<T>(dims[0]);
        // Planes move a whole 128-byte GPU cache line off 4 KiB, not half of one: a plane
        // 64 bytes off puts every row of every other plane across two lines, which on the H200
        // (256^3 f32 periodic box) cost the in-place step 12% (20,878 MLUPS instead of 23,840
        // unpadded; 23,021 with 128 bytes) and the two-copy step 3%.
        let plane = padded_stride_by::<T>(
            pitch.checked_mul(dims[1]).ok_or_else(too_large)?,
            PLANE_BUMP,
        );
        let cells = plane.checked_mul(dims[2]).ok_or_else(too_large)?;
        let bytes = cells
            .checked_mul(size)
            .and_then(|b| b.checked_next_multiple_of(PAGE))
            .ok_or_else(too_large)?;
        let array = (bytes + STAGGER) / size;
        array.checked_mul(Q).ok_or_else(too_large)?;
        Ok(Layout {
            dims,
            pitch,
            plane,
            array,
        })
    }

    /// Length of one padded array of per-cell values (elements).
    #[inline]
    pub(crate) fn cells_len(&self) -> usize {
        self.plane * self.dims[2]
    }

    /// Index of cell (x, y, z) within one array.
    #[inline]
    pub(crate) fn offset(&self, x: usize, y: usize, z: usize) -> usize {
        z * self.plane + y * self.pitch + x
    }

    /// Number of cells.
    pub(crate) fn cells(&self) -> usize {
        self.dims.iter().product()
    }
}

/// The 19 population arrays of a lattice.
#[derive(Clone, Debug)]
pub(crate) struct Populations<T: Real> {
    layout: Layout,
    data: AlignedBuf<T>,
}

impl<T: Real> Populations<T> {
    /// Zeroed populations for `dims` cells.
    pub(crate) fn new(dims: [usize; 3]) -> Result<Self> {
        let layout = Layout::new::<T>(dims)?;
        let data =
            AlignedBuf::zeroed(layout.array * Q).ok_or_else(|| not_allocated::<T>(&layout))?;
        Ok(Self { layout, data })
    }

    /// A copy; an error (not a panic) where the allocation fails.
    pub(crate) fn try_clone(&self) -> Result<Self> {
        let data = self
            .data
            .try_clone()
            .ok_or_else(|| not_allocated::<T>(&self.layout))?;
        Ok(Self {
            layout: self.layout,
            data,
        })
    }

    /// The strides.
    #[inline]
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Population `i` at cell (x, y, z).
    #[inline]
    pub(crate) fn get(&self, i: usize, x: usize, y: usize, z: usize) -> T {
        self.data[i * self.layout.array + self.layout.offset(x, y, z)]
    }

    /// Sets population `i` at cell (x, y, z).
    #[inline]
    pub(crate) fn set(&mut self, i: usize, x: usize, y: usize, z: usize, v: T) {
        let o = i * self.layout.array + self.layout.offset(x, y, z);
        self.data[o] = v;
    }

    /// The whole storage: array `i` starts at `i * layout.array`.
    #[inline]
    pub(crate) fn storage(&self) -> &[T] {
        &self.data
    }

    /// The whole storage, mutable.
    #[inline]
    pub(crate) fn storage_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The 16-bit codes of every stored value in `storage` (padding included), in the same
    /// layout. Values must be `f32` (16-bit storage computes in `f32`).
    pub(crate) fn encode(&self, storage: Storage) -> Vec<u16> {
        let mut codes = vec![0u16; self.data.len()];
        codes
            .par_chunks_mut(self.layout.array)
            .zip(self.data.par_chunks(self.layout.array))
            .enumerate()
            .for_each(|(i, (out, values))| {
                let w = WEIGHTS[i] as f32;
                // Pieces of each array too, so that all cores share the 19 arrays.
                out.par_chunks_mut(PIECE)
                    .zip(values.par_chunks(PIECE))
                    .for_each(|(out, values)| {
                        for (c, v) in out.iter_mut().zip(values) {
                            *c = storage.encode(v.to_f32().unwrap_or(f32::NAN) - w);
                        }
                    });
            });
        codes
    }

    /// Sets every stored value from its 16-bit code in `storage` (the layout of
    /// [`Populations::encode`]).
    pub(crate) fn decode(&mut self, storage: Storage, codes: &[u16]) {
        debug_assert_eq!(codes.len(), self.data.len());
        let array = self.layout.array;
        self.data
            .par_chunks_mut(array)
            .zip(codes.par_chunks(array))
            .enumerate()
            .for_each(|(i, (out, codes))| {
                let w = WEIGHTS[i] as f32;
                out.par_chunks_mut(PIECE)
                    .zip(codes.par_chunks(PIECE))
                    .for_each(|(out, codes)| {
                        for (v, &c) in out.iter_mut().zip(codes) {
                            *v = T::of(f64::from(w + storage.decode(c)));
                        }
                    });
            });
    }

    /// Rounds every value to what `storage` holds.
    #[cfg(test)]
    pub(crate) fn round_to(&mut self, storage: Storage) {
        let codes = self.encode(storage);
        self.decode(storage, &codes);
    }

    /// Fails when a population of a node deviates from its rest value by more than `storage`
    /// holds.
    pub(crate) fn check_storage(&self, storage: Storage) -> Result<()> {
        let limit = f64::from(storage.max_deviation());
        match self.first_deviating(|d| d.is_nan() || d.abs() > limit) {
            None => Ok(()),
            Some(([x, y, z], i, v)) => Err(Error::InvalidArgument(format!(
                "population {i} of node ({x}, {y}, {z}) is {v}, beyond what {storage} storage \
                 holds ({:.4} ± {limit:.3})",
                WEIGHTS[i]
            ))),
        }
    }

    /// The first population (direction-major, then z, y, x) whose 16-bit code in `codes`
    /// (these populations' codes in `storage`, in their layout) is saturated: the code a
    /// deviation beyond the format's range is stored as (the kernels flag such a value as they
    /// store it). Its node, direction and value.
    pub(crate) fn find_saturated(
        &self,
        storage: Storage,
        codes: &[u16],
    ) -> Option<([usize; 3], usize, f64)> {
        let [nx, ny, nz] = self.layout.dims;
        for i in 0..WEIGHTS.len() {
            for z in 0..nz {
                for y in 0..ny {
                    let o = i * self.layout.array + self.layout.offset(0, y, z);
                    let row = codes.get(o..o + nx)?;
                    if let Some(x) = row.iter().position(|&c| storage.is_saturated(c)) {
                        let v = self.get(i, x, y, z).to_f64().unwrap_or(f64::NAN);
                        return Some(([x, y, z], i, v));
                    }
                }
            }
        }
        None
    }

    /// The first population (direction-major, then z, y, x) whose deviation `d` from its rest
    /// value satisfies `bad(d)`: its node, direction and value.
    fn first_deviating(
        &self,
        bad: impl Fn(f64) -> bool + Sync,
    ) -> Option<([usize; 3], usize, f64)> {
        let [_, ny, nz] = self.layout.dims;
        let value = |v: &T| v.to_f64().unwrap_or(f64::NAN);
        // Planes of each direction in parallel; the first in order wins.
        (0..WEIGHTS.len() * nz).into_par_iter().find_map_first(|k| {
            let (i, z) = (k / nz, k % nz);
            (0..ny).find_map(|y| {
                let row = self.row(i, y, z);
                let x = row.iter().position(|v| bad(value(v) - WEIGHTS[i]))?;
                Some(([x, y, z], i, value(&row[x])))
            })
        })
    }

    /// Exchanges the contents with populations of the same dimensions in O(1).
    pub(crate) fn swap(&mut self, other: &mut Populations<T>) {
        debug_assert_eq!(self.layout, other.layout);
        std::mem::swap(&mut self.data, &mut other.data);
    }

    /// The row of direction `i` at (y, z), `nx` values.
    #[inline]
    pub(crate) fn row(&self, i: usize, y: usize, z: usize) -> &[T] {
        let o = i * self.layout.array + self.layout.offset(0, y, z);
        &self.data[o..o + self.layout.dims[0]]
    }

    /// Population `i`'s row (y, z), to write.
    #[cfg(feature = "mpi")]
    pub(crate) fn row_mut(&mut self, i: usize, y: usize, z: usize) -> &mut [T] {
        let o = i * self.layout.array + self.layout.offset(0, y, z);
        &mut self.data[o..o + self.layout.dims[0]]
    }

    /// The populations cut at the z halos `[low, high]` (planes), for an exchange that fills
    /// the halos while nothing else touches them (see [`ZCut`]).
    pub(crate) fn z_cut(&mut self, halo: [usize; 2]) -> ZCut<'_, T> {
        // SAFETY: the mutable borrow makes the cut the only access for its lifetime.
        unsafe { ZCut::from_raw(self.data.as_mut_ptr(), self.layout, halo) }
    }

    /// Where the first non-finite population is, these populations being the output of step
    /// `step` of a run.
    pub(crate) fn failure(&self, step: usize) -> Failure {
        let (cell, _, value) = self.find_non_finite().unwrap_or(([0; 3], 0, f64::NAN));
        Failure { step, cell, value }
    }

    /// The first cell (x-fastest order) holding an infinite or NaN population: the cell, the
    /// direction (the lowest bad one at that cell) and the value.
    pub(crate) fn find_non_finite(&self) -> Option<([usize; 3], usize, f64)> {
        let [_, ny, nz] = self.layout.dims;
        self.find_non_finite_in([0..ny, 0..nz])
    }

    /// [`Populations::find_non_finite`] among the rows `ys` of the planes `zs` (a split run's
    /// owned nodes, whose halos the exchange refreshes).
    pub(crate) fn find_non_finite_in(
        &self,
        [ys, zs]: [std::ops::Range<usize>; 2],
    ) -> Option<([usize; 3], usize, f64)> {
        let row_finite = |y, z| (0..Q).all(|i| all_finite(self.row(i, y, z)));
        let z = first_bad_plane(zs, |z| ys.clone().all(|y| row_finite(y, z)))?;
        let y = ys.clone().find(|&y| !row_finite(y, z))?;
        let (x, i) = (0..Q)
            .filter_map(|i| {
                let bad = self.row(i, y, z).iter().position(|v| !v.is_finite());
                bad.map(|x| (x, i))
            })
            .min()?;
        let v = self.get(i, x, y, z).to_f64().unwrap_or(f64::NAN);
        Some(([x, y, z], i, v))
    }

    /// `max |self − other| / max |other|` over every population of every node (`other` is the
    /// reference); NaN anywhere gives NaN.
    pub(crate) fn max_rel_diff(&self, other: &Populations<T>) -> f64 {
        let [_, ny, nz] = self.layout.dims;
        let mut d = RelDiff::default();
        for i in 0..Q {
            for z in 0..nz {
                for y in 0..ny {
                    d.add(self.row(i, y, z), other.row(i, y, z));
                }
            }
        }
        d.value()
    }
}

/// The populations of a lattice cut at its z halos for a halo exchange beside a pass: the rows
/// of the planes between the halos can be read, the rows of the halo planes written. A blocked
/// pass that computes only output planes whose inputs lie between the halos reads the same
/// storage meanwhile; the cut never writes those planes and never reads the halos.
// Read and written by the halo exchange, which only the `mpi` feature builds.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) struct ZCut<'a, T> {
    base: *mut T,
    layout: Layout,
    /// Planes of the low and the high halo.
    halo: [usize; 2],
    _storage: PhantomData<&'a mut [T]>,
}

#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl<'a, T: Real> ZCut<'a, T> {
    /// The cut of the storage at `base` (`Q` arrays of `layout`) at `halo` planes.
    ///
    /// # Safety
    /// `base` points to `Q` arrays of `layout`, valid for `'a`; for that long nothing else
    /// writes any of their planes and nothing else reads or writes their halo planes.
    pub(crate) unsafe fn from_raw(base: *mut T, layout: Layout, halo: [usize; 2]) -> Self {
        debug_assert!(halo[0] + halo[1] <= layout.dims[2]);
        ZCut {
            base,
            layout,
            halo,
            _storage: PhantomData,
        }
    }

    /// The dimensions of the lattice.
    pub(crate) fn dims(&self) -> [usize; 3] {
        self.layout.dims
    }

    /// Whether plane `z` belongs to a halo.
    fn in_halo(&self, z: usize) -> bool {
        z < self.halo[0] || z >= self.layout.dims[2] - self.halo[1]
    }

    /// Where population `i`'s row (y, z) starts.
    fn start(&self, i: usize, y: usize, z: usize) -> usize {
        assert!(i < Q && y < self.layout.dims[1] && z < self.layout.dims[2]);
        i * self.layout.array + self.layout.offset(0, y, z)
    }

    /// Population `i`'s row (y, z) of a plane between the halos.
    pub(crate) fn row(&self, i: usize, y: usize, z: usize) -> &[T] {
        assert!(!self.in_halo(z), "plane {z} is a halo plane");
        let start = self.start(i, y, z);
        // SAFETY: the row lies in array i (checked indices), between the halos, which nothing
        // writes while the cut lives (`from_raw`).
        unsafe { std::slice::from_raw_parts(self.base.add(start), self.layout.dims[0]) }
    }

    /// Population `i`'s row (y, z) of a halo plane, to write.
    pub(crate) fn row_mut(&mut self, i: usize, y: usize, z: usize) -> &mut [T] {
        assert!(self.in_halo(z), "plane {z} is not a halo plane");
        let start = self.start(i, y, z);
        // SAFETY: the row lies in array i (checked indices), in a halo plane, which only the
        // cut touches while it lives (`from_raw`); the mutable borrow of the cut keeps this
        // row's slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(start), self.layout.dims[0]) }
    }
}

/// The error for populations of `layout` the allocator refused.
fn not_allocated<T: Real>(layout: &Layout) -> Error {
    let [nx, ny, nz] = layout.dims;
    Error::InvalidArgument(format!(
        "cannot allocate {} MiB for a {nx}x{ny}x{nz} lattice",
        (layout.array * Q * std::mem::size_of::<T>()) >> 20
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_staggered_and_rows_aligned() {
        for dims in [[64, 64, 64], [37, 5, 3], [1, 1, 1], [256, 256, 4]] {
            let p = Populations::<f32>::new(dims).unwrap();
            let l = p.layout();
            assert_eq!((l.array * 4) % PAGE, STAGGER, "{dims:?}");
            assert_eq!((l.pitch * 4) % CACHE_LINE, 0);
            assert!(l.array >= l.cells_len());
            assert_eq!(p.storage().len(), 19 * l.array);
        }
        // A 256 x 256 plane (exactly 256 KiB) moves by a whole 128-byte line.
        let l = Layout::new::<f32>([256, 256, 4]).unwrap();
        assert_eq!(l.plane * 4, 256 * 256 * 4 + PLANE_BUMP);
        let l = Layout::new::<f64>([10, 10, 10]).unwrap();
        assert_eq!((l.array * 8) % PAGE, STAGGER);
        assert!(Layout::new::<f32>([0, 3, 3]).is_err());
        assert!(Layout::new::<f32>([usize::MAX / 2, 3, 3]).is_err());
    }

    #[test]
    fn finds_the_first_non_finite_cell() {
        let mut p = Populations::<f64>::new([5, 4, 3]).unwrap();
        assert!(p.find_non_finite().is_none());
        p.set(7, 3, 2, 1, f64::NAN);
        p.set(2, 1, 2, 1, f64::INFINITY);
        p.set(0, 4, 3, 2, f64::NAN);
        let (cell, dir, v) = p.find_non_finite().unwrap();
        assert_eq!((cell, dir), ([1, 2, 1], 2));
        assert!(v.is_infinite());
    }
}
