//! The halo exchange: each rank sends the `halo` layers next to each face of its block that has
//! a neighbour and receives the neighbour's into its halo, with nonblocking sends and receives.
//! Faces of y first, then of z over the whole local y extent (halos included), so the edges
//! and corners a box stencil or a diagonal lattice link reads arrive in the second phase.
//! Packed faces use buffers kept between passes; a grid's z faces are whole planes and travel
//! straight from and into the local array.

use std::ops::Range;

use mpi::datatype::Equivalence;
use mpi::request::{scope, Request, Scope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{Destination, Source};
use num_traits::Zero;

use super::{Block, Decomposition};
use crate::lbm::{Q, VELOCITIES};

/// One face's part of an exchange as the local array sees it: local y and z index ranges, the
/// axis crossed, and for the receiving rank's outermost halo layer (the one no cell of the
/// next pass updates from anything but its inward links) its index along that axis in
/// `region` and the sign of the velocity component pointing from it into the block.
pub(crate) struct FaceRegion {
    pub(crate) region: [Range<usize>; 2],
    pub(crate) axis: usize,
    pub(crate) outermost: usize,
    pub(crate) inward: i32,
}

/// A halo layer's populations: all of them, except in the receiving rank's outermost layer,
/// which the next pass reads only through the links that point from it into the block.
pub(super) fn populations(face: &FaceRegion, layer: usize) -> impl Iterator<Item = usize> + '_ {
    let all = layer != face.outermost;
    (0..Q).filter(move |&i| all || VELOCITIES[i][face.axis + 1] == face.inward)
}

/// A local array the exchange can read faces from and write halos into, packed row by row in
/// one order both ranks agree on.
pub(crate) trait HaloRows {
    /// The element the rows hold.
    type Elem: Equivalence + Copy + num_traits::Zero;
    /// Appends the face's values to `out`.
    fn pack(&self, face: &FaceRegion, out: &mut Vec<Self::Elem>);
    /// Writes `data`, as [`HaloRows::pack`] orders it, into the face's cells.
    fn unpack(&mut self, face: &FaceRegion, data: &[Self::Elem]);
    /// The number of values [`HaloRows::pack`] appends.
    fn len(&self, face: &FaceRegion) -> usize;
}

/// The sends and receives of one rank's faces across `axis` (0: y, 1: z), the whole local
/// extent along the other axis.
pub(crate) fn faces(
    d: &Decomposition,
    block: &Block,
    me: usize,
    axis: usize,
) -> Vec<(usize, usize, FaceRegion, FaceRegion)> {
    let h = d.halo;
    let owned = block.owned_local(axis);
    let len = block.local_len(axis);
    let across = 0..block.local_len(1 - axis);
    let slab = |r: Range<usize>| -> [Range<usize>; 2] {
        if axis == 0 {
            [r, across.clone()]
        } else {
            [across.clone(), r]
        }
    };
    let face = |r: Range<usize>, outermost: usize, inward: i32| FaceRegion {
        region: slab(r),
        axis,
        outermost,
        inward,
    };
    (0..2)
        .filter_map(|side| {
            let peer = d.neighbour(me, axis, side)?;
            let (send, recv) = if side == 0 {
                // Received by the neighbour's high halo, whose outermost layer is its last.
                let send = face(owned.start..owned.start + h, owned.start + h - 1, -1);
                (send, face(0..owned.start, 0, 1))
            } else {
                let send = face(owned.end - h..owned.end, owned.end - h, 1);
                (send, face(owned.end..len, len - 1, -1))
            };
            Some((side, peer, send, recv))
        })
        .collect()
}

/// Exchanges the halos of `field` across `axis` with the neighbours. Collective among them.
/// A message's tag is the side of the sender it leaves from, so two messages between the same
/// two ranks (a periodic axis split in two) stay apart.
pub(crate) fn exchange_axis<H: HaloRows>(
    comm: &SimpleCommunicator,
    d: &Decomposition,
    block: &Block,
    axis: usize,
    field: &mut H,
    buffers: &mut Vec<Vec<H::Elem>>,
) {
    exchange_axis_waiting(comm, d, block, axis, field, buffers, Waiting::Spin);
}

/// [`exchange_axis`], waiting for the messages as `waiting` says.
pub(crate) fn exchange_axis_waiting<H: HaloRows>(
    comm: &SimpleCommunicator,
    d: &Decomposition,
    block: &Block,
    axis: usize,
    field: &mut H,
    buffers: &mut Vec<Vec<H::Elem>>,
    waiting: Waiting,
) {
    let me = comm.rank() as usize;
    let faces = faces(d, block, me, axis);
    buffers.resize_with(buffers.len().max(2 * faces.len()), Vec::new);
    let (sends, recvs) = buffers.split_at_mut(faces.len());
    for ((_, _, send, recv), (out, into)) in
        faces.iter().zip(sends.iter_mut().zip(recvs.iter_mut()))
    {
        out.clear();
        field.pack(send, out);
        into.resize(field.len(recv), H::Elem::zero());
    }
    swap_faces(comm, &faces, sends, recvs, waiting);
    for ((_, _, _, recv), data) in faces.iter().zip(recvs.iter()) {
        field.unpack(recv, data);
    }
}

/// Sends `sends[i]` to the peer of `faces[i]` and receives `recvs[i]` from it, nonblocking,
/// for every face at once, waiting as `waiting` says. Collective among the neighbours.
pub(crate) fn swap_faces<E: Equivalence>(
    comm: &SimpleCommunicator,
    faces: &[(usize, usize, FaceRegion, FaceRegion)],
    sends: &[Vec<E>],
    recvs: &mut [Vec<E>],
    waiting: Waiting,
) {
    scope(|scope| {
        let mut pending = Vec::new();
        for ((side, peer, _, _), (data, buf)) in
            faces.iter().zip(sends.iter().zip(recvs.iter_mut()))
        {
            let peer = comm.process_at_rank(*peer as i32);
            pending.push(peer.immediate_receive_into_with_tag(
                scope,
                &mut buf[..],
                (1 - side) as i32,
            ));
            pending.push(peer.immediate_send_with_tag(scope, &data[..], *side as i32));
        }
        complete(pending, waiting);
    });
}

/// How a rank waits for the messages of an exchange.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiting {
    /// In MPI's wait, which spins: nothing else runs meanwhile.
    Spin,
    /// Testing the messages between short sleeps, so that threads computing beside the
    /// exchange keep their cores (an MPI wait would take one of them); the tests also
    /// progress the messages, which OpenMPI's shared-memory transport moves only inside MPI
    /// calls.
    Poll,
}

/// The sleep between two tests of [`Waiting::Poll`]: under 1% of a 512³ pass of the blocked
/// engine on one 8-core rank.
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_micros(50);

/// Sends `sends[side]` to and receives `recvs[side]` from the neighbour on each side across z
/// that `peers` names, in place, waiting as `waiting` says. Collective among the neighbours.
pub(crate) fn exchange_slices<E: Equivalence>(
    comm: &SimpleCommunicator,
    peers: [Option<usize>; 2],
    sends: [&[E]; 2],
    recvs: [&mut [E]; 2],
    waiting: Waiting,
) {
    scope(|scope| {
        let mut pending = Vec::new();
        for (side, (recv, send)) in recvs.into_iter().zip(sends).enumerate() {
            let Some(peer) = peers[side] else { continue };
            let peer = comm.process_at_rank(peer as i32);
            pending.push(peer.immediate_receive_into_with_tag(scope, recv, (1 - side) as i32));
            pending.push(peer.immediate_send_with_tag(scope, send, side as i32));
        }
        complete(pending, waiting);
    });
}

/// Waits for every request of `pending` as `waiting` says.
fn complete<'a, D: ?Sized, S: Scope<'a>>(mut pending: Vec<Request<'a, D, S>>, waiting: Waiting) {
    if waiting == Waiting::Spin {
        pending.into_iter().for_each(|r| {
            r.wait();
        });
        return;
    }
    loop {
        pending = pending.into_iter().filter_map(|r| r.test().err()).collect();
        if pending.is_empty() {
            break;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Elements per point-to-point message: MPI counts are 32-bit, and a rank's block of a large
/// lattice (19 populations per node) passes 2^31 values.
const MESSAGE_ELEMENTS: usize = 1 << 30;

/// Sends `data` to `to` in messages of at most [`MESSAGE_ELEMENTS`] elements, which
/// [`receive_all`] of the same length reassembles (MPI keeps messages between two ranks in
/// order).
pub(crate) fn send_all<E: Equivalence>(to: &impl Destination, data: &[E]) {
    for chunk in data.chunks(MESSAGE_ELEMENTS) {
        to.send(chunk);
    }
}

/// Receives what [`send_all`] sent into `buf` (its length).
pub(crate) fn receive_all<E: Equivalence>(from: &impl Source, buf: &mut [E]) {
    for chunk in buf.chunks_mut(MESSAGE_ELEMENTS) {
        from.receive_into(chunk);
    }
}
