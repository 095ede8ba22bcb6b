//! Buffering strategies per array of a multi-array GPU stencil kernel, after Hu et al. ("A
//! performance model and efficiency-based assignment of buffering strategies for automatic GPU
//! stencil code generation"): every grid function (array) a kernel reads is left in memory
//! (*unbuffered*), carried along the streaming axis in *registers*, staged plane by plane in
//! *shared* memory, both (*plus*, the 2.5D scheme), or read through the *read-only cache*. A
//! model gives the time per point of an assignment, from the loads each strategy issues to the
//! load/store units, the shared memory, and memory, and from the occupancy its registers and
//! shared memory leave; the assignment is built greedily, one array at a time, taking the move
//! with the best ratio of time saved to on-chip storage spent (the paper's efficiency-based
//! algorithm, `(b − 1)·N(N + 1)/2` evaluations instead of `b^N`). Arrays read only at the cell
//! itself gain nothing from a buffer (no reuse) and stay unbuffered; the strategies a kernel
//! generator does not emit for an array are left out of its search.

use std::fmt;

use crate::gpu::GpuInfo;

/// Where an array's values come from inside the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Strategy {
    /// A load from memory (through L1) for every offset.
    Unbuffered,
    /// Values along the streaming axis carried in registers; other offsets loaded.
    Registers,
    /// `2R + 1` planes staged in shared memory.
    Shared,
    /// The streaming axis in registers and the current plane in shared memory (2.5D).
    Plus,
    /// Every offset through the read-only data cache.
    ReadOnly,
}

impl Strategy {
    /// Lower-case name for plans.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Unbuffered => "memory",
            Strategy::Registers => "registers",
            Strategy::Shared => "shared",
            Strategy::Plus => "registers+shared",
            Strategy::ReadOnly => "read-only cache",
        }
    }
}

/// One array as the kernel reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Array {
    pub(crate) name: &'static str,
    /// Star reach in x and y (0: the cell only).
    pub(crate) reach_xy: usize,
    /// Star reach along the streaming axis z.
    pub(crate) reach_z: usize,
    /// Share of the cells that read it (an array of the absorbing layers only: their share).
    pub(crate) share: f64,
    /// Strategies the kernel generator emits for it.
    pub(crate) emitted: &'static [Strategy],
}

impl Array {
    fn points(&self) -> f64 {
        (1 + 4 * self.reach_xy + 2 * self.reach_z) as f64
    }

    fn reused(&self) -> bool {
        self.reach_xy + self.reach_z > 0
    }
}

/// A thread block: its tile of `tx × ty` columns and its threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Block {
    pub(crate) tx: usize,
    pub(crate) ty: usize,
    pub(crate) threads: usize,
    /// Bytes per element.
    pub(crate) element: usize,
    /// Registers per thread besides the buffers (addresses, accumulators).
    pub(crate) base_registers: usize,
    /// Arithmetic per point, in FMA-equivalent instructions.
    pub(crate) flops: f64,
}

/// Requests per SM and cycle the load/store units serve (one warp-wide request per cycle).
const LSU_PER_CYCLE: f64 = 32.0;
/// Warps per SM that hide the latency of a load (about 600 cycles of L2/DRAM latency at a
/// request per warp every ~40 cycles).
const WARPS_TO_HIDE: f64 = 16.0;
/// Share of the read-only cache's hits for in-plane neighbours of a streamed plane: rows of
/// the neighbouring warps are in L1 when the tile is as wide as a warp or more.
const READ_ONLY_HIT: f64 = 0.85;

/// What an assignment costs per point.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Buffering {
    /// `(array, strategy)` in the kernel's order.
    pub assignment: Vec<(&'static str, Strategy)>,
    /// SM cycles per point (one level), the model's prediction.
    pub cycles: f64,
    /// Registers per thread.
    pub registers: usize,
    /// Shared memory per block, bytes.
    pub shared_bytes: usize,
    /// Resident warps per SM.
    pub warps: usize,
    /// Bytes moved to or from L2 per point.
    pub l2_bytes: f64,
}

impl fmt::Display for Buffering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: Vec<String> = self
            .assignment
            .iter()
            .map(|(a, s)| format!("{a}: {}", s.name()))
            .collect();
        write!(
            f,
            "{} — {:.2} SM cycles per point, {} registers per thread, {} B shared per block, \
             {} warps per SM",
            list.join(", "),
            self.cycles,
            self.registers,
            self.shared_bytes,
            self.warps
        )
    }
}

/// Evaluates `strategies` (one per array) on `block` and `info`.
pub(crate) fn evaluate(
    arrays: &[Array],
    strategies: &[Strategy],
    block: &Block,
    info: &GpuInfo,
) -> Buffering {
    let (mut lsu, mut l2, mut regs, mut smem) = (0.0, 0.0, block.base_registers as f64, 0usize);
    let halo =
        |r: usize| ((block.tx + 2 * r) * (block.ty + 2 * r)) as f64 / (block.tx * block.ty) as f64;
    let per_thread = (block.tx * block.ty) as f64 / block.threads as f64;
    let e = block.element as f64;
    for (a, &s) in arrays.iter().zip(strategies) {
        let p = a.points();
        let in_plane = (4 * a.reach_xy) as f64;
        let column = (2 * a.reach_z + 1) as f64;
        let (loads, shared_loads, l2_elems) = match s {
            Strategy::Unbuffered => (p, 0.0, p),
            Strategy::ReadOnly => (p, 0.0, 1.0 + (p - 1.0) * (1.0 - READ_ONLY_HIT)),
            Strategy::Registers => (1.0 + in_plane, 0.0, 1.0 + in_plane),
            Strategy::Shared => (halo(a.reach_xy), p, halo(a.reach_xy)),
            Strategy::Plus => (halo(a.reach_xy), 1.0 + in_plane, halo(a.reach_xy)),
        };
        lsu += a.share * (loads + shared_loads);
        l2 += a.share * l2_elems * e;
        regs += match s {
            Strategy::Registers | Strategy::Plus => column * per_thread,
            _ => 0.0,
        };
        let plane = (block.tx + 2 * a.reach_xy) * (block.ty + 2 * a.reach_xy) * block.element;
        smem += match s {
            Strategy::Shared => plane * (2 * a.reach_z + 1),
            Strategy::Plus => 2 * plane,
            _ => 0,
        };
    }
    // ptxas fits a block's threads in the register file (spilling what does not fit).
    let cap = (info.registers_per_sm / block.threads.max(1)).min(255) / 8 * 8;
    let registers = (regs.ceil() as usize).clamp(16, cap.max(16));
    let by_regs = info.registers_per_sm / (registers * block.threads).max(1);
    let by_smem = info.shared_per_sm.checked_div(smem).unwrap_or(usize::MAX);
    let by_threads = info.max_threads_per_sm / block.threads.max(1);
    let blocks = by_regs.min(by_smem).min(by_threads);
    let warps = blocks * block.threads.div_ceil(32);
    let lanes = info.fp32_lanes_per_sm.max(1) as f64;
    let busy = (lsu / LSU_PER_CYCLE).max(block.flops / lanes);
    let hidden = (warps as f64 / WARPS_TO_HIDE).min(1.0);
    let cycles = if warps == 0 {
        f64::INFINITY
    } else {
        busy / hidden.max(1e-3)
    };
    Buffering {
        assignment: arrays
            .iter()
            .map(|a| a.name)
            .zip(strategies.iter().copied())
            .collect(),
        cycles,
        registers,
        shared_bytes: smem,
        warps,
        l2_bytes: l2,
    }
}

/// On-chip storage an assignment holds per SM, as a share of the SM's registers and shared
/// memory.
fn storage(b: &Buffering, block: &Block, info: &GpuInfo) -> f64 {
    let blocks = b.warps as f64 * 32.0 / block.threads as f64;
    blocks * (b.registers * block.threads * 4) as f64 / (info.registers_per_sm * 4) as f64
        + blocks * b.shared_bytes as f64 / info.shared_per_sm.max(1) as f64
}

/// The efficiency-based assignment: from every array unbuffered (or at the one strategy its
/// kernel emits), repeatedly take the move (one
/// unbuffered array to one of its emitted strategies) with the most time saved per unit of
/// on-chip storage spent, moves that save storage first, until no move saves time.
pub(crate) fn assign(arrays: &[Array], block: &Block, info: &GpuInfo) -> Buffering {
    // An array whose kernel cannot leave it unbuffered starts at its first emitted strategy.
    let mut current: Vec<Strategy> = arrays
        .iter()
        .map(|a| match a.emitted.contains(&Strategy::Unbuffered) {
            true => Strategy::Unbuffered,
            false => a.emitted.first().copied().unwrap_or(Strategy::Unbuffered),
        })
        .collect();
    let mut best = evaluate(arrays, &current, block, info);
    loop {
        let mut pick: Option<(f64, Vec<Strategy>, Buffering)> = None;
        for (i, a) in arrays.iter().enumerate() {
            if current[i] != Strategy::Unbuffered || !a.reused() {
                continue;
            }
            for &s in a.emitted.iter().filter(|&&s| s != Strategy::Unbuffered) {
                let mut next = current.clone();
                next[i] = s;
                let b = evaluate(arrays, &next, block, info);
                let saved = best.cycles - b.cycles;
                if saved <= 0.0 {
                    continue;
                }
                let spent = storage(&b, block, info) - storage(&best, block, info);
                let efficiency = if spent <= 0.0 {
                    f64::INFINITY
                } else {
                    saved / spent
                };
                if pick.as_ref().is_none_or(|(e, _, _)| efficiency > *e) {
                    pick = Some((efficiency, next, b));
                }
            }
        }
        match pick {
            Some((_, next, b)) => {
                current = next;
                best = b;
            }
            None => return best,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> GpuInfo {
        GpuInfo::h200_for_tests()
    }

    const STAR: &[Strategy] = &[
        Strategy::Unbuffered,
        Strategy::Registers,
        Strategy::Plus,
        Strategy::ReadOnly,
    ];

    fn arrays() -> Vec<Array> {
        let point = |name| Array {
            name,
            reach_xy: 0,
            reach_z: 0,
            share: 1.0,
            emitted: STAR,
        };
        vec![
            Array {
                name: "u",
                reach_xy: 4,
                reach_z: 4,
                share: 1.0,
                emitted: STAR,
            },
            point("u⁻"),
            point("c"),
        ]
    }

    #[test]
    fn arrays_without_reuse_stay_unbuffered_and_the_star_is_buffered() {
        let block = Block {
            tx: 32,
            ty: 32,
            threads: 256,
            element: 4,
            base_registers: 40,
            flops: 30.0,
        };
        let b = assign(&arrays(), &block, &h200());
        assert_eq!(b.assignment[1].1, Strategy::Unbuffered);
        assert_eq!(b.assignment[2].1, Strategy::Unbuffered);
        assert_ne!(b.assignment[0].1, Strategy::Unbuffered);
        let none = evaluate(&arrays(), &[Strategy::Unbuffered; 3], &block, &h200());
        assert!(b.cycles < none.cycles);
        assert!(b.l2_bytes < none.l2_bytes);
    }

    #[test]
    fn shared_memory_that_leaves_no_block_resident_is_never_chosen() {
        let block = Block {
            tx: 256,
            ty: 128,
            threads: 1024,
            element: 8,
            base_registers: 40,
            flops: 30.0,
        };
        let b = evaluate(
            &arrays(),
            &[Strategy::Shared, Strategy::Unbuffered, Strategy::Unbuffered],
            &block,
            &h200(),
        );
        assert_eq!(b.warps, 0);
        assert!(b.cycles.is_infinite());
        assert_ne!(
            assign(&arrays(), &block, &h200()).assignment[0].1,
            Strategy::Shared
        );
    }
}
