//! The halo exchange: each rank sends the `halo` cells next to each face of its block that has
//! a neighbour and receives the neighbour's into its halo, with nonblocking sends and receives.
//! Faces of y first, then of z over the whole local y extent (halos included), so the edges
//! and corners a box stencil reads arrive in the second phase.

use std::ops::Range;

use mpi::datatype::Equivalence;
use mpi::request::{scope, WaitGuard};
use mpi::topology::Communicator;
use mpi::traits::{Destination, Source};

use super::grid::{pack, region_len, unpack, DistributedGrid};
use crate::Real;

impl<T: Real + Equivalence> DistributedGrid<T> {
    /// Refreshes every halo cell from the rank that owns it. Collective.
    pub(crate) fn exchange(&mut self) {
        for axis in 0..2 {
            self.exchange_axis(axis);
        }
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
        let sends: Vec<Vec<T>> = faces
            .iter()
            .map(|f| pack(&self.local, &f.send, origin))
            .collect();
        let mut recvs: Vec<Vec<T>> = faces
            .iter()
            .map(|f| vec![T::zero(); region_len(&self.local, &f.recv)])
            .collect();
        let comm = &self.comm;
        scope(|scope| {
            let mut guards = Vec::new();
            for ((f, buf), data) in faces.iter().zip(recvs.iter_mut()).zip(&sends) {
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
        for (f, data) in faces.iter().zip(&recvs) {
            unpack(&mut self.local, &f.recv, origin, data);
        }
    }
}

/// One face's exchange: the neighbouring rank, the global y and z ranges sent to it and
/// those received from it.
struct Face {
    peer: usize,
    send: [Range<usize>; 2],
    recv: [Range<usize>; 2],
}
