//! Halo exchanges between ranks whose local arrays live on their GPUs for a whole run: each
//! pass moves only the halo faces, so a local array crosses the bus twice per run (up at the
//! start, down at the end) instead of twice per pass. The faces travel device to device
//! through NCCL where every rank has a GPU of its own and NCCL loads, else through host
//! buffers and MPI; the `gpu_halos` tuning knob forces either.

use std::hash::{Hash, Hasher};
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use super::agree::agreed;
use super::exchange::{faces, swap_faces, FaceRegion};
use super::{Block, Decomposition};
use crate::gpu::gpu;
use crate::gpu::regions::RowBox;
use crate::gpu::regions::{pack_on_device, pack_to_host, unpack_from_host, unpack_on_device};
use crate::gpu::stencil::{gpu_err, PassHooks};
use crate::tuning::{GpuHalos, Tuning};
use crate::{Error, Real, Result};

/// How the faces travel between the ranks' GPUs.
pub(crate) enum Link {
    /// Device to device through an NCCL communicator over the same ranks.
    Nccl(NcclComm),
    /// Device to host, MPI between hosts' buffers, host to device.
    Host,
}

/// An NCCL communicator, aborted on drop (which never waits for the other ranks).
pub(crate) struct NcclComm(nccl_sys::ncclComm_t);

impl Drop for NcclComm {
    fn drop(&mut self) {
        // SAFETY: the communicator was initialised by `comm_init_rank` and is dropped once.
        let _ = unsafe { nccl::comm_abort(self.0) };
    }
}

/// The packed send and receive buffers of one axis's faces, one pair per face.
type Packed<B> = Vec<(B, B)>;

/// The packed send buffers of one axis's faces and, apart, their receive buffers (as MPI
/// takes them).
type HostFaces<T> = (Vec<Vec<T>>, Vec<Vec<T>>);

/// What a split state keeps on the rank between runs on the GPU: the link and the packed face
/// buffers (on the device for NCCL, on the host otherwise), per axis.
pub(crate) struct DeviceHalos<T> {
    link: Link,
    device: [Packed<CudaSlice<T>>; 2],
    host: [HostFaces<T>; 2],
}

impl<T> DeviceHalos<T> {
    /// The path the halos take.
    pub(crate) fn path(&self) -> GpuHalos {
        match self.link {
            Link::Nccl(_) => GpuHalos::Nccl,
            Link::Host => GpuHalos::Host,
        }
    }
}

impl<T: Real + Equivalence> DeviceHalos<T> {
    /// The halos a split state kept in `slot` from an earlier run on the GPU (taken out),
    /// else newly opened. Collective when it opens.
    pub(crate) fn kept_or_open(slot: &mut Option<Self>, comm: &SimpleCommunicator) -> Result<Self> {
        match slot.take() {
            Some(halos) => Ok(halos),
            None => Self::open(comm),
        }
    }

    /// Chooses the link, the same on every rank, and opens it. Collective.
    pub(crate) fn open(comm: &SimpleCommunicator) -> Result<Self> {
        let link = match Tuning::current().gpu_halos {
            Some(GpuHalos::Host) => Link::Host,
            Some(GpuHalos::Nccl) => nccl_link(comm)?,
            // NCCL failing to open fails on every rank alike (agreed): all take the host path.
            None if agreed_bool(comm, nccl_possible(comm)) => nccl_link(comm).unwrap_or(Link::Host),
            None => Link::Host,
        };
        Ok(DeviceHalos {
            link,
            device: [Vec::new(), Vec::new()],
            host: Default::default(),
        })
    }

    /// Refreshes every halo cell of `data` (arrays laid out as `layout` says, the local
    /// arrays of this rank of `d`) from the rank that owns it: faces across y, then across z
    /// over the whole local y extent, as the host exchange orders them. Collective. Through
    /// NCCL the exchange is queued on the library's stream and returns at once; through host
    /// memory it returns once the device has the halos.
    pub(crate) fn exchange(
        &mut self,
        comm: &SimpleCommunicator,
        d: &Decomposition,
        block: &Block,
        layout: &RowBox,
        data: &mut CudaSlice<T>,
    ) -> Result<()> {
        for axis in 0..2 {
            let faces = faces(d, block, comm.rank() as usize, axis);
            if faces.is_empty() {
                continue;
            }
            let boxes: Vec<[RowBox; 2]> = faces
                .iter()
                .map(|(_, _, send, recv)| [boxed(layout, send), boxed(layout, recv)])
                .collect();
            match &self.link {
                Link::Nccl(link) => {
                    let buffers = &mut self.device[axis];
                    nccl_axis(link, &faces, &boxes, buffers, data)?;
                }
                Link::Host => {
                    let (sends, recvs) = &mut self.host[axis];
                    host_axis(comm, &faces, &boxes, sends, recvs, data)?;
                }
            }
        }
        Ok(())
    }
}

/// The hooks of a split state's run on the device (a grid, lattice or wavefield): a halo
/// exchange of each array the next pass reads, queued before the pass (timed on the device by
/// a pair of events), and the ranks' agreement on each batch's outcome.
pub(crate) struct SplitHooks<'a, T> {
    comm: &'a SimpleCommunicator,
    decomposition: &'a Decomposition,
    block: &'a Block,
    /// The local arrays' layout (its `ys` and `zs` unused).
    layout: RowBox,
    halos: &'a mut DeviceHalos<T>,
    /// Events before and after each exchange.
    marks: Vec<(CudaEvent, CudaEvent)>,
    /// Seconds spent agreeing on batch outcomes (waiting for the slowest rank included).
    agreeing: f64,
}

impl<'a, T: Real + Equivalence> SplitHooks<'a, T> {
    /// Hooks for this rank's block `block` of `decomposition`, its local array laid out as
    /// `layout`.
    pub(crate) fn new(
        comm: &'a SimpleCommunicator,
        decomposition: &'a Decomposition,
        block: &'a Block,
        layout: RowBox,
        halos: &'a mut DeviceHalos<T>,
    ) -> Self {
        SplitHooks {
            comm,
            decomposition,
            block,
            layout,
            halos,
            marks: Vec::new(),
            agreeing: 0.0,
        }
    }

    /// Seconds the run spent exchanging halos (device time between each exchange's events)
    /// and agreeing on outcomes. Call after the run, when the device has passed every event.
    pub(crate) fn communication_seconds(&self) -> f64 {
        let exchanging: f64 = self
            .marks
            .iter()
            .filter_map(|(a, b)| a.elapsed_ms(b).ok())
            .map(|ms| f64::from(ms) / 1e3)
            .sum();
        exchanging + self.agreeing
    }
}

impl<T: Real + Equivalence> PassHooks<T> for SplitHooks<'_, T> {
    fn before_pass(&mut self, arrays: &mut [&mut CudaSlice<T>]) -> Result<()> {
        let stream = &gpu()?.stream;
        let mark = || {
            stream
                .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(gpu_err)
        };
        let start = mark()?;
        let (c, d, b) = (self.comm, self.decomposition, self.block);
        for data in arrays.iter_mut() {
            self.halos.exchange(c, d, b, &self.layout, data)?;
        }
        self.marks.push((start, mark()?));
        Ok(())
    }

    fn after_batch(&mut self, outcome: Result<()>) -> Result<()> {
        let t = Instant::now();
        let agreed = agreed(self.comm, outcome);
        self.agreeing += t.elapsed().as_secs_f64();
        agreed
    }

    fn alone(&self) -> bool {
        false
    }
}

/// The box of rows a face covers in arrays laid out as `layout`.
fn boxed(layout: &RowBox, face: &FaceRegion) -> RowBox {
    RowBox {
        ys: face.region[0].clone(),
        zs: face.region[1].clone(),
        ..layout.clone()
    }
}

/// Sends and receives one axis's faces device to device. Every send is posted before any
/// receive in one NCCL group, sends in side order and receives in the opposite order: between
/// two ranks that are neighbours on both sides (a periodic axis split in two) NCCL matches
/// messages in posting order, and a rank's low face is its neighbour's high halo.
fn nccl_axis<T: Real>(
    link: &NcclComm,
    faces: &[(usize, usize, FaceRegion, FaceRegion)],
    boxes: &[[RowBox; 2]],
    buffers: &mut Packed<CudaSlice<T>>,
    data: &mut CudaSlice<T>,
) -> Result<()> {
    let gpu = gpu()?;
    buffers.truncate(faces.len());
    for (i, [send, recv]) in boxes.iter().enumerate() {
        let fits = buffers
            .get(i)
            .is_some_and(|(out, into)| out.len() == send.len() && into.len() == recv.len());
        if !fits {
            let alloc = |n| gpu.stream.alloc_zeros::<T>(n).map_err(gpu_err);
            let pair = (alloc(send.len())?, alloc(recv.len())?);
            if i < buffers.len() {
                buffers[i] = pair;
            } else {
                buffers.push(pair);
            }
        }
        pack_on_device(gpu, data, send, &mut buffers[i].0)?;
    }
    let stream = gpu.stream.cu_stream() as nccl_sys::cudaStream_t;
    let bytes = |n: usize| n * size_of::<T>();
    let peer = |i: usize| faces[i].1 as i32;
    nccl::group_start().map_err(nccl_err)?;
    for (i, (out, _)) in buffers.iter().enumerate() {
        let (ptr, _guard) = cudarc::driver::DevicePtr::device_ptr(out, &gpu.stream);
        // SAFETY: `ptr` addresses `out.len()` elements of device memory that stay allocated
        // until the stream, which the send is queued on, has sent them.
        unsafe {
            nccl::send(
                ptr as _,
                bytes(out.len()),
                nccl_sys::ncclDataType_t::ncclUint8,
                peer(i),
                link.0,
                stream,
            )
        }
        .map_err(nccl_err)?;
    }
    for (i, (_, into)) in buffers.iter_mut().enumerate().rev() {
        let len = into.len();
        let (ptr, _guard) = cudarc::driver::DevicePtrMut::device_ptr_mut(into, &gpu.stream);
        // SAFETY: as for the sends, the buffer holding `len` elements the message fills.
        unsafe {
            nccl::recv(
                ptr as _,
                bytes(len),
                nccl_sys::ncclDataType_t::ncclUint8,
                peer(i),
                link.0,
                stream,
            )
        }
        .map_err(nccl_err)?;
    }
    nccl::group_end().map_err(nccl_err)?;
    for ([_, recv], (_, into)) in boxes.iter().zip(buffers.iter()) {
        unpack_on_device(gpu, into, recv, data)?;
    }
    Ok(())
}

/// Sends and receives one axis's faces through host buffers and MPI.
fn host_axis<T: Real + Equivalence>(
    comm: &SimpleCommunicator,
    faces: &[(usize, usize, FaceRegion, FaceRegion)],
    boxes: &[[RowBox; 2]],
    sends: &mut Vec<Vec<T>>,
    recvs: &mut Vec<Vec<T>>,
    data: &mut CudaSlice<T>,
) -> Result<()> {
    let gpu = gpu()?;
    sends.resize_with(faces.len(), Vec::new);
    recvs.resize_with(faces.len(), Vec::new);
    for ([send, recv], (out, into)) in boxes.iter().zip(sends.iter_mut().zip(recvs.iter_mut())) {
        out.resize(send.len(), T::zero());
        into.resize(recv.len(), T::zero());
        pack_to_host(gpu, data, send, out)?;
    }
    swap_faces(comm, faces, sends, recvs);
    for ([_, recv], into) in boxes.iter().zip(recvs.iter()) {
        unpack_from_host(gpu, into, recv, data)?;
    }
    Ok(())
}

fn nccl_err(e: impl std::fmt::Debug) -> Error {
    Error::Gpu(format!("NCCL: {e:?}"))
}

/// Whether NCCL loads here and this rank's GPU is no other rank's (NCCL refuses two ranks on
/// one device). Collective.
fn nccl_possible(comm: &SimpleCommunicator) -> bool {
    // SAFETY: only probes whether the library can be loaded.
    let loads = unsafe { nccl_sys::is_culib_present() };
    // Every rank takes part in the gather, with or without a device of its own.
    let device = gpu().map(|g| g.ctx.ordinal() as u64);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    mpi::environment::processor_name()
        .unwrap_or_default()
        .hash(&mut hasher);
    let mine = [hasher.finish(), *device.as_ref().unwrap_or(&u64::MAX)];
    let mut all = vec![0u64; 2 * comm.size() as usize];
    comm.all_gather_into(&mine[..], &mut all[..]);
    let mut seen: Vec<&[u64]> = all.chunks(2).collect();
    seen.sort();
    seen.dedup();
    loads && device.is_ok() && seen.len() == comm.size() as usize
}

/// Whether `mine` holds on every rank. Collective.
fn agreed_bool(comm: &SimpleCommunicator, mine: bool) -> bool {
    let mut all = 0u8;
    comm.all_reduce_into(&u8::from(mine), &mut all, SystemOperation::min());
    all == 1
}

/// Opens an NCCL communicator over the ranks of `comm`: rank 0 makes the unique id and
/// broadcasts it. Collective; a failure on any rank fails every rank.
fn nccl_link(comm: &SimpleCommunicator) -> Result<Link> {
    // SAFETY: only probes whether the library can be loaded (calling into a missing one
    // would panic).
    let loads = unsafe { nccl_sys::is_culib_present() };
    if !agreed_bool(comm, loads) {
        return Err(Error::NoGpu(
            "NCCL (libnccl.so.2) does not load on every rank: set gpu_halos=host".into(),
        ));
    }
    let device = agreed(comm, gpu())?;
    let mut id = [0 as std::ffi::c_char; 128];
    let made = if comm.rank() == 0 {
        nccl::get_uniqueid()
            .map(|u| id = u.internal)
            .map_err(nccl_err)
    } else {
        Ok(())
    };
    agreed(comm, made)?;
    let mut bytes = id.map(|c| c as u8);
    comm.process_at_rank(0).broadcast_into(&mut bytes[..]);
    let id = nccl_sys::ncclUniqueId {
        internal: bytes.map(|b| b as std::ffi::c_char),
    };
    // The communicator queues its work on the library's stream, in the device's context.
    let opened = device.ctx.bind_to_thread().map_err(gpu_err).and_then(|()| {
        let mut raw = std::mem::MaybeUninit::uninit();
        // SAFETY: `raw` receives the communicator; the id is rank 0's, every rank passes its
        // own rank and the same size.
        unsafe { nccl::comm_init_rank(raw.as_mut_ptr(), comm.size(), id, comm.rank()) }
            .map(|_| {
                // SAFETY: initialised by the successful call above.
                NcclComm(unsafe { raw.assume_init() })
            })
            .map_err(nccl_err)
    });
    Ok(Link::Nccl(agreed(comm, opened)?))
}
