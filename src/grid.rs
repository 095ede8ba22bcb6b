//! [`Grid`]: a 3D field of `f32` or `f64`, x fastest, every row starting on a cache line.
//!
//! The outermost `R` cells on each side (R = the stencil radius) are the fixed (Dirichlet)
//! boundary: solvers read them and never change them, the convention of the 3.5D and AN5D papers.

use std::ops::{Index, IndexMut};

use crate::aligned::{line_elems, AlignedBuf};
use crate::finite::{all_finite, first_bad_plane};
use crate::memory::{Data, Footprint};
use crate::rel_diff::RelDiff;
use crate::{Error, Real, Result};

/// A dense 3D grid of `T` with padded, aligned rows.
///
/// ```
/// use stencil35d::Grid;
/// let mut g = Grid::<f32>::new([8, 6, 4]).unwrap();
/// g[[1, 2, 3]] = 5.0;
/// assert_eq!(g.get(1, 2, 3), 5.0);
/// assert_eq!(g.dims(), [8, 6, 4]);
/// ```
#[derive(Clone, Debug)]
pub struct Grid<T: Real> {
    dims: [usize; 3],
    pitch: usize,
    plane: usize,
    data: AlignedBuf<T>,
}

/// The number of elements of an array of `shape` (`None` on overflow).
pub(crate) fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Checks the bounds of random values: finite in `T` (an `f64` bound may overflow `f32`),
/// `lo <= hi`, and a span `hi - lo` that is finite too.
fn check_random_range<T: Real>(lo: f64, hi: f64) -> Result<()> {
    let finite = |v: f64| T::of(v).is_finite();
    if !(finite(lo) && finite(hi) && finite(hi - lo) && lo <= hi) {
        return Err(Error::InvalidArgument(format!(
            "random values need finite bounds lo <= hi within the range of {}, not [{lo}, {hi})",
            T::DTYPE
        )));
    }
    Ok(())
}

/// Pads a stride (in elements) to whole cache lines and away from multiples of 4 KiB, so the
/// rows and planes a stencil reads together do not all map to the same cache sets.
pub(crate) fn padded_stride<T>(len: usize) -> usize {
    padded_stride_by::<T>(len, crate::aligned::CACHE_LINE)
}

/// [`padded_stride`], moved `bump` bytes (a multiple of the cache line) away from a multiple
/// of 4 KiB instead of one cache line.
pub(crate) fn padded_stride_by<T>(len: usize, bump: usize) -> usize {
    // Saturating: a length near the address space gives a stride no allocation can take
    // (the callers' checked products and the allocation refuse it), never a wrapped small one.
    let line = line_elems::<T>();
    let mut stride = len.div_ceil(line).saturating_mul(line);
    let bytes = stride.saturating_mul(std::mem::size_of::<T>());
    if bytes.is_multiple_of(4096) && stride > line {
        stride = stride.saturating_add(bump / std::mem::size_of::<T>());
    }
    stride
}

impl Footprint {
    /// `count` grids of `dtype`.
    pub fn grids(dtype: crate::DType, count: u64) -> Footprint {
        Footprint::new(GRIDS, dtype, count, 0)
    }
}

/// Grids, as [`Footprint`]s count them: one array is one grid, with [`grid_strides`].
const GRIDS: Data = Data {
    name: "grid",
    array: |dtype, dims| {
        let (elems, size) = match dtype {
            crate::DType::F32 => (grid_strides::<f32>(dims)?.2, 4),
            crate::DType::F64 => (grid_strides::<f64>(dims)?.2, 8),
        };
        let bytes = u64::try_from(elems.checked_mul(size)?).ok()?;
        Some((bytes, u64::try_from(elems).ok()?))
    },
};

/// Row stride, plane stride and length in elements of a grid of `T` with dimensions `dims`;
/// `None` when the size overflows. The one formula for allocations and memory checks.
pub(crate) fn grid_strides<T>(dims: [usize; 3]) -> Option<(usize, usize, usize)> {
    let pitch = padded_stride::<T>(dims[0]);
    let plane = padded_stride::<T>(pitch.checked_mul(dims[1])?);
    let len = plane.checked_mul(dims[2])?;
    Some((pitch, plane, len))
}

impl<T: Real> Grid<T> {
    /// A grid of zeros with dimensions `[nx, ny, nz]`.
    ///
    /// Errors: zero dimensions, a size beyond the address space, and
    /// [`Error::OutOfMemory`] when the grid would take more than
    /// [`crate::memory::USABLE_SHARE`] of the memory available (checked from 64 MiB on, or
    /// always against the `memory_bytes` tuning knob).
    pub fn new(dims: [usize; 3]) -> Result<Self> {
        Footprint::grids(T::DTYPE, 1).check_allocation(dims)?;
        Self::unchecked(dims)
    }

    /// A grid of zeros, allocated without asking whether memory is available (callers that
    /// checked a larger footprint already). Errors: zero dimensions, a size beyond the address
    /// space, a failed allocation.
    pub(crate) fn unchecked(dims: [usize; 3]) -> Result<Self> {
        if dims.contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "grid dimensions must be positive, got {}x{}x{}",
                dims[0], dims[1], dims[2]
            )));
        }
        let (pitch, plane, len) = grid_strides::<T>(dims).ok_or_else(|| too_large(dims))?;
        let data = AlignedBuf::zeroed(len).ok_or_else(|| too_large(dims))?;
        Ok(Self {
            dims,
            pitch,
            plane,
            data,
        })
    }

    /// A grid whose cell (x, y, z) is `f(x, y, z)`.
    pub fn from_fn(dims: [usize; 3], mut f: impl FnMut(usize, usize, usize) -> T) -> Result<Self> {
        let mut g = Self::new(dims)?;
        for z in 0..dims[2] {
            for y in 0..dims[1] {
                for (x, v) in g.row_mut(y, z).iter_mut().enumerate() {
                    *v = f(x, y, z);
                }
            }
        }
        Ok(g)
    }

    /// A grid whose cell (x, y, z) is `f(x, y, z)`, its planes filled in parallel on the
    /// current rayon pool (the global one outside `ThreadPool::install`): for models of
    /// hundreds of millions of cells, which [`Grid::from_fn`] fills on one thread.
    ///
    /// ```
    /// use stencil35d::Grid;
    /// let g = Grid::<f64>::par_from_fn([6, 5, 4], |x, y, z| (x + 10 * y + 100 * z) as f64).unwrap();
    /// assert_eq!(g.get(3, 2, 1), 123.0);
    /// ```
    pub fn par_from_fn(
        dims: [usize; 3],
        f: impl Fn(usize, usize, usize) -> T + Sync,
    ) -> Result<Self> {
        use rayon::prelude::*;
        let mut g = Self::new(dims)?;
        let (pitch, plane) = (g.pitch, g.plane);
        let [nx, ny, nz] = dims;
        g.data[..plane * nz]
            .par_chunks_mut(plane)
            .enumerate()
            .for_each(|(z, cells)| {
                for y in 0..ny {
                    let row = &mut cells[y * pitch..y * pitch + nx];
                    for (x, v) in row.iter_mut().enumerate() {
                        *v = f(x, y, z);
                    }
                }
            });
        Ok(g)
    }

    /// A grid from dense data in x-fastest order (`data.len() == nx * ny * nz`).
    pub fn from_slice(dims: [usize; 3], data: &[T]) -> Result<Self> {
        let n = element_count(&dims).ok_or_else(|| too_large(dims))?;
        if data.len() != n {
            return Err(Error::InvalidArgument(format!(
                "{} values given for a {}x{}x{} grid of {n} cells",
                data.len(),
                dims[0],
                dims[1],
                dims[2]
            )));
        }
        let mut g = Self::new(dims)?;
        for (i, row) in data.chunks_exact(dims[0]).enumerate() {
            g.row_mut(i % dims[1], i / dims[1]).copy_from_slice(row);
        }
        Ok(g)
    }

    /// A grid of independent uniform random values in `[lo, hi)`, reproducible from `seed`:
    /// each cell's value comes from its index and `seed` alone (a counter-based generator), so
    /// the planes fill in parallel and the grid is the same whatever the thread count.
    ///
    /// Errors: bounds that are not finite in `T` or not ordered ([`Error::InvalidArgument`]),
    /// and those of [`Grid::new`].
    pub fn random(dims: [usize; 3], lo: f64, hi: f64, seed: u64) -> Result<Self> {
        check_random_range::<T>(lo, hi)?;
        Self::par_from_fn(dims, |x, y, z| {
            T::of(lo + (hi - lo) * crate::random::unit_at(seed, dims, [x, y, z], 0))
        })
    }

    /// `[nx, ny, nz]`.
    pub fn dims(&self) -> [usize; 3] {
        self.dims
    }

    /// Number of cells, `nx * ny * nz`.
    pub fn cells(&self) -> usize {
        self.dims.iter().product()
    }

    /// Value at (x, y, z). Panics when out of bounds, like slice indexing.
    #[inline]
    pub fn get(&self, x: usize, y: usize, z: usize) -> T {
        self[[x, y, z]]
    }

    /// Sets the value at (x, y, z). Panics when out of bounds, like slice indexing.
    #[inline]
    pub fn set(&mut self, x: usize, y: usize, z: usize, v: T) {
        self[[x, y, z]] = v;
    }

    /// The `nx` values of row (y, z). Panics when out of bounds, like slice indexing.
    #[inline]
    pub fn row(&self, y: usize, z: usize) -> &[T] {
        self.check_row(y, z);
        let o = self.offset(0, y, z);
        &self.data[o..o + self.dims[0]]
    }

    /// The `nx` values of row (y, z), mutable. Panics when out of bounds, like slice indexing.
    #[inline]
    pub fn row_mut(&mut self, y: usize, z: usize) -> &mut [T] {
        self.check_row(y, z);
        let o = self.offset(0, y, z);
        let nx = self.dims[0];
        &mut self.data[o..o + nx]
    }

    /// Sets every cell to `v`.
    pub fn fill(&mut self, v: T) {
        self.data.fill(v);
    }

    /// The values in x-fastest order without padding.
    pub fn to_vec(&self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.cells());
        for z in 0..self.dims[2] {
            for y in 0..self.dims[1] {
                out.extend_from_slice(self.row(y, z));
            }
        }
        out
    }

    /// Iterates over `((x, y, z), value)` in x-fastest order. Its length is known, so what
    /// is collected from it is allocated once.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ([usize; 3], T)> + '_ {
        let [nx, ny, nz] = self.dims;
        let cells = (0..nz).flat_map(move |z| {
            (0..ny).flat_map(move |y| (0..nx).map(move |x| ([x, y, z], self.get(x, y, z))))
        });
        Counted {
            inner: cells,
            left: self.cells(),
        }
    }

    /// `max |self - other| / max |other|` over all cells: the relative error measure the tests
    /// and `bench --verify` use (`other` is the reference). Dimensions must match.
    pub fn max_rel_diff(&self, other: &Grid<T>) -> Result<f64> {
        if self.dims != other.dims {
            return Err(Error::InvalidArgument(format!(
                "cannot compare grids of sizes {:?} and {:?}",
                self.dims, other.dims
            )));
        }
        let mut d = RelDiff::default();
        for z in 0..self.dims[2] {
            for y in 0..self.dims[1] {
                d.add(self.row(y, z), other.row(y, z));
            }
        }
        Ok(d.value())
    }

    /// The first non-finite cell in x-fastest order, with its value. Planes are checked in
    /// parallel on the current rayon pool (the global one outside `ThreadPool::install`).
    pub fn find_non_finite(&self) -> Option<([usize; 3], f64)> {
        let [_, ny, nz] = self.dims;
        self.find_non_finite_in([0..ny, 0..nz])
    }

    /// [`Grid::find_non_finite`] among the rows `ys` of the planes `zs` (a split run's owned
    /// cells, whose halos the exchange refreshes).
    pub(crate) fn find_non_finite_in(
        &self,
        [ys, zs]: [std::ops::Range<usize>; 2],
    ) -> Option<([usize; 3], f64)> {
        let z = first_bad_plane(zs, |z| ys.clone().all(|y| all_finite(self.row(y, z))))?;
        let (x, y) = ys.clone().find_map(|y| {
            let x = self.row(y, z).iter().position(|v| !v.is_finite());
            x.map(|x| (x, y))
        })?;
        Some(([x, y, z], self.get(x, y, z).to_f64().unwrap_or(f64::NAN)))
    }

    /// Row stride in elements (>= nx, a whole number of cache lines).
    #[inline]
    pub(crate) fn pitch(&self) -> usize {
        self.pitch
    }

    /// Plane stride in elements.
    #[inline]
    pub(crate) fn plane_stride(&self) -> usize {
        self.plane
    }

    /// Panics unless row (y, z) lies in the grid.
    #[inline]
    fn check_row(&self, y: usize, z: usize) {
        let [_, ny, nz] = self.dims;
        assert!(
            y < ny && z < nz,
            "row ({y}, {z}) outside a grid of {ny} rows and {nz} planes"
        );
    }

    /// Linear index of (x, y, z) in the padded storage.
    #[inline]
    pub(crate) fn offset(&self, x: usize, y: usize, z: usize) -> usize {
        z * self.plane + y * self.pitch + x
    }

    /// The padded storage (rows `pitch` apart, planes `plane_stride` apart).
    #[inline]
    pub(crate) fn storage(&self) -> &[T] {
        &self.data
    }

    /// The padded storage, mutable.
    #[inline]
    pub(crate) fn storage_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The storage cut into its first `lo` planes, the planes between and its last `hi`
    /// planes (a split run's low halo, owned planes and high halo along z).
    pub(crate) fn planes_cut_mut(
        &mut self,
        [lo, hi]: [usize; 2],
    ) -> (&mut [T], &mut [T], &mut [T]) {
        let plane = self.plane;
        let (low, rest) = self.data.split_at_mut(lo * plane);
        let (mid, high) = rest.split_at_mut(rest.len() - hi * plane);
        (low, mid, high)
    }

    /// Exchanges the contents of two grids of the same shape in O(1) (engines ping-pong
    /// between the user's grid and a scratch grid and hand the final buffer back this way).
    pub(crate) fn swap_storage(&mut self, other: &mut Grid<T>) {
        debug_assert_eq!(self.dims, other.dims);
        std::mem::swap(&mut self.data, &mut other.data);
    }

    /// Copies every cell within `width` of a face of the grid from `src` (same shape).
    pub(crate) fn copy_boundary_from(&mut self, src: &Grid<T>, width: usize) {
        use rayon::prelude::*;
        let [nx, ny, nz] = self.dims;
        let (pitch, plane) = (self.pitch, self.plane);
        debug_assert_eq!((src.dims, src.pitch, src.plane), (self.dims, pitch, plane));
        // Every row has boundary cells (its x ends), so the copy touches every row of both
        // grids: planes go to the calling pool's threads.
        let dst = &mut self.data[..plane * nz];
        dst.par_chunks_mut(plane)
            .zip(src.data[..plane * nz].par_chunks(plane))
            .enumerate()
            .for_each(|(z, (d, s))| {
                for y in 0..ny {
                    let whole_row = z < width || z + width >= nz || y < width || y + width >= ny;
                    let (d, s) = (
                        &mut d[y * pitch..y * pitch + nx],
                        &s[y * pitch..y * pitch + nx],
                    );
                    if whole_row || 2 * width >= nx {
                        d.copy_from_slice(s);
                    } else {
                        d[..width].copy_from_slice(&s[..width]);
                        d[nx - width..].copy_from_slice(&s[nx - width..]);
                    }
                }
            });
    }
}

fn too_large(dims: [usize; 3]) -> Error {
    Error::InvalidArgument(format!(
        "a {}x{}x{} grid does not fit in memory",
        dims[0], dims[1], dims[2]
    ))
}

impl<T: Real> Index<[usize; 3]> for Grid<T> {
    type Output = T;
    #[inline]
    fn index(&self, [x, y, z]: [usize; 3]) -> &T {
        assert!(
            x < self.dims[0] && y < self.dims[1] && z < self.dims[2],
            "cell ({x}, {y}, {z}) is outside a {:?} grid",
            self.dims
        );
        &self.data[self.offset(x, y, z)]
    }
}

impl<T: Real> IndexMut<[usize; 3]> for Grid<T> {
    #[inline]
    fn index_mut(&mut self, [x, y, z]: [usize; 3]) -> &mut T {
        assert!(
            x < self.dims[0] && y < self.dims[1] && z < self.dims[2],
            "cell ({x}, {y}, {z}) is outside a {:?} grid",
            self.dims
        );
        let o = self.offset(x, y, z);
        &mut self.data[o]
    }
}

impl<T: Real> PartialEq for Grid<T> {
    /// Equal when the dimensions and every cell value are equal (padding is ignored).
    fn eq(&self, other: &Self) -> bool {
        self.dims == other.dims
            && (0..self.dims[2])
                .all(|z| (0..self.dims[1]).all(|y| self.row(y, z) == other.row(y, z)))
    }
}

/// An iterator that yields exactly `left` more items, and says so (nested `flat_map`s report
/// only their current row, so a `collect` would grow its buffer by doubling, to up to twice
/// the grid).
struct Counted<I> {
    inner: I,
    left: usize,
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next()?;
        self.left -= 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Counted<I> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_padded_and_aligned() {
        let g = Grid::<f32>::new([37, 29, 23]).unwrap();
        assert_eq!(g.pitch() % 16, 0);
        assert!(g.pitch() >= 37);
        assert_eq!(g.storage().as_ptr() as usize % 64, 0);
        let big = Grid::<f32>::new([1024, 4, 2]).unwrap();
        assert_ne!(
            big.pitch() * 4 % 4096,
            0,
            "rows 4 KiB apart alias in cache sets"
        );
    }

    #[test]
    fn par_from_fn_fills_every_cell_as_from_fn() {
        let f = |x: usize, y: usize, z: usize| (x * 7 + y * 131 + z * 1009) as f32;
        let dims = [37, 29, 23];
        let (a, b) = (
            Grid::from_fn(dims, f).unwrap(),
            Grid::par_from_fn(dims, f).unwrap(),
        );
        assert_eq!(a, b);
        assert_eq!(b.get(36, 28, 22), f(36, 28, 22));
    }

    /// A random grid is the same whatever the thread count, its values lie in `[lo, hi)`, and
    /// another seed gives other values.
    #[test]
    fn random_grids_do_not_depend_on_the_thread_count() {
        let dims = [19, 17, 13];
        let on = |threads: usize, seed: u64| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| Grid::<f64>::random(dims, -2.0, 3.0, seed).unwrap())
        };
        let one = on(1, 5);
        assert_eq!(one, on(3, 5));
        assert!(one.iter().all(|(_, v)| (-2.0..3.0).contains(&v)));
        let other = on(1, 6);
        assert!(one.iter().zip(other.iter()).all(|(a, b)| a.1 != b.1));
    }

    #[test]
    fn slice_round_trip_and_indexing() {
        let dims = [5, 3, 2];
        let data: Vec<f64> = (0..30).map(|i| i as f64).collect();
        let g = Grid::from_slice(dims, &data).unwrap();
        assert_eq!(g.to_vec(), data);
        assert_eq!(g.get(4, 2, 1), 29.0);
        assert_eq!(g[[1, 1, 0]], 6.0);
        assert!(Grid::<f64>::from_slice(dims, &data[1..]).is_err());
        assert!(Grid::<f64>::new([0, 1, 1]).is_err());
    }

    #[test]
    fn rel_diff_sees_nan() {
        let a = Grid::<f32>::random([4, 4, 4], 0.0, 1.0, 1).unwrap();
        let mut b = a.clone();
        assert_eq!(a.max_rel_diff(&b).unwrap(), 0.0);
        b.set(1, 2, 3, f32::NAN);
        assert!(b.max_rel_diff(&a).unwrap().is_nan());
        assert_eq!(b.find_non_finite().unwrap().0, [1, 2, 3]);
    }

    /// The parallel scan reports the first bad cell in x-fastest order, whichever plane a
    /// worker reaches first.
    #[test]
    fn the_first_non_finite_cell_is_found_among_many() {
        let mut g = Grid::<f64>::random([37, 9, 70], 0.0, 1.0, 3).unwrap();
        assert!(g.find_non_finite().is_none());
        g.set(30, 8, 61, f64::NAN);
        g.set(36, 0, 40, f64::NEG_INFINITY);
        g.set(2, 5, 40, f64::INFINITY);
        g.set(1, 5, 40, f64::NAN);
        let (cell, v) = g.find_non_finite().unwrap();
        assert_eq!(cell, [36, 0, 40]);
        assert_eq!(v, f64::NEG_INFINITY);
        g.set(36, 0, 40, 0.5);
        assert_eq!(g.find_non_finite().unwrap().0, [1, 5, 40]);
    }

    #[test]
    fn boundary_copy_touches_only_the_layer() {
        let src = Grid::<f64>::from_fn([6, 6, 6], |x, y, z| (x + 10 * y + 100 * z) as f64).unwrap();
        let mut dst = Grid::<f64>::new([6, 6, 6]).unwrap();
        dst.copy_boundary_from(&src, 1);
        for ([x, y, z], v) in dst.iter() {
            let inner = (1..5).contains(&x) && (1..5).contains(&y) && (1..5).contains(&z);
            assert_eq!(v, if inner { 0.0 } else { src.get(x, y, z) });
        }
    }
}
