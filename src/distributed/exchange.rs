//! The halo exchange: each rank sends the `halo` cells next to each face of its block that has
//! a neighbour and receives the neighbour's into its halo, with nonblocking sends and receives.
//! Faces of y first, then of z over the whole local y extent (halos included), so the edges
//! and corners a box stencil reads arrive in the second phase. The y faces are packed into
//! buffers kept between passes; the z faces are whole planes and travel straight from and into
//! the local array.

use std::ops::Range;

use mpi::datatype::Equivalence;
use mpi::request::{scope, WaitGuard};
use mpi::topology::Communicator;
use mpi::traits::{Destination, Source};

use super::grid::{pack_into, region_len, unpack, DistributedGrid};
use crate::Real;

impl<T: Real + Equivalence> DistributedGrid<T> {
    /// Refreshes every halo cell from the rank that owns it. Collective.
    pub(crate) fn exchange(&mut self) {
        self.exchange_axis(0);
        self.exchange_planes();
    }

    /// Exchanges the halos of the faces across z. A z face spans the whole local y extent,
    /// which the neighbours across z share, so it is a run of whole planes, contiguous in
    /// the local array and laid out alike on both ranks: sent from and received into the
    /// array itself, with no copies.
    fn exchange_planes(&mut self) {
        let me = self.comm.rank() as usize;
        let h = self.decomposition.halo;
        let plane = self.local.plane_stride();
        let [lo, hi] = self.block.halos()[1];
        let peers = [0, 1].map(|side| self.decomposition.neighbour(me, 1, side));
        let planes = self.local.dims()[2];
        let storage = self.local.storage_mut();
        debug_assert_eq!(storage.len(), planes * plane);
        // [low halo | owned planes | high halo]; a halo is `h` planes where it exists.
        let (low_halo, rest) = storage.split_at_mut(lo * plane);
        let (owned, high_halo) = rest.split_at_mut(rest.len() - hi * plane);
        let n = owned.len();
        let sends = [&owned[..h * plane], &owned[n - h * plane..]];
        let recvs = [low_halo, high_halo];
        let comm = &self.comm;
        scope(|scope| {
            let mut guards = Vec::new();
            for (side, (recv, send)) in recvs.into_iter().zip(sends).enumerate() {
                let Some(peer) = peers[side] else { continue };
                let peer = comm.process_at_rank(peer as i32);
                // A message's tag is the side of the sender it leaves from.
                guards.push(WaitGuard::from(peer.immediate_receive_into_with_tag(
                    scope,
                    recv,
                    (1 - side) as i32,
                )));
                guards.push(WaitGuard::from(peer.immediate_send_with_tag(
                    scope,
                    send,
                    side as i32,
                )));
            }
        });
    }

    /// Exchanges the halos of the faces across `axis` (0: y, 1: z).
    fn exchange_axis(&mut self, axis: usize) {
        let me = self.comm.rank() as usize;
        let owned = self.block.owned[axis].clone();
        let local = self.block.local.clone();
        let origin = [local[0].start, local[1].start];
        // Along the other axis the whole local extent travels.
        let slab = |r: Range<usize>| -> [Range<usize>; 2] {
            if axis == 0 {
                [r, local[1].clone()]
            } else {
                [local[0].clone(), r]
            }
        };
        let h = self.decomposition.halo;
        // A side has a halo exactly when it has a neighbour.
        let faces: Vec<Face> = [
            (
                0,
                owned.start..owned.start + h,
                local[axis].start..owned.start,
            ),
            (1, owned.end - h..owned.end, owned.end..local[axis].end),
        ]
        .into_iter()
        .filter_map(|(side, send, recv)| {
            let peer = self.decomposition.neighbour(me, axis, side)?;
            Some(Face {
                peer,
                send: slab(send),
                recv: slab(recv),
            })
        })
        .collect();
        // Buffers from earlier passes are reused: two per face, sent and received.
        let mut buffers = std::mem::take(&mut self.buffers);
        buffers.resize_with(buffers.len().max(2 * faces.len()), Vec::new);
        let (sends, recvs) = buffers.split_at_mut(faces.len());
        for (f, (send, recv)) in faces.iter().zip(sends.iter_mut().zip(recvs.iter_mut())) {
            pack_into(send, &self.local, &f.send, origin);
            recv.resize(region_len(&self.local, &f.recv), T::zero());
        }
        let comm = &self.comm;
        scope(|scope| {
            let mut guards = Vec::new();
            for ((f, buf), data) in faces.iter().zip(recvs.iter_mut()).zip(sends.iter()) {
                let peer = comm.process_at_rank(f.peer as i32);
                // A message's tag is the side of the sender it leaves from.
                let from = if f.peer < me { 1 } else { 0 };
                let to = 1 - from;
                guards.push(WaitGuard::from(peer.immediate_receive_into_with_tag(
                    scope,
                    &mut buf[..],
                    from,
                )));
                guards.push(WaitGuard::from(peer.immediate_send_with_tag(
                    scope,
                    &data[..],
                    to,
                )));
            }
        });
        for (f, data) in faces.iter().zip(recvs.iter()) {
            unpack(&mut self.local, &f.recv, origin, data);
        }
        self.buffers = buffers;
    }
}

/// One face's exchange: the neighbouring rank, the global y and z ranges sent to it and
/// those received from it.
struct Face {
    peer: usize,
    send: [Range<usize>; 2],
    recv: [Range<usize>; 2],
}
