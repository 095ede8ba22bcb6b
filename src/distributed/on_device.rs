//! Halo exchanges between ranks whose local arrays live on their GPUs for a whole run: each
//! pass moves only the halo faces, so a local array crosses the bus twice per run (up at the
//! start, down at the end) instead of twice per pass. The faces travel device to device
//! through NCCL where every rank has a GPU of its own and NCCL loads, else through host
//! buffers and MPI; the `gpu_halos` tuning knob forces either. Through NCCL the z faces of a
//! gpu-blocked grid or wavefield pass, or of a lattice step, travel on a stream of their own
//! while the pass computes the planes that need no halo (`gpu_overlap`).

use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::time::Instant;

use cudarc::driver::result as driver;
use cudarc::driver::sys::{CUevent_flags, CUevent_wait_flags, CUstream};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use super::agree::agreed;
use super::exchange::{faces, populations, swap_faces, FaceRegion, Waiting};
use super::{Block, Decomposition};
use crate::gpu::gpu;
use crate::gpu::regions::RowBox;
use crate::gpu::regions::{pack_on_device, pack_to_host, unpack_from_host, unpack_on_device};
use crate::gpu::stencil::{gpu_err, PassHooks};
use crate::gpu::zplanes::InFlight;
use crate::tuning::{GpuHalos, Tuning};
use crate::{Error, Result};

/// What a halo exchange between GPUs moves: a grid's or wavefield's values, a lattice's
/// populations in its own precision, or their 16-bit codes.
pub(crate) trait HaloElem:
    DeviceRepr + ValidAsZeroBits + Equivalence + Copy + Default + Send + Sync + 'static
{
}

impl<E> HaloElem for E where
    E: DeviceRepr + ValidAsZeroBits + Equivalence + Copy + Default + Send + Sync + 'static
{
}

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

/// One axis's packed buffers on the device: for each message sent and, apart, each received,
/// a buffer where its box is not one piece of the array (`None` where it is).
type Staging<T> = (Vec<Option<CudaSlice<T>>>, Vec<Option<CudaSlice<T>>>);

/// The packed send buffers of one axis's faces and, apart, their receive buffers (as MPI
/// takes them).
type HostFaces<T> = (Vec<Vec<T>>, Vec<Vec<T>>);

/// What a split state keeps on the rank between runs on the GPU: the link and the packed face
/// buffers (on the device for NCCL, on the host otherwise), per axis.
pub(crate) struct DeviceHalos<T> {
    link: Link,
    device: [Staging<T>; 2],
    host: [HostFaces<T>; 2],
    /// The stream z faces travel on beside a pass, made at the first such exchange.
    side: Option<SideStream>,
}

/// A stream of the library's device context that cudarc does not know of, destroyed on drop.
/// The context then keeps cudarc's one-stream bookkeeping: with a second cudarc stream,
/// every use of an array would be ordered after its last use on any stream, and the pass
/// would wait for the exchange that fills the same array's halos.
struct SideStream(CUstream);

impl SideStream {
    /// A stream of the greatest priority: the exchange's NCCL kernels take SMs as the pass's
    /// blocks retire, instead of queuing behind every block of the pass launched before them.
    fn new() -> Result<Self> {
        gpu()?.ctx.bind_to_thread().map_err(gpu_err)?;
        let (_, greatest) = driver::stream::get_priority_range().map_err(gpu_err)?;
        driver::stream::create_with_priority(driver::stream::StreamKind::NonBlocking, greatest)
            .map(SideStream)
            .map_err(gpu_err)
    }

    /// Records `event` after the work queued on this stream so far.
    fn record(&self, event: &CudaEvent) -> Result<()> {
        // SAFETY: both handles are live: the event is borrowed, the stream owned by `self`.
        unsafe { driver::event::record(event.cu_event(), self.0) }.map_err(gpu_err)
    }

    /// Makes this stream's later work wait for `event`.
    fn wait(&self, event: &CudaEvent) -> Result<()> {
        let flags = CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT;
        // SAFETY: as for `record`.
        unsafe { driver::stream::wait_event(self.0, event.cu_event(), flags) }.map_err(gpu_err)
    }
}

impl Drop for SideStream {
    fn drop(&mut self) {
        // SAFETY: made by `stream::create_with_priority` and destroyed once; work still queued on it
        // completes first (the driver releases the stream afterwards).
        let _ = unsafe { driver::stream::destroy(self.0) };
    }
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

impl<T: HaloElem> DeviceHalos<T> {
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
            device: Default::default(),
            host: Default::default(),
            side: None,
        })
    }

    /// Refreshes every halo cell of `data` (arrays laid out as `layout` says, the local
    /// arrays of this rank of `d`) that the next pass reads, cut as `cut` says, from the rank
    /// that owns it: faces across y, then across z over the whole local y extent, as the host
    /// exchange orders them. Collective. Through NCCL the exchange is queued on the library's
    /// stream and returns at once; through host memory it returns once the device has the
    /// halos.
    pub(crate) fn exchange(
        &mut self,
        comm: &SimpleCommunicator,
        d: &Decomposition,
        block: &Block,
        (layout, cut): (&RowBox, Cut),
        data: &mut CudaSlice<T>,
    ) -> Result<()> {
        for axis in 0..2 {
            self.exchange_axis(comm, (d, block), (layout, cut), data, axis, false)?;
        }
        Ok(())
    }

    /// The faces across `axis` of [`DeviceHalos::exchange`], queued on the side stream
    /// (which must be possible: see [`DeviceHalos::beside`]) when `beside` is set.
    fn exchange_axis(
        &mut self,
        comm: &SimpleCommunicator,
        (d, block): (&Decomposition, &Block),
        (layout, cut): (&RowBox, Cut),
        data: &mut CudaSlice<T>,
        axis: usize,
        beside: bool,
    ) -> Result<()> {
        let faces = faces(d, block, comm.rank() as usize, axis);
        if faces.is_empty() {
            return Ok(());
        }
        let split: Vec<FaceParts> = faces
            .iter()
            .map(|(_, peer, send, recv)| FaceParts {
                peer: *peer,
                send: parts(layout, send, cut),
                recv: parts(layout, recv, cut),
            })
            .collect();
        let stream = if beside {
            self.side()?.0
        } else {
            gpu()?.stream.cu_stream()
        };
        match &self.link {
            Link::Nccl(link) => {
                nccl_axis(link, &split, &mut self.device[axis], data, (stream, beside))
            }
            Link::Host => {
                let (sends, recvs) = &mut self.host[axis];
                host_axis(comm, &faces, &split, sends, recvs, data)
            }
        }
    }

    /// The side stream, made on first use.
    fn side(&mut self) -> Result<&SideStream> {
        match &mut self.side {
            Some(side) => Ok(side),
            side => Ok(side.insert(SideStream::new()?)),
        }
    }

    /// Makes the side stream's later work wait for `event`.
    fn side_wait(&mut self, event: &CudaEvent) -> Result<()> {
        self.side()?.wait(event)
    }

    /// An event with timing recorded after the work queued on the side stream so far.
    fn side_mark(&mut self) -> Result<CudaEvent> {
        let event = gpu()?
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(gpu_err)?;
        self.side()?.record(&event)?;
        Ok(event)
    }

    /// The z-halo planes left in flight when this rank's z faces of arrays laid out as
    /// `layout`, cut as `cut`, travel beside a pass: through NCCL, straight from and into
    /// the arrays (nothing to pack), unless the `gpu_overlap` knob says no. Nothing when
    /// they cannot, or the block has no z neighbour.
    pub(crate) fn beside(
        &self,
        (d, block, rank): (&Decomposition, &Block, usize),
        layout: &RowBox,
        cut: Cut,
    ) -> InFlight {
        let through_nccl = matches!(self.link, Link::Nccl(_));
        if !through_nccl || Tuning::current().gpu_overlap == Some(false) {
            return InFlight::NONE;
        }
        let faces = faces(d, block, rank, 1);
        let whole = |f: &FaceRegion| parts(layout, f, cut).iter().all(|b| b.span().is_some());
        if !faces
            .iter()
            .all(|(_, _, send, recv)| whole(send) && whole(recv))
        {
            return InFlight::NONE;
        }
        let nz = block.local_len(1);
        faces
            .iter()
            .fold(InFlight::NONE, |f, (side, _, _, recv)| match side {
                0 => InFlight {
                    lo: recv.region[1].end,
                    ..f
                },
                _ => InFlight {
                    hi: nz - recv.region[1].start,
                    ..f
                },
            })
    }
}

/// A split lattice's halos between GPUs, kept between runs: of its populations, or of their
/// 16-bit codes (its storage decides which, for its whole life).
pub(crate) enum LatticeHalos<T> {
    /// Populations in the lattice's own precision.
    Native(DeviceHalos<T>),
    /// 16-bit codes.
    Codes(DeviceHalos<u16>),
}

impl<T> LatticeHalos<T> {
    /// The path the halos take.
    pub(crate) fn path(&self) -> GpuHalos {
        match self {
            LatticeHalos::Native(h) => h.path(),
            LatticeHalos::Codes(h) => h.path(),
        }
    }

    /// The halos of populations, if these are.
    pub(crate) fn native(self) -> Option<DeviceHalos<T>> {
        match self {
            LatticeHalos::Native(h) => Some(h),
            LatticeHalos::Codes(_) => None,
        }
    }

    /// The halos of codes, if these are.
    pub(crate) fn codes(self) -> Option<DeviceHalos<u16>> {
        match self {
            LatticeHalos::Codes(h) => Some(h),
            LatticeHalos::Native(_) => None,
        }
    }
}

/// What of a face travels: all of it (grids, wavefields) or, for a lattice, in the halo's
/// outermost layer only the populations that stream from it into the block (5 of 19, as the
/// host exchange sends them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Every array's rows of the face.
    Whole,
    /// A lattice's face: every population in the inner layers, the crossing ones in the
    /// outermost.
    Lattice,
}

/// One face's exchange with its neighbour: the boxes this rank sends and those it receives,
/// each list in the order both sides post them.
struct FaceParts {
    peer: usize,
    send: Vec<RowBox>,
    recv: Vec<RowBox>,
}

/// The boxes `face` of arrays laid out as `layout` travels in, cut as `cut` says, layers along
/// the face's axis in ascending order: a sent face and the halo it fills cut alike, since
/// both have their outermost layer at the same end.
fn parts(layout: &RowBox, face: &FaceRegion, cut: Cut) -> Vec<RowBox> {
    let whole = RowBox {
        ys: face.region[0].clone(),
        zs: face.region[1].clone(),
        ..layout.clone()
    };
    if cut == Cut::Whole {
        return vec![whole];
    }
    let layers = face.region[face.axis].clone();
    let at = |range: Range<usize>| {
        let mut b = whole.clone();
        *(if face.axis == 0 { &mut b.ys } else { &mut b.zs }) = range;
        b
    };
    let o = face.outermost;
    let mut parts = Vec::new();
    if layers.start < o {
        parts.push(at(layers.start..o));
    }
    parts.extend(populations(face, o).map(|i| RowBox {
        first: i,
        arrays: 1,
        ..at(o..o + 1)
    }));
    if o + 1 < layers.end {
        parts.push(at(o + 1..layers.end));
    }
    parts
}

/// The hooks of a split state's run on the device (a grid, lattice or wavefield): a halo
/// exchange of each array the next pass reads, queued before the pass or, for z faces
/// through NCCL where the engine asks, beside its first part (timed on the device by events), and the ranks'
/// agreement on each batch's outcome.
pub(crate) struct SplitHooks<'a, T> {
    comm: &'a SimpleCommunicator,
    decomposition: &'a Decomposition,
    block: &'a Block,
    /// The local arrays' layout (its `ys` and `zs` unused).
    layout: RowBox,
    /// What of each face travels.
    cut: Cut,
    halos: &'a mut DeviceHalos<T>,
    /// Each exchange's events.
    marks: Vec<Marks>,
    /// The event after the z faces travelling beside the current pass, until the pass waits.
    in_flight: Option<CudaEvent>,
    /// Seconds spent agreeing on batch outcomes (waiting for the slowest rank included).
    agreeing: f64,
    /// The steps of the run every rank holds after a failure they traced back together.
    traced: Option<usize>,
    /// The run's input in host memory (the rank's local array, replaced only after the run),
    /// for a trace of a failure from the start.
    input: Option<&'a [T]>,
}

/// One exchange's events: before and after the part queued on the library's stream and, for
/// z faces that travelled beside the pass, the end of the pass's first part (on the
/// library's stream) and of the faces (on the side stream).
struct Marks {
    start: CudaEvent,
    end: CudaEvent,
    beside: Option<(CudaEvent, CudaEvent)>,
}

impl Marks {
    /// Seconds the engine's stream spent on this exchange or waiting for it: the part queued
    /// on it, and how long the z faces outlasted the pass's first part.
    fn seconds(&self) -> f64 {
        let ms = |a: &CudaEvent, b: &CudaEvent| a.elapsed_ms(b).map_or(0.0, f64::from);
        let waited = self.beside.as_ref().map_or(0.0, |(a, b)| ms(a, b).max(0.0));
        (ms(&self.start, &self.end) + waited) / 1e3
    }
}

/// An event with timing recorded on the library's stream.
fn mark() -> Result<CudaEvent> {
    gpu()?
        .stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(gpu_err)
}

impl<'a, T: HaloElem> SplitHooks<'a, T> {
    /// Hooks for this rank's block `block` of `decomposition`, its local array laid out as
    /// `layout`, its faces cut as `cut` says.
    pub(crate) fn new(
        comm: &'a SimpleCommunicator,
        decomposition: &'a Decomposition,
        block: &'a Block,
        (layout, cut): (RowBox, Cut),
        halos: &'a mut DeviceHalos<T>,
    ) -> Self {
        SplitHooks {
            comm,
            decomposition,
            block,
            layout,
            cut,
            halos,
            marks: Vec::new(),
            in_flight: None,
            agreeing: 0.0,
            traced: None,
            input: None,
        }
    }

    /// These hooks, with the run's input `input` (the local array as the device copy was
    /// uploaded from it) to restart from after a failure.
    pub(crate) fn with_input(mut self, input: &'a [T]) -> Self {
        self.input = Some(input);
        self
    }

    /// The steps of the run this rank's state holds after a failure that every rank traced
    /// back to the last finite step (`None` after a run that succeeded, or whose failure was
    /// not traced back).
    pub(crate) fn traced(&self) -> Option<usize> {
        self.traced
    }

    /// Seconds the run spent exchanging halos or waiting for them on the device (where the z
    /// faces travel beside a pass, only the time they outlast its first part) and agreeing
    /// on outcomes. Call after the run, when the device has passed every event.
    pub(crate) fn communication_seconds(&self) -> f64 {
        self.marks.iter().map(Marks::seconds).sum::<f64>() + self.agreeing
    }
}

impl<T> Drop for SplitHooks<'_, T> {
    /// A pass that failed before waiting for its z faces leaves them in flight: later work
    /// on the library's stream (freeing the arrays among it) waits for them.
    fn drop(&mut self) {
        if let (Some(arrived), Ok(gpu)) = (self.in_flight.take(), gpu()) {
            let _ = gpu.stream.wait(&arrived);
        }
    }
}

impl<T: HaloElem> PassHooks<T> for SplitHooks<'_, T> {
    fn before_pass(&mut self, arrays: &mut [&mut CudaSlice<T>]) -> Result<()> {
        let start = mark()?;
        let (c, d, b) = (self.comm, self.decomposition, self.block);
        for data in arrays.iter_mut() {
            self.halos
                .exchange(c, d, b, (&self.layout, self.cut), data)?;
        }
        let end = mark()?;
        self.marks.push(Marks {
            start,
            end,
            beside: None,
        });
        Ok(())
    }

    fn before_pass_beside(&mut self, arrays: &mut [&mut CudaSlice<T>]) -> Result<InFlight> {
        let (c, d, b) = (self.comm, self.decomposition, self.block);
        let in_flight = self
            .halos
            .beside((d, b, c.rank() as usize), &self.layout, self.cut);
        if in_flight == InFlight::NONE {
            return self.before_pass(arrays).map(|()| InFlight::NONE);
        }
        // The y faces first on the library's stream (the z faces carry their corners), then
        // the z faces on the side stream once those are in place.
        let start = mark()?;
        let shape = (&self.layout, self.cut);
        for data in arrays.iter_mut() {
            self.halos.exchange_axis(c, (d, b), shape, data, 0, false)?;
        }
        let end = mark()?;
        self.halos.side_wait(&end)?;
        for data in arrays.iter_mut() {
            self.halos.exchange_axis(c, (d, b), shape, data, 1, true)?;
        }
        self.in_flight = Some(self.halos.side_mark()?);
        self.marks.push(Marks {
            start,
            end,
            beside: None,
        });
        Ok(in_flight)
    }

    fn halos_arrived(&mut self) -> Result<()> {
        let Some(arrived) = self.in_flight.take() else {
            return Ok(());
        };
        // The wait is queued even when the mark fails: nothing after it may touch the arrays
        // while the faces are still travelling.
        let first_part = mark();
        gpu()?.stream.wait(&arrived).map_err(gpu_err)?;
        if let Some(m) = self.marks.last_mut() {
            m.beside = Some((first_part?, arrived));
        }
        Ok(())
    }

    fn after_batch(&mut self, outcome: Result<()>) -> Result<()> {
        let t = Instant::now();
        let outcome = outcome.map_err(|e| self.block.in_whole_grid(e));
        let agreed = agreed(self.comm, outcome);
        self.agreeing += t.elapsed().as_secs_f64();
        agreed
    }

    fn alone(&self) -> bool {
        false
    }

    fn restart(&mut self, cur: &mut CudaSlice<T>) -> Result<()> {
        let input = self
            .input
            .ok_or_else(|| Error::Gpu("this split run keeps no copy of its input".into()))?;
        if input.len() != cur.len() {
            return Err(Error::Gpu(format!(
                "the run's input holds {} values, its device copy {}",
                input.len(),
                cur.len()
            )));
        }
        gpu()?.stream.memcpy_htod(input, cur).map_err(gpu_err)
    }

    fn held(&mut self, steps: usize) {
        self.traced = Some(steps);
    }
}

/// Sends and receives one axis's faces device to device, straight from and into `data` where
/// a box is one piece of it, else through packed buffers. Every send is posted before any
/// receive in one NCCL group: sends face by face in side order, receives face by face in the
/// opposite order (the boxes of a face in their own order both times). Between two ranks that
/// are neighbours on both sides (a periodic axis split in two) NCCL matches messages in
/// posting order, and a rank's low face is its neighbour's high halo. The messages are queued
/// on `stream`: the library's, or the side stream where `beside` says so (where nothing may
/// need packing, which runs on the library's stream).
fn nccl_axis<T: HaloElem>(
    link: &NcclComm,
    faces: &[FaceParts],
    (send_bufs, recv_bufs): &mut Staging<T>,
    data: &mut CudaSlice<T>,
    (stream, beside): (CUstream, bool),
) -> Result<()> {
    let gpu = gpu()?;
    let sends: Vec<(usize, &RowBox)> = faces
        .iter()
        .flat_map(|f| f.send.iter().map(move |b| (f.peer, b)))
        .collect();
    let recvs: Vec<(usize, &RowBox)> = faces
        .iter()
        .rev()
        .flat_map(|f| f.recv.iter().map(move |b| (f.peer, b)))
        .collect();
    let inside = |(_, b): &(usize, &RowBox)| b.span().is_none_or(|s| s.end <= data.len());
    if !(sends.iter().all(inside) && recvs.iter().all(inside)) {
        return Err(Error::Gpu(format!(
            "a halo face reaches past the end of its array of {} elements",
            data.len()
        )));
    }
    stage(&gpu.stream, &sends, send_bufs)?;
    stage(&gpu.stream, &recvs, recv_bufs)?;
    if beside
        && send_bufs
            .iter()
            .chain(recv_bufs.iter())
            .any(Option::is_some)
    {
        return Err(Error::Gpu(
            "a halo face that needs packing cannot travel beside the pass".into(),
        ));
    }
    for ((_, b), buf) in sends.iter().zip(send_bufs.iter_mut()) {
        if let Some(buf) = buf {
            pack_on_device(gpu, data, b, buf)?;
        }
    }
    {
        let elem = size_of::<T>();
        let (base, _data) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut *data, &gpu.stream);
        let mut guards = Vec::new();
        let sent = addressed(&gpu.stream, base, &sends, send_bufs, &mut guards);
        let received = addressed(&gpu.stream, base, &recvs, recv_bufs, &mut guards);
        let stream = stream as nccl_sys::cudaStream_t;
        let bytes = |b: &RowBox| b.span().map_or(b.len(), |s| s.len()) * elem;
        nccl::group_start().map_err(nccl_err)?;
        for &(peer, ptr, b) in &sent {
            // SAFETY: `ptr` addresses the box's `bytes(b)` bytes, in `data` (checked above to
            // hold the box) or its packed buffer (of the box's size), which stay allocated
            // until the stream, which the send is queued on, has sent them.
            unsafe { nccl::send(ptr as _, bytes(b), U8, peer as i32, link.0, stream) }
                .map_err(nccl_err)?;
        }
        for &(peer, ptr, b) in &received {
            // SAFETY: as for the sends, the bytes the message fills.
            unsafe { nccl::recv(ptr as _, bytes(b), U8, peer as i32, link.0, stream) }
                .map_err(nccl_err)?;
        }
        nccl::group_end().map_err(nccl_err)?;
    }
    for ((_, b), buf) in recvs.iter().zip(recv_bufs.iter()) {
        if let Some(buf) = buf {
            unpack_on_device(gpu, buf, b, data)?;
        }
    }
    Ok(())
}

/// Each message of `boxes` (peer and box, staged in `bufs`) with its device address: its
/// packed buffer's (whose guard joins `guards`) or, for a box that is one piece, its place in
/// the array at `base`.
fn addressed<'a, 'b, T>(
    stream: &'a CudaStream,
    base: u64,
    boxes: &[(usize, &'b RowBox)],
    bufs: &'a [Option<CudaSlice<T>>],
    guards: &mut Vec<cudarc::driver::SyncOnDrop<'a>>,
) -> Vec<(usize, u64, &'b RowBox)> {
    let mut out = Vec::with_capacity(boxes.len());
    for (&(peer, b), buf) in boxes.iter().zip(bufs) {
        let ptr = match (buf, b.span()) {
            (Some(buf), _) => {
                let (ptr, guard) = cudarc::driver::DevicePtr::device_ptr(buf, stream);
                guards.push(guard);
                ptr
            }
            (None, Some(span)) => base + (span.start * size_of::<T>()) as u64,
            (None, None) => unreachable!("`stage` gives every box that is not one piece a buffer"),
        };
        out.push((peer, ptr, b));
    }
    out
}

/// NCCL's byte type: every message is sent as bytes.
const U8: nccl_sys::ncclDataType_t = nccl_sys::ncclDataType_t::ncclUint8;

/// Gives each box in `boxes` that is not one piece of its array a packed device buffer of its
/// size in `bufs` (kept from the last exchange where it fits), the others none.
fn stage<T: HaloElem>(
    stream: &std::sync::Arc<CudaStream>,
    boxes: &[(usize, &RowBox)],
    bufs: &mut Vec<Option<CudaSlice<T>>>,
) -> Result<()> {
    bufs.resize_with(boxes.len(), || None);
    for ((_, b), buf) in boxes.iter().zip(bufs.iter_mut()) {
        if b.span().is_some() {
            *buf = None;
        } else if buf.as_ref().is_none_or(|buf| buf.len() != b.len()) {
            *buf = Some(stream.alloc_zeros::<T>(b.len()).map_err(gpu_err)?);
        }
    }
    Ok(())
}

/// Sends and receives one axis's faces through host buffers and MPI, one message per face
/// (its boxes one after another).
fn host_axis<T: HaloElem>(
    comm: &SimpleCommunicator,
    faces: &[(usize, usize, FaceRegion, FaceRegion)],
    cut: &[FaceParts],
    sends: &mut Vec<Vec<T>>,
    recvs: &mut Vec<Vec<T>>,
    data: &mut CudaSlice<T>,
) -> Result<()> {
    let gpu = gpu()?;
    let total = |boxes: &[RowBox]| boxes.iter().map(RowBox::len).sum::<usize>();
    sends.resize_with(faces.len(), Vec::new);
    recvs.resize_with(faces.len(), Vec::new);
    for (f, (out, into)) in cut.iter().zip(sends.iter_mut().zip(recvs.iter_mut())) {
        out.resize(total(&f.send), T::default());
        into.resize(total(&f.recv), T::default());
        let mut at = 0;
        for b in &f.send {
            pack_to_host(gpu, data, b, &mut out[at..at + b.len()])?;
            at += b.len();
        }
    }
    swap_faces(comm, faces, sends, recvs, Waiting::Spin);
    for (f, into) in cut.iter().zip(recvs.iter()) {
        let mut at = 0;
        for b in &f.recv {
            unpack_from_host(gpu, &into[at..at + b.len()], b, data)?;
            at += b.len();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::{Q, VELOCITIES};

    /// A face's side and the boxes it sends and receives.
    type Sides = Vec<(usize, Vec<RowBox>, Vec<RowBox>)>;

    /// Rank 0's and rank 1's faces of a lattice split in two along periodic z with a halo of
    /// 2 layers, cut for the lattice, laid out as `layout`.
    fn cut_faces(layout: &RowBox) -> [Sides; 2] {
        let d = Decomposition::with_procs([6, 5, 12], [1, 2], 2)
            .unwrap()
            .with_periodic([false, true]);
        std::array::from_fn(|rank| {
            faces(&d, &d.block(rank), rank, 1)
                .iter()
                .map(|(side, _, send, recv)| {
                    let cut = |f| parts(layout, f, Cut::Lattice);
                    (*side, cut(send), cut(recv))
                })
                .collect()
        })
    }

    #[test]
    fn a_lattice_face_sends_only_the_crossing_populations_of_its_outermost_layer() {
        let layout = RowBox::layout(8, 5, 48, 48 * 10, Q);
        let [rank0, _] = cut_faces(&layout);
        for (side, send, recv) in &rank0 {
            for boxes in [send, recv] {
                // One box of the inner layer with every population, then one box per
                // population that crosses in the outermost layer: 5 of the 19 in D3Q19.
                assert_eq!(boxes.len(), 6, "side {side}");
                let (whole, single): (Vec<_>, Vec<_>) = boxes.iter().partition(|b| b.arrays == Q);
                assert_eq!((whole.len(), single.len()), (1, 5));
                assert!(single.iter().all(|b| b.zs.len() == 1 && b.span().is_some()));
                assert!(whole[0].zs.len() == 1 && whole[0].zs != single[0].zs);
            }
            // The populations the halo receives are those that stream into the block.
            let inward = if *side == 0 { 1 } else { -1 };
            for b in recv.iter().filter(|b| b.arrays == 1) {
                assert_eq!(VELOCITIES[b.first][2], inward, "side {side}");
            }
        }
    }

    #[test]
    fn each_lattice_box_sent_matches_the_box_that_receives_it() {
        let layout = RowBox::layout(8, 5, 48, 48 * 10, Q);
        let [rank0, rank1] = cut_faces(&layout);
        // Rank 0's low face fills rank 1's high halo and the other way round, box by box:
        // the same populations and sizes in the same order.
        for (mine, theirs) in [(&rank0, &rank1), (&rank1, &rank0)] {
            for (side, send, _) in mine {
                let (_, _, recv) = theirs.iter().find(|(s, _, _)| s != side).unwrap();
                assert_eq!(send.len(), recv.len());
                for (a, b) in send.iter().zip(recv) {
                    assert_eq!((a.first, a.arrays, a.len()), (b.first, b.arrays, b.len()));
                    assert_ne!(a.zs, b.zs);
                }
            }
        }
    }

    #[test]
    fn a_grid_face_travels_whole() {
        let layout = RowBox::layout(8, 5, 48, 0, 1);
        let d = Decomposition::with_procs([6, 5, 12], [1, 2], 2).unwrap();
        let faces = faces(&d, &d.block(0), 0, 1);
        let (_, _, send, _) = &faces[0];
        let boxes = parts(&layout, send, Cut::Whole);
        assert_eq!(boxes.len(), 1);
        assert_eq!((boxes[0].ys.clone(), boxes[0].zs.clone()), (0..5, 4..6));
        // Whole planes of one array: sent straight from the array.
        assert_eq!(boxes[0].span(), Some(4 * 48..5 * 48 + 40));
    }
}
