//! Strided copies of a box of whole rows between a device array and a packed buffer (on the
//! device or the host): the halo exchange of a grid or lattice that a split run keeps on the
//! GPU. A box is a y range by a z range of padded rows in one or more arrays a fixed stride
//! apart (a lattice's 19 populations); within a plane its rows are contiguous, so each array
//! takes one two-dimensional copy (`cuMemcpy2DAsync`), row padding included.

use std::ops::Range;

use cudarc::driver::sys::{self, CUmemorytype, CUDA_MEMCPY2D};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr};

use super::device::Gpu;
use super::stencil::gpu_err;
use crate::{Error, Result};

/// A box of whole padded rows in device arrays laid out like the host's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RowBox {
    /// Elements from one row to the next.
    pub(crate) pitch: usize,
    /// Elements from one plane to the next.
    pub(crate) plane: usize,
    /// Elements from one array to the next (any value when `arrays` is 1).
    pub(crate) array: usize,
    /// The first array the box spans (0 for the first of the layout's arrays).
    pub(crate) first: usize,
    /// Arrays the box spans from `first` on, each the same rows.
    pub(crate) arrays: usize,
    /// Rows in a plane (those a box of whole planes covers).
    pub(crate) rows: usize,
    /// Rows (local y) and planes (local z).
    pub(crate) ys: Range<usize>,
    pub(crate) zs: Range<usize>,
}

impl RowBox {
    /// The layout of `arrays` arrays `array` elements apart, `rows` rows `pitch` apart in a
    /// plane and planes `plane` apart, with an empty box: what [`RowBox`]es of faces are cut
    /// from.
    pub(crate) fn layout(
        pitch: usize,
        rows: usize,
        plane: usize,
        array: usize,
        arrays: usize,
    ) -> Self {
        RowBox {
            pitch,
            plane,
            array,
            first: 0,
            arrays,
            rows,
            ys: 0..0,
            zs: 0..0,
        }
    }

    /// The box as one contiguous range of the strided array, when it is one: a single array's
    /// rows in one plane, or whole planes (the padding between them included, which no kernel
    /// reads). NCCL sends from and receives into such a range without packing it.
    pub(crate) fn span(&self) -> Option<Range<usize>> {
        let whole_planes = self.ys == (0..self.rows);
        let one_piece = self.arrays == 1 && (self.zs.len() == 1 || whole_planes);
        (one_piece && self.len() > 0).then(|| self.start(0)..self.end())
    }

    /// Elements of one array's part of the box: its rows, padded, plane after plane.
    fn per_array(&self) -> usize {
        self.ys.len() * self.pitch * self.zs.len()
    }

    /// Elements the box holds, packed.
    pub(crate) fn len(&self) -> usize {
        self.per_array() * self.arrays
    }

    /// The element just past the box's last one in the strided array.
    fn end(&self) -> usize {
        if self.len() == 0 {
            return 0;
        }
        (self.first + self.arrays - 1) * self.array
            + (self.zs.end - 1) * self.plane
            + self.ys.end * self.pitch
    }

    /// The strided array's offset of array `a`'s first element in the box.
    fn start(&self, a: usize) -> usize {
        (self.first + a) * self.array + self.zs.start * self.plane + self.ys.start * self.pitch
    }
}

/// One side of a copy.
enum End {
    Device(sys::CUdeviceptr),
    Host(*mut std::ffi::c_void),
}

/// Copies the box between `strided` (the array laid out as `b` says) and `packed` (the box's
/// elements in order) in the direction `to_packed` says, `elem` bytes per element.
///
/// # Safety
/// The pointers must address at least `b.end()` (strided) and `b.len()` (packed) elements,
/// stay valid until the stream reaches the copies, and a host buffer must not be touched
/// until then.
unsafe fn copy_box(
    gpu: &Gpu,
    b: &RowBox,
    elem: usize,
    strided: End,
    packed: End,
    to_packed: bool,
) -> Result<()> {
    let width = b.ys.len() * b.pitch * elem;
    for a in 0..b.arrays {
        let strided_at = (&strided, b.start(a) * elem, b.plane * elem);
        let packed_at = (&packed, a * b.per_array() * elem, width);
        let (src, dst) = if to_packed {
            (strided_at, packed_at)
        } else {
            (packed_at, strided_at)
        };
        let (src_type, src_host, src_device) = place(src.0, src.1);
        let (dst_type, dst_host, dst_device) = place(dst.0, dst.1);
        let copy = CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src_type,
            srcHost: src_host.cast_const(),
            srcDevice: src_device,
            srcArray: std::ptr::null_mut(),
            srcPitch: src.2,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst_type,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstArray: std::ptr::null_mut(),
            dstPitch: dst.2,
            WidthInBytes: width,
            Height: b.zs.len(),
        };
        // SAFETY: the descriptor addresses the box inside both buffers (the caller's
        // contract), and the stream is the library's own.
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, gpu.stream.cu_stream()) }
            .result()
            .map_err(gpu_err)?;
    }
    Ok(())
}

/// The memory type and address `offset` bytes into `end`: a host pointer or a device address
/// (the other one null).
fn place(end: &End, offset: usize) -> (CUmemorytype, *mut std::ffi::c_void, sys::CUdeviceptr) {
    match *end {
        End::Device(p) => (
            CUmemorytype::CU_MEMORYTYPE_DEVICE,
            std::ptr::null_mut(),
            p + offset as u64,
        ),
        End::Host(p) => (
            CUmemorytype::CU_MEMORYTYPE_HOST,
            p.cast::<u8>().wrapping_add(offset).cast(),
            0,
        ),
    }
}

/// Errors unless `b` lies inside a strided array of `strided` elements and the packed buffer
/// holds `packed` elements, exactly the box's.
fn check(b: &RowBox, strided: usize, packed: usize) -> Result<()> {
    if b.end() > strided || b.len() != packed || b.ys.len() * b.pitch > b.plane {
        return Err(Error::Gpu(format!(
            "a halo box of {} elements ending at {} does not fit an array of {strided} and a \
             buffer of {packed}",
            b.len(),
            b.end()
        )));
    }
    Ok(())
}

/// Queues the copy of box `b` of `src` into the device buffer `packed`.
pub(crate) fn pack_on_device<T: DeviceRepr>(
    gpu: &Gpu,
    src: &CudaSlice<T>,
    b: &RowBox,
    packed: &mut CudaSlice<T>,
) -> Result<()> {
    check(b, src.len(), packed.len())?;
    let (s, _s) = src.device_ptr(&gpu.stream);
    let (p, _p) = packed.device_ptr_mut(&gpu.stream);
    // SAFETY: checked above that both device buffers hold the box; device memory stays
    // allocated while the stream works (the guards order later uses after the copy).
    unsafe { copy_box(gpu, b, size_of::<T>(), End::Device(s), End::Device(p), true) }
}

/// Queues the copy of the device buffer `packed` into box `b` of `dst`.
pub(crate) fn unpack_on_device<T: DeviceRepr>(
    gpu: &Gpu,
    packed: &CudaSlice<T>,
    b: &RowBox,
    dst: &mut CudaSlice<T>,
) -> Result<()> {
    check(b, dst.len(), packed.len())?;
    let (p, _p) = packed.device_ptr(&gpu.stream);
    let (d, _d) = dst.device_ptr_mut(&gpu.stream);
    // SAFETY: as in `pack_on_device`.
    unsafe {
        copy_box(
            gpu,
            b,
            size_of::<T>(),
            End::Device(d),
            End::Device(p),
            false,
        )
    }
}

/// Copies box `b` of `src` into `out` (host memory, `b.len()` elements) and waits for it.
pub(crate) fn pack_to_host<T: DeviceRepr>(
    gpu: &Gpu,
    src: &CudaSlice<T>,
    b: &RowBox,
    out: &mut [T],
) -> Result<()> {
    check(b, src.len(), out.len())?;
    let (s, _s) = src.device_ptr(&gpu.stream);
    let host = out.as_mut_ptr().cast();
    // SAFETY: checked above; the wait below keeps `out` borrowed until the copy is done.
    unsafe {
        copy_box(
            gpu,
            b,
            size_of::<T>(),
            End::Device(s),
            End::Host(host),
            true,
        )?
    };
    gpu.stream.synchronize().map_err(gpu_err)
}

/// Copies `data` (host memory, `b.len()` elements) into box `b` of `dst` and waits for it.
pub(crate) fn unpack_from_host<T: DeviceRepr>(
    gpu: &Gpu,
    data: &[T],
    b: &RowBox,
    dst: &mut CudaSlice<T>,
) -> Result<()> {
    check(b, dst.len(), data.len())?;
    let (d, _d) = dst.device_ptr_mut(&gpu.stream);
    // The copy only reads the host side.
    let host = data.as_ptr().cast_mut().cast();
    // SAFETY: checked above; the wait below keeps `data` borrowed until the copy is done.
    unsafe {
        copy_box(
            gpu,
            b,
            size_of::<T>(),
            End::Device(d),
            End::Host(host),
            false,
        )?
    };
    gpu.stream.synchronize().map_err(gpu_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_spans_its_rows_in_every_array() {
        let b = RowBox {
            ys: 2..5,
            zs: 1..4,
            ..RowBox::layout(16, 9, 16 * 10, 16 * 10 * 8, 3)
        };
        assert_eq!(b.len(), 3 * 16 * 3 * 3);
        assert_eq!(b.start(2), 2 * 1280 + 160 + 32);
        // The last array's last plane's last row ends at y = 5.
        assert_eq!(b.end(), 2 * 1280 + 3 * 160 + 5 * 16);
        assert!(check(&b, 3 * 1280, b.len()).is_ok());
        assert!(check(&b, b.end() - 1, b.len()).is_err());
        assert!(check(&b, 3 * 1280, b.len() + 1).is_err());
        // Three arrays are never one piece.
        assert_eq!(b.span(), None);
    }

    #[test]
    fn a_box_from_a_later_array_starts_there() {
        let b = RowBox {
            first: 5,
            arrays: 2,
            ys: 0..9,
            zs: 3..4,
            ..RowBox::layout(16, 9, 16 * 10, 16 * 10 * 8, 19)
        };
        assert_eq!(b.start(0), 5 * 1280 + 3 * 160);
        assert_eq!(b.end(), 6 * 1280 + 3 * 160 + 9 * 16);
        assert_eq!(b.span(), None);
        let one = RowBox { arrays: 1, ..b };
        assert_eq!(one.span(), Some(one.start(0)..one.start(0) + 9 * 16));
    }

    #[test]
    fn only_one_plane_or_whole_planes_of_one_array_are_one_piece() {
        let layout = RowBox::layout(16, 9, 16 * 10, 0, 1);
        let cut = |ys: Range<usize>, zs: Range<usize>| RowBox {
            ys,
            zs,
            ..layout.clone()
        };
        // Whole planes: the padding row between planes (the tenth) comes along.
        assert_eq!(cut(0..9, 2..5).span(), Some(320..4 * 160 + 144));
        assert_eq!(cut(0..9, 2..5).span().map(|r| r.len()), Some(2 * 160 + 144));
        // Part of one plane.
        assert_eq!(cut(3..5, 7..8).span(), Some(7 * 160 + 48..7 * 160 + 80));
        // Part of several planes: rows with gaps between them.
        assert_eq!(cut(0..8, 2..5).span(), None);
        assert_eq!(cut(1..9, 2..5).span(), None);
        assert_eq!(cut(0..9, 2..2).span(), None);
    }
}
