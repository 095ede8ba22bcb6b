//! [`Grid2`]: a 2D field or one-channel image of `f32` or `f64`, x fastest, every row on a
//! cache line.

use crate::{Grid, Real, Result};

/// A dense 2D grid of `T`: a [`Grid`] of dimensions `[nx, ny, 1]`, so every engine reads the
/// same aligned, padded rows as in 3D.
///
/// ```
/// use stencil35d::Grid2;
/// let mut img = Grid2::<f32>::new([640, 480]).unwrap();
/// img.set(3, 2, 1.5);
/// assert_eq!(img.get(3, 2), 1.5);
/// assert_eq!(img.dims(), [640, 480]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Grid2<T: Real> {
    grid: Grid<T>,
}

impl<T: Real> Grid2<T> {
    /// A grid of zeros with dimensions `[nx, ny]`. Errors as [`Grid::new`].
    pub fn new(dims: [usize; 2]) -> Result<Self> {
        Ok(Self {
            grid: Grid::new([dims[0], dims[1], 1])?,
        })
    }

    /// A grid whose cell (x, y) is `f(x, y)`.
    pub fn from_fn(dims: [usize; 2], mut f: impl FnMut(usize, usize) -> T) -> Result<Self> {
        Ok(Self {
            grid: Grid::from_fn([dims[0], dims[1], 1], |x, y, _| f(x, y))?,
        })
    }

    /// A grid from dense data in x-fastest order (`data.len() == nx * ny`).
    pub fn from_slice(dims: [usize; 2], data: &[T]) -> Result<Self> {
        Ok(Self {
            grid: Grid::from_slice([dims[0], dims[1], 1], data)?,
        })
    }

    /// Independent uniform random values in `[lo, hi)`, reproducible from `seed`.
    pub fn random(dims: [usize; 2], lo: f64, hi: f64, seed: u64) -> Result<Self> {
        Ok(Self {
            grid: Grid::random([dims[0], dims[1], 1], lo, hi, seed)?,
        })
    }

    /// `[nx, ny]`.
    pub fn dims(&self) -> [usize; 2] {
        let [nx, ny, _] = self.grid.dims();
        [nx, ny]
    }

    /// Number of cells, `nx * ny`.
    pub fn cells(&self) -> usize {
        self.grid.cells()
    }

    /// Value at (x, y). Panics when out of bounds, like slice indexing.
    #[inline]
    pub fn get(&self, x: usize, y: usize) -> T {
        self.grid.get(x, y, 0)
    }

    /// Sets the value at (x, y). Panics when out of bounds, like slice indexing.
    #[inline]
    pub fn set(&mut self, x: usize, y: usize, v: T) {
        self.grid.set(x, y, 0, v);
    }

    /// The `nx` values of row `y`.
    #[inline]
    pub fn row(&self, y: usize) -> &[T] {
        self.grid.row(y, 0)
    }

    /// The `nx` values of row `y`, mutable.
    #[inline]
    pub fn row_mut(&mut self, y: usize) -> &mut [T] {
        self.grid.row_mut(y, 0)
    }

    /// Sets every cell to `v`.
    pub fn fill(&mut self, v: T) {
        self.grid.fill(v);
    }

    /// The values in x-fastest order without padding.
    pub fn to_vec(&self) -> Vec<T> {
        self.grid.to_vec()
    }

    /// `max |self - other| / max |other|` (see [`Grid::max_rel_diff`]).
    pub fn max_rel_diff(&self, other: &Grid2<T>) -> Result<f64> {
        self.grid.max_rel_diff(&other.grid)
    }

    /// The first non-finite cell in x-fastest order, with its value.
    pub fn find_non_finite(&self) -> Option<([usize; 2], f64)> {
        self.grid
            .find_non_finite()
            .map(|([x, y, _], v)| ([x, y], v))
    }

    /// The same cells as a one-plane 3D grid (for the PNG and VTK writers, which take grids).
    pub fn as_grid(&self) -> &Grid<T> {
        &self.grid
    }

    /// The one-plane 3D grid, mutable.
    pub(crate) fn as_grid_mut(&mut self) -> &mut Grid<T> {
        &mut self.grid
    }

    /// A one-plane grid as a 2D grid; `None` when it has more than one plane.
    pub fn from_grid(grid: Grid<T>) -> Option<Self> {
        (grid.dims()[2] == 1).then_some(Self { grid })
    }

    /// The cells as a one-plane 3D grid.
    pub fn into_grid(self) -> Grid<T> {
        self.grid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_cells_follow_x_fastest_order() {
        let g = Grid2::<f64>::from_fn([5, 3], |x, y| (10 * y + x) as f64).unwrap();
        assert_eq!(g.row(2), &[20.0, 21.0, 22.0, 23.0, 24.0]);
        assert_eq!(g.to_vec().len(), 15);
        assert_eq!(Grid2::from_slice([5, 3], &g.to_vec()).unwrap(), g);
        assert!(Grid2::<f32>::new([0, 3]).is_err());
        assert!(Grid2::from_grid(Grid::<f32>::new([2, 2, 2]).unwrap()).is_none());
    }
}
