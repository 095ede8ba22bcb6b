//! `Display` for [`Plan`]: the report a person reads, one part per line group (the request, the
//! machine, the kernel's balance, the choice, the prediction, the candidates).

use std::fmt::{self, Display, Formatter};

use super::candidate::{Candidate, GpuLaunch};
use super::kernel::{Kernel, KernelCost};
use super::model;
use super::recipe::Plan;
use crate::engine::Engine;

/// Marks a choice the user fixed.
fn mark(fixed: bool) -> &'static str {
    if fixed {
        " (set by user)"
    } else {
        ""
    }
}

impl Display for Plan {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let cost = self.kernel.cost(self.dtype);
        self.write_machine(f)?;
        self.write_balance(f, &cost)?;
        self.write_gpu(f)?;
        self.write_choice(f)?;
        if self.kernel.is_2d() {
            self.write_plane_detail(f, &cost)?;
        } else if self.kernel.wave().is_some() {
            self.write_wave_detail(f, &cost)?;
        } else {
            if let Some(l) = &self.chosen.gpu {
                self.write_launch(f, l)?;
            }
            if self.engine == Engine::Blocked {
                self.write_blocking(f, &cost)?;
            }
        }
        self.write_prediction(f, &cost)?;
        self.write_candidates(f)?;
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

impl Plan {
    /// The request and the machine: cores, SIMD, caches and memory bandwidth.
    fn write_machine(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let m = &self.machine;
        let [nx, ny, nz] = self.dims;
        writeln!(
            f,
            "plan: {} {} on {nx}x{ny}x{nz} ({} interior cells)",
            self.kernel,
            self.dtype,
            self.interior_cells()
        )?;
        let caches: Vec<String> = m
            .caches
            .iter()
            .map(|c| format!("L{} {}", c.level, human_bytes(c.bytes)))
            .collect();
        writeln!(
            f,
            "machine: {} | {} cores @ {:.2} GHz | {} ({} {} lanes) | {} | memory {:.1} GB/s ({})",
            m.cpu_model,
            m.cores,
            m.freq_ghz,
            m.isa,
            m.lanes(self.dtype),
            self.dtype,
            caches.join(", "),
            m.bandwidth_gbs,
            m.bandwidth_source
        )?;
        if m.core_bandwidth_gbs > 0.0 && m.bandwidth_for(self.threads) < m.bandwidth_gbs {
            writeln!(
                f,
                "memory:  {:.1} GB/s on {} thread{} ({:.1} GB/s per core on its own)",
                m.bandwidth_for(self.threads),
                self.threads,
                if self.threads == 1 { "" } else { "s" },
                m.core_bandwidth_gbs
            )?;
        }
        Ok(())
    }

    /// The kernel's bytes per operation against the machine's (eq. 3), and the cache budget.
    fn write_balance(&self, f: &mut Formatter<'_>, cost: &KernelCost) -> fmt::Result {
        let arith = cost.ops_per_update - cost.loads_per_update - cost.stores_per_update;
        let arith = if arith == cost.flops_per_update {
            format!("{arith} flop")
        } else {
            format!(
                "{arith} arithmetic ({} flop, FMA = 2)",
                cost.flops_per_update
            )
        };
        writeln!(
            f,
            "kernel:  {arith} + {} loads + {} store{} = {} ops/update, {} B/update -> γ = {:.3} B/op",
            cost.loads_per_update,
            cost.stores_per_update,
            if cost.stores_per_update == 1 { "" } else { "s" },
            cost.ops_per_update,
            cost.bytes_per_update,
            self.kernel_bytes_per_op
        )?;
        self.write_eta(f)?;
        if self.kernel.is_2d() {
            return Ok(());
        }
        self.write_cache(f, cost)
    }

    /// Γ, η and, for lattices, the share of the bandwidth their streams reach.
    fn write_eta(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let m = &self.machine;
        let lattice = self.kernel.lbm().is_some();
        let efficiency = if m.efficiency(lattice) < 1.0 {
            format!(
                " ({:.0}% of the {:.1} Gops peak, {})",
                100.0 * m.efficiency(lattice),
                m.peak_gops(self.dtype, m.cores),
                if lattice && m.lattice_efficiency > 0.0 {
                    format!("lattice kernel {}", m.lattice_source)
                } else {
                    m.compute_source.clone()
                }
            )
        } else {
            String::new()
        };
        writeln!(
            f,
            "balance: Γ = {:.1} GB/s / {:.1} Gops{} = {:.3} B/op -> η = ⌈γ/Γ⌉ = {} (eq. 3){}",
            m.bandwidth_gbs,
            m.sustained_gops(self.dtype, m.cores, lattice),
            efficiency,
            self.machine_bytes_per_op,
            self.eta,
            if self.eta <= 1 {
                ": compute-bound without temporal blocking"
            } else {
                ""
            }
        )?;
        if lattice && m.lattice_stream_share < 1.0 {
            writeln!(
                f,
                "streams: a lattice sweep from memory moves {:.0}% of the {:.1} GB/s ({})",
                100.0 * m.lattice_stream_share,
                m.bandwidth_gbs,
                m.lattice_stream_source
            )?;
        }
        Ok(())
    }

    /// The cache the blocking buffers may use, and eq. (4)'s tile side.
    fn write_cache(&self, f: &mut Formatter<'_>, cost: &KernelCost) -> fmt::Result {
        let m = &self.machine;
        writeln!(
            f,
            "cache:   C = {} ({:.0}% of the {} LLC{}); eq. (4) tile side for dim_t = η: {}",
            human_bytes(self.cache_bytes),
            100.0 * self.cache_bytes as f64 / m.usable_llc_bytes() as f64,
            human_bytes(m.usable_llc_bytes()),
            if m.usable_llc_bytes() < m.llc_bytes() {
                format!(
                    " the cores can use ({}); the OS reports {}",
                    m.cache_source,
                    human_bytes(m.llc_bytes())
                )
            } else {
                String::new()
            },
            model::square_tile(
                self.cache_bytes,
                cost.element_bytes,
                cost.radius,
                self.eta,
                m.lanes(self.dtype)
            )
        )
    }

    /// The GPU the plan considered.
    fn write_gpu(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let Some(g) = &self.gpu else {
            return Ok(());
        };
        writeln!(
            f,
            "gpu:     {} | {} SMs @ {:.2} GHz | {:.0} GFLOP/s {} | {:.0} GB/s measured ({:.0} peak) | {} shared/SM, L2 {}",
            g.name,
            g.sms,
            g.clock_ghz,
            g.peak_gflops(self.dtype),
            self.dtype,
            g.bandwidth_gbs,
            g.peak_bandwidth_gbs,
            human_bytes(g.shared_per_sm),
            human_bytes(g.l2_bytes)
        )
    }

    /// A note when there are more threads than the machine's cores: they share cores, and
    /// the engines' barriers wait for descheduled threads.
    fn oversubscription(&self) -> String {
        let cores = self.machine.cores;
        if self.threads <= cores {
            return String::new();
        }
        format!(", more than the {cores} cores: they share cores and run slowly")
    }

    /// The engine, with the lattice storage on the GPU or the threads on the CPU.
    fn write_choice(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.engine == Engine::Reference {
            return writeln!(
                f,
                "choice:  engine {}{}, one thread (the reference loop runs on one core{})",
                self.engine,
                mark(self.overrides.engine),
                if self.overrides.threads && self.threads > 1 {
                    format!("; the {} threads set are not used", self.threads)
                } else {
                    String::new()
                }
            );
        }
        if !self.engine.is_gpu() {
            return writeln!(
                f,
                "choice:  engine {}{}, threads {}{}{}{}",
                self.engine,
                mark(self.overrides.engine),
                self.threads,
                mark(self.overrides.threads),
                if self.pin { " (pinned)" } else { "" },
                self.oversubscription()
            );
        }
        let storage = match (&self.kernel, self.in_place) {
            (Kernel::Lbm(_), true) => {
                ", storage in place (AA pattern: one copy of the populations)"
            }
            (Kernel::Lbm(_), false) => ", storage two copies (A/B)",
            _ => "",
        };
        let fixed = !storage.is_empty() && self.overrides.in_place;
        writeln!(
            f,
            "choice:  engine {}{}{storage}{}",
            self.engine,
            mark(self.overrides.engine),
            mark(fixed)
        )?;
        match self.in_place_why {
            Some(why) => writeln!(f, "         storage: {why}"),
            None => Ok(()),
        }
    }

    /// The gpu-blocked launch shape, its resources and the model's times.
    fn write_launch(&self, f: &mut Formatter<'_>, l: &GpuLaunch) -> fmt::Result {
        writeln!(
            f,
            "         dim_t {}{}, tile {}x{} (block {}x{} threads, {}{}{}), {} planes per stream block, {} blocks",
            self.dim_t,
            mark(self.overrides.dim_t),
            self.tile[0],
            self.tile[1],
            l.block[0],
            l.block[1],
            if l.rx > 0 {
                format!("{}x{} cells each", l.rx, l.ry)
            } else {
                format!("{} cells each in y", l.ry)
            },
            match (l.rx > 0, l.skew, self.kernel.wave().is_some()) {
                (true, _, true) => ", each thread's cells along x moved as one vector",
                (true, true, _) => ", x neighbours by warp shuffle, levels skewed",
                (true, false, _) => ", x neighbours by warp shuffle",
                _ => "",
            },
            mark(self.overrides.gpu_shape),
            l.stream_block,
            l.blocks
        )?;
        writeln!(
            f,
            "         ~{} registers/thread, {} shared/block, {} blocks/SM; threads' work per useful update {:.2}",
            l.registers,
            human_bytes(l.shared_bytes),
            l.blocks_per_sm,
            self.chosen.kappa
        )?;
        writeln!(
            f,
            "         model per pass: compute {:.3} ms, shared memory {:.3} ms, global memory {:.3} ms, SM efficiency {:.2}",
            l.times_ms[0], l.times_ms[1], l.times_ms[2], l.sm_efficiency
        )?;
        if let Some(m) = self.chosen.measured_mups {
            writeln!(
                f,
                "         autotuned: measured {m:.0} MUPS vs model {:.0} MUPS",
                self.chosen.predicted_mups
            )?;
        }
        Ok(())
    }

    /// The blocked CPU engine's `dim_t`, tile, κ, working set and tile groups.
    fn write_blocking(&self, f: &mut Formatter<'_>, cost: &KernelCost) -> fmt::Result {
        let r = cost.radius;
        writeln!(
            f,
            "         dim_t {}{}, tile {}x{}{} (valid output {}x{}), κ = {:.3}, working set {}",
            self.dim_t,
            mark(self.overrides.dim_t),
            self.tile[0],
            self.tile[1],
            mark(self.overrides.tile),
            self.tile[0] - 2 * r * self.dim_t,
            self.tile[1] - 2 * r * self.dim_t,
            self.chosen.kappa,
            human_bytes(self.chosen.working_set)
        )?;
        self.write_groups(f)?;
        if self.overrides.tile_threads {
            // One level per pass has no tile groups: the override then changes nothing.
            let unused = if self.dim_t == 1 {
                " (unused: one level per pass has no tile groups)"
            } else {
                ""
            };
            writeln!(f, "         threads per tile group set by user{unused}")?;
        }
        Ok(())
    }

    /// How the team is cut into tile groups and what each claims.
    fn write_groups(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.dim_t == 1 {
            return writeln!(
                f,
                "         one level per pass: threads claim a tile's plane at a time, no tile groups"
            );
        }
        let groups = self.tile_groups();
        writeln!(
            f,
            "         tile groups: {groups} of {}{} thread{} (each claims {}, with its own ring buffers{})",
            self.tile_threads,
            if groups * self.tile_threads == self.threads { "" } else { " or fewer" },
            if self.tile_threads == 1 { "" } else { "s" },
            if self.z_chunks == 1 {
                "whole tiles".to_string()
            } else {
                format!(
                    "one tile's chunk of z at a time: z cut into {}{}",
                    self.z_chunks,
                    mark(self.overrides.z_chunks)
                )
            },
            if self.tile_threads == 1 { " and no barrier" } else { " and barrier" },
        )
    }

    /// The predicted rate and which limit binds.
    fn write_prediction(&self, f: &mut Formatter<'_>, cost: &KernelCost) -> fmt::Result {
        let memory = if self.chosen.memory_mups.is_finite() {
            format!("memory {:.0} MUPS", self.chosen.memory_mups)
        } else {
            "the data fits in cache".to_string()
        };
        writeln!(
            f,
            "predict: {:.0} MUPS, {:.1} GFLOP/s, {}-bound (compute {:.0} MUPS, {memory}, before κ)",
            self.chosen.predicted_mups,
            self.chosen.predicted_mups * cost.flops_per_update as f64 / 1e3,
            self.chosen.bound,
            self.chosen.compute_mups,
        )
    }

    /// Every configuration weighed, one line each, the chosen one starred.
    fn write_candidates(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "candidates:")?;
        writeln!(
            f,
            "  {:<11} {:>5} {:>11} {:>8} {:>7} {:>10} {:>10} {:>9} {:>8}  GPU launch",
            "engine", "dim_t", "tile", "thr/tile", "κ", "set", "MUPS", "measured", "bound"
        )?;
        for c in &self.candidates {
            let chosen = c.engine == self.chosen.engine
                && c.dim_t == self.chosen.dim_t
                && c.tile == self.chosen.tile
                && c.tile_threads == self.chosen.tile_threads
                && c.gpu == self.chosen.gpu;
            writeln!(
                f,
                "{} {:<11} {:>5} {:>11} {:>8} {:>7.3} {:>10} {:>10.0} {:>9} {:>8}  {}",
                if chosen { "*" } else { " " },
                c.engine.name(),
                c.dim_t,
                format!("{}x{}", c.tile[0], c.tile[1]),
                if c.engine == Engine::Blocked {
                    c.tile_threads.to_string()
                } else {
                    "-".into()
                },
                c.kappa,
                human_bytes(c.working_set),
                c.predicted_mups,
                c.measured_mups.map_or("-".into(), |m| format!("{m:.0}")),
                c.bound.to_string(),
                launch_summary(c)
            )?;
        }
        Ok(())
    }
}

/// A candidate's GPU launch shape in one column (empty for CPU engines).
fn launch_summary(c: &Candidate) -> String {
    c.gpu.as_ref().map_or(String::new(), |l| {
        format!(
            "block {}x{} {}ry {} hz {}, {} regs, {} blocks/SM",
            l.block[0],
            l.block[1],
            if l.rx > 0 {
                format!("rx {}{} ", l.rx, if l.skew { " skew" } else { "" })
            } else {
                String::new()
            },
            l.ry,
            l.stream_block,
            l.registers,
            l.blocks_per_sm
        )
    })
}

/// `1536` -> `1.5 KiB`.
pub fn human_bytes(bytes: usize) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1 << 20) as f64 {
        format!("{:.1} MiB", b / (1 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.0} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}
