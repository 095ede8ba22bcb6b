//! The step's bookkeeping the wave engines share: the scratch buffers, the sources added to a
//! new time level, the rotation of time levels, the receivers' samples, the failure report,
//! and raw access to grids for threads writing disjoint rows.

use std::sync::Mutex;

use crate::aligned::AlignedBuf;
use crate::engine::Failure;
#[cfg(feature = "mpi")]
use crate::wave::rigid::settle_rigid_faces;
use crate::wave::{sample_into, Wavefield};
use crate::{Grid, Real};

/// The solver's buffers for a wave run: the next `u`, the next `φ`, and (blocked passes) the
/// next `u^{n−1}`. Same dimensions as the field; boundary layers and inner `φ` stay zero. And
/// the blocked engine's ring buffers, one per worker thread, kept between passes and runs (a
/// distributed run's passes are runs of their own).
pub(crate) struct WaveScratch<T: Real> {
    pub(crate) u: Grid<T>,
    pub(crate) phi: Grid<T>,
    pub(crate) prev: Grid<T>,
    pub(crate) rings: Vec<Mutex<Option<AlignedBuf<T>>>>,
}

impl<T: Real> WaveScratch<T> {
    /// Zeroed buffers for `dims` (the caller checked the memory).
    pub(crate) fn new(dims: [usize; 3]) -> crate::Result<Self> {
        Ok(WaveScratch {
            u: Grid::unchecked(dims)?,
            phi: Grid::unchecked(dims)?,
            prev: Grid::unchecked(dims)?,
            rings: Vec::new(),
        })
    }

    /// The dimensions.
    pub(crate) fn dims(&self) -> [usize; 3] {
        self.u.dims()
    }
}

/// Adds the sources of step `field.step` to the new `u` in `scratch`; returns whether the
/// values it added to are still finite.
pub(crate) fn inject<T: Real>(field: &Wavefield<T>, scratch: &mut WaveScratch<T>) -> bool {
    let mut finite = true;
    for tap in &field.injections {
        let [x, y, z] = tap.cell;
        let v = scratch.u.get(x, y, z) + field.injected(tap, field.step);
        scratch.u.set(x, y, z, v);
        finite &= v.is_finite();
    }
    finite
}

/// Ends a step whose new `u` (sources added) and `φ` are in `scratch`: rotates the time
/// levels (`u^{n−1} ← u^n ← u^{n+1}`) and records the receivers.
pub(crate) fn advance<T: Real>(field: &mut Wavefield<T>, scratch: &mut WaveScratch<T>) {
    field.u.swap_storage(&mut scratch.u);
    field.prev.swap_storage(&mut scratch.u);
    field.phi.swap_storage(&mut scratch.phi);
    field.step += 1;
    record(field);
}

/// Takes back the last `steps` steps of `field`, whose input `scratch` holds: a blocked pass
/// (`blocked`), which writes every level of its output apart and swaps them all in, or else
/// the one step (`steps` is 1) that [`advance`] rotated in. The step count and the traces go
/// back with them, and rigid faces' boundary layers are zeroed again, as a run leaves them.
#[cfg(feature = "mpi")]
pub(crate) fn take_back<T: Real>(
    field: &mut Wavefield<T>,
    scratch: &mut WaveScratch<T>,
    steps: usize,
    blocked: bool,
) {
    if blocked {
        field.u.swap_storage(&mut scratch.u);
        field.prev.swap_storage(&mut scratch.prev);
    } else {
        // `advance` left u^{n+1} in `u`, u^n in `prev` and u^{n-1} in the scratch's `u`.
        field.prev.swap_storage(&mut scratch.u);
        field.u.swap_storage(&mut scratch.u);
    }
    field.phi.swap_storage(&mut scratch.phi);
    field.step -= steps;
    for trace in &mut field.traces {
        trace.truncate(trace.len().saturating_sub(steps));
    }
    settle_rigid_faces(field);
}

/// Appends the receivers' samples of the current `u` to their traces.
pub(crate) fn record<T: Real>(field: &mut Wavefield<T>) {
    let mut samples = vec![0.0; field.traces.len()];
    sample_into(&field.u, &field.probes, &mut samples);
    for (trace, s) in field.traces.iter_mut().zip(samples) {
        trace.push(s);
    }
}

/// The failure of step `step` whose outputs are in `scratch`: the first non-finite updated
/// cell of the new `u` or `φ`.
pub(crate) fn failure<T: Real>(scratch: &WaveScratch<T>, r: usize, step: usize) -> Failure {
    let f = Failure::locate(&scratch.u, r, step);
    if f.value.is_nan() && scratch.u.get(f.cell[0], f.cell[1], f.cell[2]).is_finite() {
        return Failure::locate(&scratch.phi, r, step);
    }
    f
}

/// A grid's storage as a raw base pointer with its strides, shareable among the threads that
/// write disjoint rows of it.
#[derive(Clone, Copy)]
pub(crate) struct GridPtr<T> {
    base: *mut T,
    pitch: usize,
    plane: usize,
}

// SAFETY: threads sharing a `GridPtr` read rows nobody writes during the sweep and write
// disjoint rows (each engine's contract).
unsafe impl<T> Send for GridPtr<T> {}
// SAFETY: as for `Send`.
unsafe impl<T> Sync for GridPtr<T> {}

impl<T: Real> GridPtr<T> {
    /// Read access to `g`.
    pub(crate) fn of(g: &Grid<T>) -> Self {
        GridPtr {
            base: g.storage().as_ptr().cast_mut(),
            pitch: g.pitch(),
            plane: g.plane_stride(),
        }
    }

    /// Write access to `g`.
    pub(crate) fn of_mut(g: &mut Grid<T>) -> Self {
        GridPtr {
            base: g.storage_mut().as_mut_ptr(),
            pitch: g.pitch(),
            plane: g.plane_stride(),
        }
    }

    /// Plane `z`'s origin and row pitch, for a plane's rows located one multiply-add each.
    #[inline(always)]
    pub(crate) fn plane_origin(&self, z: usize) -> (*mut T, usize) {
        (self.base.wrapping_add(z * self.plane), self.pitch)
    }

    /// Column 0 of row `(y, z)`.
    #[inline(always)]
    pub(crate) fn row(&self, y: usize, z: usize) -> *mut T {
        self.base.wrapping_add(z * self.plane + y * self.pitch)
    }
}
