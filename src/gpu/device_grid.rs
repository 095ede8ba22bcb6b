//! [`DeviceGrid`]: a grid kept in GPU memory, so several `run` calls (say, between outputs of a
//! long simulation) pay for the host-device transfers once.

use cudarc::driver::CudaSlice;

use super::device::gpu;
use super::stencil::{ensure_memory, gpu_err, Layout};
use crate::memory::Footprint;
use crate::{Error, Grid, Real, Result};

/// A grid resident in device memory, with the host grid's layout.
///
/// ```no_run
/// use stencil35d::{gpu::DeviceGrid, Engine, Grid, Plan, Solver, Stencil};
/// let stencil = Stencil::seven_point(0.4, 0.1);
/// let host = Grid::<f32>::random([256, 256, 256], 0.0, 1.0, 1).unwrap();
/// let plan = Plan::for_grid(&stencil, &host).unwrap().with_engine(Engine::GpuBlocked).unwrap();
/// let mut solver = Solver::new(plan);
/// let mut on_gpu = DeviceGrid::upload(&host).unwrap();
/// for _ in 0..10 {
///     solver.run(&mut on_gpu, 100).unwrap(); // no transfers
/// }
/// let result = on_gpu.download().unwrap();
/// ```
pub struct DeviceGrid<T: Real> {
    pub(crate) layout: Layout,
    pub(crate) data: CudaSlice<T>,
}

impl<T: Real> DeviceGrid<T> {
    /// Copies `grid` to the GPU. Fails with [`Error::NoGpu`] without one,
    /// [`Error::GpuOutOfMemory`] when it does not fit, [`Error::NonFiniteInput`] when it holds an
    /// infinity or NaN.
    pub fn upload(grid: &Grid<T>) -> Result<Self> {
        if let Some((cell, value)) = grid.find_non_finite() {
            return Err(Error::NonFiniteInput { cell, value });
        }
        Self::upload_scanned(grid)
    }

    /// [`DeviceGrid::upload`] of a grid its caller has already scanned for non-finite values.
    pub(crate) fn upload_scanned(grid: &Grid<T>) -> Result<Self> {
        let gpu = gpu()?;
        let layout = Layout {
            dims: grid.dims(),
            pitch: grid.pitch(),
            plane: grid.plane_stride(),
        };
        ensure_memory(gpu, &Footprint::grids(T::DTYPE, 1), layout.dims, 0)?;
        let data = gpu.stream.clone_htod(grid.storage()).map_err(gpu_err)?;
        Ok(DeviceGrid { layout, data })
    }

    /// `[nx, ny, nz]`.
    pub fn dims(&self) -> [usize; 3] {
        self.layout.dims
    }

    /// Copies the grid back into a new host grid.
    pub fn download(&self) -> Result<Grid<T>> {
        let mut grid = Grid::new(self.layout.dims)?;
        self.download_into(&mut grid)?;
        Ok(grid)
    }

    /// Copies the grid back into `grid` (same dimensions).
    pub fn download_into(&self, grid: &mut Grid<T>) -> Result<()> {
        if grid.dims() != self.layout.dims {
            return Err(Error::InvalidArgument(format!(
                "cannot download a {:?} device grid into a {:?} grid",
                self.layout.dims,
                grid.dims()
            )));
        }
        let gpu = gpu()?;
        gpu.stream
            .memcpy_dtoh(&self.data, grid.storage_mut())
            .map_err(gpu_err)?;
        gpu.stream.synchronize().map_err(gpu_err)
    }
}
