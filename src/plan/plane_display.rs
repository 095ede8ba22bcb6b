//! The 2D and wave parts of a plan's `Display`: how the chosen engine works through the data.

use std::fmt::{self, Formatter};

use super::candidate::GpuLaunch;
use super::display::human_bytes;
use super::kernel::{Kernel, KernelCost};
use super::recipe::Plan;
use super::wave_gpu::memory_bound_copy_rate;
use crate::blocking::CONV_ROWS;
use crate::engine::Engine;

impl Plan {
    /// The blocked engine's tile and rings, the convolution's row blocking and separable
    /// passes, or the GPU kernel's launch.
    pub(super) fn write_plane_detail(
        &self,
        f: &mut Formatter<'_>,
        cost: &KernelCost,
    ) -> fmt::Result {
        let r = cost.radius;
        match (&self.kernel, self.engine) {
            (Kernel::Stencil2(_), Engine::Blocked) => writeln!(
                f,
                "         dim_t {}, tiles of {} columns (halos of R·dim_t = {} on each side) \
                 streamed through y in work items of {} rows; κ = {:.3}; rings of {} rows per \
                 level: {} per thread (private cache {})",
                self.dim_t,
                self.tile[0],
                r * self.dim_t,
                self.tile[1],
                self.chosen.kappa,
                2 * r + 1,
                human_bytes(self.chosen.working_set),
                human_bytes(self.machine.private_cache_bytes())
            ),
            (Kernel::Filter(filt), Engine::Blocked) => {
                let [kw, kh] = filt.size();
                writeln!(
                    f,
                    "         {CONV_ROWS} output rows at a time, each input row loaded once for all of \
                     them, in bands of {} rows{}",
                    self.tile[1],
                    if filt.separable().is_some() {
                        format!(
                            "; separable: a row pass of {kw} taps and a column pass of {kh} instead of {} taps",
                            filt.taps()
                        )
                    } else {
                        String::new()
                    }
                )
            }
            (_, Engine::GpuBlocked) => {
                let l = self.chosen.gpu.as_ref();
                let (block, ry) = l.map_or((0, 0), |l| (l.block[0], l.ry));
                if self.kernel.filter().is_some() {
                    writeln!(
                        f,
                        "         systolic warp-shuffle kernel: blocks of {block} threads, each \
                         lane a column of {ry} output rows, partial sums shifted across the warp"
                    )
                } else {
                    writeln!(
                        f,
                        "         {} steps per launch: strips of {} columns and {} rows, x \
                         neighbours by warp shuffle, κ = {:.3}",
                        self.dim_t, self.tile[0], self.tile[1], self.chosen.kappa
                    )
                }
            }
            (_, Engine::GpuNaive) => writeln!(f, "         one thread per cell, a launch per step"),
            _ => Ok(()),
        }
    }

    /// The wave equation's arrays and, for the blocked engine, its units and rings.
    pub(super) fn write_wave_detail(
        &self,
        f: &mut Formatter<'_>,
        cost: &KernelCost,
    ) -> fmt::Result {
        let r = cost.radius;
        writeln!(
            f,
            "         arrays: u^n (star of radius {r}), u^(n-1), (v·dt)² per cell, and φ in the \
             absorbing layers; inner cells take the plain update, layer cells the PML's"
        )?;
        if self.kernel.wave().is_some_and(|w| w.has_rigid_faces()) {
            writeln!(
                f,
                "         rigid faces: their boundary layers mirror u before every step, so \
                 every engine runs one step per pass (dim_t 1)"
            )?;
        }
        if let Some(g) = &self.chosen.gpu {
            return self.write_wave_gpu(f, g, r);
        }
        if self.engine != Engine::Blocked {
            return Ok(());
        }
        writeln!(
            f,
            "         dim_t {}, units of {}x{} cells in x and y and 1/{} of z, each level \
             computing R·(dim_t − k) = up to {} halo cells more per side; κ = {:.3}; rings of \
             {} planes of u (and φ) per level: {} per thread (private cache {})",
            self.dim_t,
            self.tile[0],
            self.tile[1],
            self.z_chunks,
            r * (self.dim_t - 1),
            self.chosen.kappa,
            2 * r + 1,
            human_bytes(self.chosen.working_set),
            human_bytes(self.machine.private_cache_bytes())
        )
    }

    /// The GPU wave engines: each array's buffering and the model's figures.
    fn write_wave_gpu(&self, f: &mut Formatter<'_>, g: &GpuLaunch, r: usize) -> fmt::Result {
        if let Some(b) = &g.buffering {
            writeln!(
                f,
                "         buffering (Hu et al.'s efficiency-based assignment): {b}"
            )?;
        }
        if self.engine == Engine::GpuBlocked {
            let rx = g.rx.max(1);
            let columns = if rx > 1 {
                format!(" × {rx} columns (moved as one vector)")
            } else {
                String::new()
            };
            writeln!(
                f,
                "         dim_t {}, blocks of {}x{} threads, {} rows{columns} each: tiles of \
                 {}x{} columns, an R = {r}-cell rim loaded and a ghost zone of R·(dim_t − 1) = \
                 {} cells computed per side, {} planes per block along z; κ = {:.3}; {} of \
                 shared memory per block",
                self.dim_t,
                g.block[0],
                g.block[1],
                g.ry,
                g.block[0] * rx,
                g.block[1] * g.ry,
                r * (self.dim_t - 1),
                g.stream_block,
                self.chosen.kappa,
                human_bytes(g.shared_bytes)
            )?;
            let tall = self.dim_t == 1 && rx == 2 && g.block == [32, 16];
            if let (true, Some(b)) = (tall, self.gpu.as_ref().and_then(memory_bound_copy_rate)) {
                writeln!(
                    f,
                    "         32x16 threads rather than 32x8: this GPU copies {b:.1} bytes per SM \
                     cycle (below 14), so the one-step pass waits on memory, and a taller tile \
                     loads fewer ghost rows per cell"
                )?;
            }
        }
        writeln!(
            f,
            "         model: {:.0} MUPS on the SMs (before κ), {:.0} MUPS from memory; {:?}-bound",
            self.chosen.compute_mups, self.chosen.memory_mups, self.chosen.bound
        )
    }
}
