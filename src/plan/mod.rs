//! The planner: reads the machine and the kernel and chooses the engine, `dim_t` (time steps per
//! pass) and tile size with the 3.5D paper's model (section V), explaining its choice.
//!
//! ```no_run
//! use stencil35d::{DType, Plan, Stencil};
//! let plan = Plan::new(Stencil::seven_point(0.4, 0.1), DType::F32, [512, 512, 512]).unwrap();
//! println!("{plan}"); // engine, dim_t, tile, κ, predicted MUPS and why
//! let tuned = plan.rebuild().dim_t(3).tile([256, 256]).build().unwrap();
//! assert_eq!(tuned.dim_t(), 3);
//! ```

pub(crate) mod bandwidth;
mod builder;
pub(crate) mod cache_probe;
mod candidate;
mod choose;
pub(crate) mod compute;
pub(crate) mod contention;
mod copies;
pub(crate) mod display;
pub(crate) mod flops;
pub(crate) mod gpu_buffering;
mod gpu_model;
mod kernel;
mod limits;
mod machine;
mod model;
mod params;
mod pinned;
mod plane_display;
pub(crate) mod plane_model;
mod recipe;
pub(crate) mod tune;
mod wave_gpu;
mod wave_model;

pub use crate::engine::Engine;
pub use builder::PlanBuilder;
pub use candidate::{Bound, Candidate, GpuLaunch};
pub use gpu_model::GpuShape;
pub use kernel::{Kernel, KernelCost};
pub use limits::{
    DEFAULT_CACHE_SHARE, LATTICE_CACHE_SHARE, LONGEST_RUN_SECONDS, MAX_DIM_T, MAX_THREADS_PER_CORE,
    PLANNER_MAX_DIM_T,
};
pub use machine::{CacheLevel, Machine};
pub use model::{eta, kappa, square_tile, working_set};
pub use recipe::{Overrides, Plan};

#[cfg(test)]
mod tests {
    use super::choose::tuned_choice;
    use super::*;
    use crate::lbm::LbmKernel;
    use crate::{DType, Error, Stencil};

    /// The planner tests' lattice: closed on every axis, without a body force.
    const CLOSED_LATTICE: LbmKernel = LbmKernel {
        periodic: [false; 3],
        forced: false,
        storage: crate::lbm::Storage::Native,
    };

    /// The plan for [`CLOSED_LATTICE`] of `dims` on `m` with `engine` (and `dim_t` if given).
    fn lattice_plan(
        m: &Machine,
        dtype: DType,
        dims: [usize; 3],
        engine: Engine,
        dim_t: Option<usize>,
    ) -> Plan {
        let mut b = PlanBuilder::new(CLOSED_LATTICE, dtype, dims)
            .machine(m.clone())
            .engine(engine);
        if let Some(d) = dim_t {
            b = b.dim_t(d);
        }
        b.build().unwrap()
    }

    fn paper_plan(stencil: Stencil, dtype: DType) -> PlanBuilder {
        // Planes too wide for a full-width strip, so eq. (4)'s square tile is the best choice.
        PlanBuilder::new(stencil, dtype, [2048, 2048, 64])
            .machine(Machine::paper_core_i7())
            .cache_share(0.5)
    }

    /// A plan for the detected machine is rebuilt for the machine detected again (so a GPU
    /// host's rebuilt plan may take the GPU), at the same instruction-set level; a plan for a
    /// described machine keeps that machine.
    #[test]
    fn a_rebuilt_plan_detects_its_machine_again_unless_it_was_described() {
        let detected = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [32; 3])
            .build()
            .unwrap();
        let b = detected.rebuild();
        assert!(b.machine.is_none());
        assert_eq!(b.isa, Some(detected.machine().isa));
        let described = paper_plan(Stencil::seven_point(0.4, 0.1), DType::F32)
            .build()
            .unwrap();
        assert_eq!(
            described.rebuild().machine.as_ref(),
            Some(described.machine())
        );
        assert_eq!(described.rebuild().cache_share, Some(0.5));
    }

    /// A tuned plan takes the fastest measured gpu-blocked shape when the model picks that
    /// engine (or when it measured above the model's other pick), not the model's first shape.
    #[test]
    fn a_tuned_plan_takes_the_measured_winner() {
        let template = paper_plan(Stencil::seven_point(0.4, 0.1), DType::F32)
            .build()
            .unwrap()
            .chosen()
            .clone();
        let candidate = |engine, dim_t, predicted, measured| Candidate {
            engine,
            dim_t,
            predicted_mups: predicted,
            measured_mups: measured,
            ..template.clone()
        };
        let model_first = candidate(Engine::GpuBlocked, 2, 680.0, None);
        let winner = candidate(Engine::GpuBlocked, 4, 650.0, Some(640.0));
        assert_eq!(tuned_choice(model_first.clone(), Some(&winner)).dim_t, 4);
        // Untuned: the model's pick.
        let untimed = candidate(Engine::GpuBlocked, 4, 650.0, None);
        assert_eq!(tuned_choice(model_first, Some(&untimed)).dim_t, 2);
        // The model picks gpu-naive: the winner only where it measured faster.
        let naive = candidate(Engine::GpuNaive, 1, 260.0, None);
        assert_eq!(tuned_choice(naive.clone(), Some(&winner)).dim_t, 4);
        let slow = candidate(Engine::GpuBlocked, 4, 650.0, Some(200.0));
        assert_eq!(
            tuned_choice(naive.clone(), Some(&slow)).engine,
            Engine::GpuNaive
        );
        assert_eq!(tuned_choice(naive, None).engine, Engine::GpuNaive);
    }

    #[test]
    fn reproduces_the_papers_7_point_choice() {
        // The paper's scheme: all four threads on every tile, dim_t = η = 2 (eq. 3) and eq.
        // (4)'s tile for it.
        let plan = paper_plan(Stencil::seven_point(0.4, 0.1), DType::F32)
            .tile_threads(4)
            .dim_t(2)
            .build()
            .unwrap();
        assert_eq!(plan.engine(), Engine::Blocked);
        assert_eq!(plan.tile(), [360, 360]);
        let dp = paper_plan(Stencil::seven_point(0.4, 0.1), DType::F64)
            .tile_threads(4)
            .dim_t(2)
            .build()
            .unwrap();
        assert_eq!(dp.tile(), [256, 256]);
        // Left to itself the planner blocks at least η deep (near-ties go deeper, see `best`)
        // and reaches the compute bound.
        let auto = paper_plan(Stencil::seven_point(0.4, 0.1), DType::F32)
            .tile_threads(4)
            .build()
            .unwrap();
        assert_eq!(auto.engine(), Engine::Blocked);
        assert!(auto.dim_t() >= 2, "{auto}");
        assert_eq!(auto.chosen().bound, Bound::Compute, "{auto}");
    }

    #[test]
    fn overrides_are_respected_and_validated() {
        let base = paper_plan(Stencil::seven_point(0.4, 0.1), DType::F32);
        let p = base
            .clone()
            .dim_t(4)
            .tile([100, 80])
            .threads(3)
            .build()
            .unwrap();
        assert_eq!(
            (p.engine(), p.dim_t(), p.tile(), p.threads()),
            (Engine::Blocked, 4, [100, 80], 3)
        );
        assert!(p.overrides().tile && p.overrides().dim_t);
        assert!(matches!(
            base.clone().dim_t(4).tile([8, 8]).build(),
            Err(Error::InvalidPlan(_))
        ));
        assert!(matches!(
            base.clone().threads(0).build(),
            Err(Error::InvalidPlan(_))
        ));
        assert!(matches!(
            base.clone().dim_t(0).build(),
            Err(Error::InvalidPlan(_))
        ));
        assert!(matches!(
            base.clone().engine(Engine::Naive).dim_t(3).build(),
            Err(Error::InvalidPlan(_))
        ));
        let naive = p.with_engine(Engine::Naive).unwrap();
        assert_eq!((naive.engine(), naive.dim_t()), (Engine::Naive, 1));
        let text = p.to_string();
        assert!(
            text.contains("set by user") && text.contains("dim_t 4"),
            "{text}"
        );
    }

    #[test]
    fn rejects_grids_thinner_than_the_halo() {
        let err = PlanBuilder::new(Stencil::from_name("star:3").unwrap(), DType::F64, [7, 6, 7])
            .machine(Machine::paper_core_i7())
            .build()
            .unwrap_err();
        assert!(
            matches!(err, Error::GridTooSmall { radius: 3, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("at least 7 cells"));
    }

    #[test]
    fn compute_bound_kernels_skip_temporal_blocking() {
        // 27-point: γ = 8 B / 81 ops ≈ 0.1 < Γ: no temporal blocking pays.
        let plan = paper_plan(Stencil::from_name("box27").unwrap(), DType::F32)
            .build()
            .unwrap();
        assert_eq!(plan.dim_t(), 1);
    }

    #[test]
    fn small_grids_get_one_tile() {
        let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [40, 30, 20])
            .machine(Machine::paper_core_i7())
            .dim_t(3)
            .tile_threads(4)
            .build()
            .unwrap();
        assert_eq!(plan.tile(), [44, 34]);
        assert_eq!(plan.chosen().kappa, 1.0);
        // A tile the user sets larger than the grid is narrowed to it, and the plan says so.
        let wide = plan.rebuild().tile([1000, 34]).build().unwrap();
        assert_eq!(wide.tile(), [44, 34]);
        assert!(
            wide.warnings()
                .iter()
                .any(|w| w.contains("1000x34 set") && w.contains("runs 44x34")),
            "{wide}"
        );
    }

    #[test]
    fn the_reference_plan_says_it_runs_on_one_core() {
        let b = paper_plan(Stencil::seven_point(0.4, 0.1), DType::F32).engine(Engine::Reference);
        let text = b.clone().build().unwrap().to_string();
        assert!(
            text.contains("engine reference (set by user), one thread"),
            "{text}"
        );
        let text = b.threads(3).build().unwrap().to_string();
        assert!(text.contains("the 3 threads set are not used"), "{text}");
    }

    /// A 16-core machine like the one the 3.5D engine was slow on with every thread on every
    /// tile: 2 MiB private L2, one 32 MiB LLC.
    fn sixteen_cores() -> Machine {
        let mut m = Machine::paper_core_i7();
        m.cores = 16;
        m.f32_lanes = 16;
        m.caches = vec![
            CacheLevel {
                level: 1,
                bytes: 48 << 10,
                shared_by: 1,
            },
            CacheLevel {
                level: 2,
                bytes: 2 << 20,
                shared_by: 1,
            },
            CacheLevel {
                level: 3,
                bytes: 32 << 20,
                shared_by: 16,
            },
        ];
        m.bandwidth_gbs = 50.0;
        m
    }

    /// The z chunk count: about six units per group by default for one-thread groups on many
    /// cores, the user's count (clamped to the interior's planes) when given, 1 for other
    /// engines and for one level per pass, and an error for 0 or a non-blocked engine.
    #[test]
    fn z_chunks_give_groups_units_and_follow_the_user() {
        let b = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [512; 3])
            .machine(sixteen_cores());
        let plan = b
            .clone()
            .engine(Engine::Blocked)
            .tile_threads(1)
            .dim_t(4)
            .build()
            .unwrap();
        let tiles: usize = plan
            .tile()
            .iter()
            .map(|t| 510usize.div_ceil(t - 8))
            .product();
        let units = plan.z_chunks() * tiles;
        assert!(plan.z_chunks() > 1 && units >= 6 * 16, "{plan}");
        assert!(plan
            .to_string()
            .contains(&format!("z cut into {}", plan.z_chunks())));
        let fixed = plan.rebuild().z_chunks(5).build().unwrap();
        assert_eq!(fixed.z_chunks(), 5);
        assert!(fixed.to_string().contains("z cut into 5 (set by user)"));
        let narrowed = plan.rebuild().z_chunks(9999).build().unwrap();
        assert_eq!(narrowed.z_chunks(), 510);
        assert!(
            narrowed
                .warnings()
                .iter()
                .any(|w| w.contains("not the 9999 set")),
            "{narrowed}"
        );
        assert!(
            !fixed.warnings().iter().any(|w| w.contains("not the 5 set")),
            "{fixed}"
        );
        assert_eq!(fixed.with_engine(Engine::Naive).unwrap().z_chunks(), 1);
        let spatial = b.clone().engine(Engine::Blocked).dim_t(1).build().unwrap();
        assert_eq!(spatial.z_chunks(), 1);
        assert!(matches!(
            b.clone().engine(Engine::Blocked).z_chunks(0).build(),
            Err(Error::InvalidPlan(_))
        ));
        assert!(matches!(
            b.engine(Engine::Naive).z_chunks(2).build(),
            Err(Error::InvalidPlan(_))
        ));
    }

    #[test]
    fn many_cores_split_the_team_into_tile_groups() {
        let m = sixteen_cores();
        let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [512; 3])
            .machine(m.clone())
            .engine(Engine::Blocked)
            .build()
            .unwrap();
        assert!(plan.tile_threads() < 16, "{plan}");
        let groups = plan.tile_groups();
        assert_eq!(groups, 16usize.div_ceil(plan.tile_threads()));
        // The tiles spread evenly over the groups and each group's tile fits its cache share.
        let c = plan.chosen();
        let tiles = [0, 1].map(|a| (510usize).div_ceil(c.tile[a] - 2 * c.dim_t));
        assert_eq!((tiles[0] * tiles[1]) % groups, 0, "{plan}");
        assert!(
            c.working_set * groups <= m.llc_bytes().max(16 * (2 << 20)),
            "{plan}"
        );
        let text = plan.to_string();
        assert!(text.contains("tile groups"), "{text}");
        // The user's choice wins and is reported.
        let fixed = plan.rebuild().tile_threads(16).build().unwrap();
        assert_eq!((fixed.tile_threads(), fixed.tile_groups()), (16, 1));
        assert!(fixed.to_string().contains("set by user"));
        let clamped = plan.rebuild().tile_threads(40).build().unwrap();
        assert_eq!(clamped.tile_threads(), 16);
        let uneven = plan.rebuild().threads(12).tile_threads(8).build().unwrap();
        assert_eq!((uneven.tile_threads(), uneven.tile_groups()), (6, 2));
        assert!(matches!(
            plan.rebuild().tile_threads(0).build(),
            Err(Error::InvalidPlan(_))
        ));
        assert!(matches!(
            PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [64; 3])
                .machine(m)
                .engine(Engine::Naive)
                .tile_threads(2)
                .build(),
            Err(Error::InvalidPlan(_))
        ));
    }

    #[test]
    fn lattice_tiles_stay_large_enough_on_many_cores() {
        for dtype in [DType::F32, DType::F64] {
            let plan = lattice_plan(&server_slice(), dtype, [256; 3], Engine::Blocked, None);
            assert!(plan.chosen().kappa < 1.5, "{plan}");
        }
    }

    /// The 16-core server slice the planner was fitted on: an AVX-512 VM whose OS reports a
    /// 300 MiB L3, of which the probe finds 128 MiB streaming fast (295 GB/s, 18 GB/s per core),
    /// at half the nominal peak.
    fn server_slice() -> Machine {
        let mut m = sixteen_cores();
        m.freq_ghz = 2.1;
        m.caches[2].bytes = 300 << 20;
        m.bandwidth_gbs = 88.0;
        m.compute_efficiency = 0.5;
        m.row_overhead_cells = machine::ROW_OVERHEAD_CELLS;
        m.measured_cache_bytes = 128 << 20;
        m.cache_gbs = 295.0;
        m.private_cache_gbs = 500.0;
        m
    }

    #[test]
    fn a_server_slice_gets_one_thread_full_width_strips() {
        // Measured there: one-thread full-width strips of 16-40 rows ran 1.6-1.9x naive (star7)
        // and 1.1-1.25x (D3Q19), squares and whole-team tiles slower than naive.
        let m = server_slice();
        let star = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [512; 3])
            .machine(m.clone())
            .engine(Engine::Blocked)
            .build()
            .unwrap();
        assert_eq!(star.tile_threads(), 1, "{star}");
        assert_eq!(star.tile()[0], 510 + 2 * star.dim_t(), "{star}");
        assert!(
            star.tile()[1] <= 64 && (2..=4).contains(&star.dim_t()),
            "{star}"
        );
        let text = star.to_string();
        assert!(text.contains("128.0 MiB LLC the cores can use"), "{text}");
        assert!(text.contains("50% of the"), "{text}");
        let lbm = lattice_plan(&m, DType::F32, [256; 3], Engine::Blocked, None);
        assert_eq!(lbm.tile_threads(), 1, "{lbm}");
        assert!(lbm.tile()[0] >= 256 && lbm.tile()[1] <= 32, "{lbm}");
    }
    #[test]
    fn few_threads_draw_only_their_own_cores_bandwidth() {
        // Measured on the 16-core host: one core alone moves 16.2 of the 72-106 GB/s.
        let m = server_boot(105.7, 0.43, 32);
        assert_eq!(m.bandwidth_for(2), 32.4);
        assert_eq!(m.bandwidth_for(16), 105.7);
        let plan = |threads| {
            PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [512; 3])
                .machine(m.clone())
                .threads(threads)
                .engine(Engine::Naive)
                .build()
                .unwrap()
        };
        let (one, all) = (plan(1), plan(16));
        assert_eq!(one.chosen().memory_mups, 16.2e3 / 8.0);
        assert!(
            one.to_string().contains("16.2 GB/s per core on its own"),
            "{one}"
        );
        assert_eq!(all.chosen().memory_mups, 105.7e3 / 8.0);
        assert!(!all.to_string().contains("per core on its own"), "{all}");
    }

    /// A 2-core Xeon slice: 2 MiB L2s, an L3 the OS reports as 260 MiB of which
    /// the probe finds 8 MiB fast, streaming at 98 GB/s against the L2s' 164 GB/s.
    fn xeon_slice() -> Machine {
        let mut m = sixteen_cores();
        m.cores = 2;
        m.f32_lanes = 8;
        m.freq_ghz = 2.3;
        m.caches[2] = CacheLevel {
            level: 3,
            bytes: 260 << 20,
            shared_by: 2,
        };
        m.bandwidth_gbs = 25.4;
        m.row_overhead_cells = machine::ROW_OVERHEAD_CELLS;
        m.measured_cache_bytes = 8 << 20;
        m.cache_gbs = 98.0;
        m.private_cache_gbs = 164.0;
        m
    }

    #[test]
    fn stencil_rings_stay_in_l2_where_the_last_level_streams_slower() {
        // Measured there (star7 f64 512^3, 2 threads): dim_t 2 514x95 rings (3.1 MB per thread)
        // 1312 MUPS, 514x30 (1 MB) 1734, 516x21 at dim_t 3 1796; f32 516x91 at dim_t 3 3200
        // against 514x55 at dim_t 2 3422. The lattice's rings run as fast in the L3 (198x40 at
        // dim_t 3, 7.6 MB: the fastest D3Q19 f32 tile there).
        let m = xeon_slice();
        let per_core = 98.0 / 2.0 / machine::STENCIL_SPILL_FULL_SPEED_GBS;
        assert!((m.spill_speed() - per_core).abs() < 1e-9);
        for dtype in [DType::F32, DType::F64] {
            let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), dtype, [512; 3])
                .machine(m.clone())
                .engine(Engine::Blocked)
                .build()
                .unwrap();
            assert_eq!(plan.tile_threads(), 1, "{plan}");
            assert!(
                plan.chosen().working_set <= m.private_cache_bytes(),
                "{plan}"
            );
            assert!(plan.dim_t() >= 2, "{plan}");
        }
        let lbm = lattice_plan(&m, DType::F32, [192; 3], Engine::Blocked, None);
        assert!(lbm.tile()[1] >= 16, "{lbm}");
    }

    /// The 2-core AMD EPYC Zen 5 (AVX-512, 1 MiB L2s, 16 MiB of its 32 MiB L3 usable), as its
    /// probes measured it.
    fn zen5_slice() -> Machine {
        let mut m = xeon_slice();
        m.f32_lanes = 16;
        m.freq_ghz = 2.6;
        m.caches[1].bytes = 1 << 20;
        m.caches[2].bytes = 32 << 20;
        m.bandwidth_gbs = 41.7;
        m.core_bandwidth_gbs = 37.5;
        m.compute_efficiency = 1.0;
        m.measured_cache_bytes = 16 << 20;
        m.cache_gbs = 315.5;
        m.private_cache_gbs = 566.7;
        m
    }

    #[test]
    fn stencil_rings_go_to_a_last_level_that_is_fast_per_core() {
        // Measured there (star7 512³, 2 threads, MUPS): f32 dim_t 3 516x21 (rings in the L2)
        // 6,631-6,685, dim_t 4 518x30 7,493-7,533; L3-resident dim_t 5 520x95 9,116-9,380,
        // 7 524x80 9,349-10,222, 8 526x70 9,780-9,988; f64 dim_t 5 520x56 4,713-4,727, 6
        // 522x44 4,549-4,625, 4 518x70 4,188-4,344; naive 4,300-4,800 and 2,350-2,440. With
        // the L3's rate over the L2s' (0.56) as the spill charge the planner took dim_t 3
        // 516x21 and dim_t 2 514x15.
        let m = zen5_slice();
        assert_eq!(m.spill_speed(), 1.0);
        for (dtype, min_dim_t) in [(DType::F32, 6), (DType::F64, 4)] {
            let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), dtype, [512; 3])
                .machine(m.clone())
                .engine(Engine::Blocked)
                .build()
                .unwrap();
            assert!(
                plan.chosen().working_set > m.private_cache_bytes(),
                "{plan}"
            );
            assert!(plan.dim_t() >= min_dim_t, "{plan}");
        }
    }

    #[test]
    fn server_stencil_plans_stay_in_l2_whatever_the_cache_probe_reads() {
        // The 16-core host with one boot's probes but the L3 rate: star7 f32 512³
        // `dim_t` 4 518x30 ran 2.12-2.60x naive, the L3-resident `dim_t` 7 524x78 1.48-1.82x;
        // the probe read 309 GB/s of L3 there, and from 410 GB/s when charged at the lattice's rate (the
        // lattice's) took the L3 plan.
        let mut m = server_slice();
        m.bandwidth_gbs = 77.9;
        m.core_bandwidth_gbs = 13.4;
        m.compute_efficiency = 0.40;
        m.private_cache_gbs = 395.4;
        for cache_gbs in [250.0, 309.1, 410.0, 500.0, 600.0] {
            m.cache_gbs = cache_gbs;
            let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [512; 3])
                .machine(m.clone())
                .engine(Engine::Blocked)
                .build()
                .unwrap();
            assert!(
                plan.chosen().working_set <= m.private_cache_bytes(),
                "{cache_gbs} GB/s: {plan}"
            );
            assert!((3..=5).contains(&plan.dim_t()), "{cache_gbs} GB/s: {plan}");
        }
    }

    #[test]
    fn the_lattice_has_its_own_efficiency_and_reads_each_population_once() {
        // The 16-core host on one boot: the lattice kernel sustained 18% of the peak where
        // the 7-point kernel sustained 29%; naive D3Q19 f32 256^3 moved 57.8 GB/s of
        // populations against a 64.7 GB/s probe (no re-reads).
        let mut m = server_slice();
        m.bandwidth_gbs = 64.7;
        m.compute_efficiency = 0.29;
        m.lattice_efficiency = 0.18;
        let cost = Kernel::from(CLOSED_LATTICE).cost(DType::F32);
        let plan = |engine| lattice_plan(&m, DType::F32, [256; 3], engine, None);
        let naive = plan(Engine::Naive);
        let memory = 64.7e3 / cost.bytes_per_update as f64;
        assert!(
            (naive.chosen().predicted_mups - memory).abs() < 1e-6 * memory,
            "{naive}"
        );
        let compute = m.peak_gops(DType::F32, 16) * 0.18 * 1e3 / cost.ops_per_update as f64;
        let blocked = plan(Engine::Blocked);
        // Rows longer than the probe's 128 nodes pay less of the row overhead (see
        // ModelInput::row_cost): the rate stays within a quarter of the probe's.
        assert!(blocked.chosen().compute_mups <= 1.25 * compute, "{blocked}");
        assert!(blocked.chosen().compute_mups > 0.8 * compute, "{blocked}");
        assert!(blocked.to_string().contains("lattice kernel"), "{blocked}");
    }

    /// A 2-core EPYC (Zen 3) slice as its probes saw it.
    fn epyc_slice() -> Machine {
        let mut m = xeon_slice();
        m.freq_ghz = 2.45;
        m.caches[1].bytes = 512 << 10;
        m.caches[2].bytes = 32 << 20;
        m.bandwidth_gbs = 22.1;
        m.core_bandwidth_gbs = 14.5;
        m.measured_cache_bytes = 16 << 20;
        m.cache_gbs = 122.9;
        m.private_cache_gbs = 162.6;
        m.lattice_efficiency = 0.53;
        m.lattice_stream_share = 0.58;
        m
    }

    #[test]
    fn lattice_passes_wait_for_level_one_and_its_streams_reach_their_share() {
        // D3Q19 f32 192³ there (MLUPS, five runs each): naive 76-92; blocked dim_t 2 196×36
        // 99-126, dim_t 3 198×22 100-139, dim_t 4 200×24 114-163 and 200×32 115-169. min()
        // with the full bandwidth predicted naive 144 and chose dim_t 2 (161).
        let m = epyc_slice();
        let plan = |engine, dim_t| lattice_plan(&m, DType::F32, [192; 3], engine, dim_t);
        let naive = plan(Engine::Naive, None);
        let bytes = Kernel::from(CLOSED_LATTICE)
            .cost(DType::F32)
            .bytes_per_update as f64;
        let memory = 22.1e3 * 0.58 / bytes;
        assert!(
            (naive.chosen().predicted_mups - memory).abs() < 1e-6 * memory,
            "{naive}"
        );
        // Level 1 waits for memory in every pass: two levels are slower than min() says.
        let two = plan(Engine::Blocked, Some(2));
        let c = two.chosen();
        let min = (c.compute_mups / c.kappa).min(c.memory_mups);
        assert!(c.predicted_mups < 0.9 * min, "{two}");
        let chosen = plan(Engine::Blocked, None);
        assert!((3..=5).contains(&chosen.dim_t()), "{chosen}");
        // The lattice's default budget is all of the usable cache.
        assert_eq!(chosen.cache_bytes, 16 << 20, "{chosen}");
        assert!(
            chosen.to_string().contains("58% of the 22.1 GB/s"),
            "{chosen}"
        );
    }

    /// The 16-core host as an AVX2 build's probes saw one boot: 128 MiB of its "300 MiB" L3
    /// fast, 299.8 GB/s in all (18.7 per core) against 567.9 GB/s from half of each 2 MiB L2.
    fn server_avx2() -> Machine {
        let mut m = server_boot(78.5, 0.72, 128);
        m.f32_lanes = 8;
        m.core_bandwidth_gbs = 13.6;
        m.cache_gbs = 299.8;
        m.private_cache_gbs = 567.9;
        m.lattice_efficiency = 0.40;
        m.lattice_stream_share = 1.0;
        m
    }

    /// The 16-core host as an AVX-512 build's probes saw one boot, with a slow lattice kernel
    /// probe (24% of the peak).
    fn server_avx512() -> Machine {
        let mut m = server_boot(74.6, 0.374, 128);
        m.isa = crate::Level::Avx512;
        m.f32_lanes = 16;
        m.core_bandwidth_gbs = 13.0;
        m.cache_gbs = 325.2;
        m.private_cache_gbs = 602.5;
        m.lattice_efficiency = 0.241;
        m.lattice_stream_share = 1.0;
        m
    }

    #[test]
    fn lattice_rings_stay_in_the_private_caches_where_the_last_level_is_slow_per_core() {
        // D3Q19 f32 256³ there, one-thread strips on 16 threads (MLUPS, two runs each):
        // dim_t 2 260×12 916 / 819, 260×28 832 / 871; dim_t 3 262×14 831 / 915, 262×16 882 /
        // 841, 262×18 854 / 860, 262×24 (rings and streams 2.4 MB, past the 2 MiB L2) 798 /
        // 806; dim_t 4 264×16 774 / 719; naive 465 / 454. On a faster boot dim_t 3
        // 262×16 1,256-1,291 and 262×20 1,195-1,278 against dim_t 2 260×12 1,000-1,131.
        let m = server_avx512();
        assert!((m.llc_core_speed() - 325.2 / 16.0 / machine::SPILL_FULL_SPEED_GBS).abs() < 1e-9);
        // Another boot: its cache probe saw 16 MiB of fast L3 and no rate for it, and its
        // compute probes ran slow; the rings still belong in the L2s.
        let mut slow_probes = m.clone();
        slow_probes.bandwidth_gbs = 82.1;
        slow_probes.compute_efficiency = 0.168;
        slow_probes.lattice_efficiency = 0.254;
        slow_probes.measured_cache_bytes = 16 << 20;
        slow_probes.cache_gbs = 0.0;
        // Their working sets leave a quarter of the L2 free (`LATTICE_PRIVATE_SHARE`). With
        // rings of planes that gave `dim_t` 2 260×26 (`f32`; `dim_t` 3 then got 262×14 at κ
        // 1.24) and 260×12 (`f64`); rings of rows (one-thread groups) fit `dim_t` 3 262×20 (κ
        // 1.14) and `f64` 260×15. Measured on one boot, 16 threads, four rounds (MLUPS):
        // `f32` rows `dim_t` 3 262×20 1,130 / 1,135 / 1,167 / 1,072, rows `dim_t` 2 260×26
        // 1,074 / 937 / 1,005 / 925, planes `dim_t` 2 260×26 989 / 960 / 1,022 / 958, planes
        // `dim_t` 3 262×14 1,312 / 1,044 / 1,039 / 996; naive 581 / 559 / 592 / 572. On
        // another boot: `f64` rows 260×15 490 / 534 against planes 260×12 503 / 511.
        for m in [m, slow_probes] {
            for (dtype, expected) in [(DType::F32, (3, [262, 20])), (DType::F64, (2, [260, 15]))] {
                let plan = lattice_plan(&m, dtype, [256; 3], Engine::Blocked, None);
                assert_eq!((plan.dim_t(), plan.tile()), expected, "{plan}");
                let held = m.private_cache_bytes() as f64 * model::LATTICE_PRIVATE_SHARE;
                assert!(plan.chosen().working_set as f64 <= held, "{plan}");
            }
        }
        // Where the last level streams fast per core (the 2-core EPYC, the 2-core Xeon) and
        // its rate was measured, lattice tiles stay fitted to it by eq. (1): the EPYC's
        // fastest lattice rings were 5.8-7.8 MB, far past its 512 KiB L2s.
        for m in [epyc_slice(), xeon_slice()] {
            assert_eq!(m.llc_core_speed(), 1.0);
            assert!(m.cache_gbs > 0.0);
            for dim_t in [2, 3] {
                let plan = lattice_plan(&m, DType::F32, [192; 3], Engine::Blocked, Some(dim_t));
                // Rings of rows keep less than eq. (1) charges, so such a tile may fit the L2
                // but not the share the private-cache strips keep to.
                let held = m.private_cache_bytes() as f64 * model::LATTICE_PRIVATE_SHARE;
                assert!(plan.chosen().working_set as f64 > held, "{plan}");
            }
        }
    }

    #[test]
    fn a_lattice_working_set_is_its_rings_and_one_plane_of_streams() {
        // f32, one-thread groups: dim_t − 1 rings of rows (24·14 + 33 + 19·4 rows for a level
        // 1 of 14 rows) and 19 streamed planes, each of level 1's region (the loaded tile less
        // one node per side).
        let m = server_avx512();
        let plan = lattice_plan(&m, DType::F32, [256; 3], Engine::Blocked, Some(3));
        let plan = plan
            .rebuild()
            .tile([262, 16])
            .tile_threads(1)
            .build()
            .unwrap();
        assert_eq!(
            plan.chosen().working_set,
            (2 * (24 * 14 + 33 + 19 * 4) + 19 * 14) * 256 * 4,
            "{plan}"
        );
        let plan = plan
            .rebuild()
            .dim_t(2)
            .tile([260, 12])
            .tile_threads(2)
            .build()
            .unwrap();
        assert_eq!(
            plan.chosen().working_set,
            (62 + 19) * 256 * 10 * 4,
            "{plan}"
        );
    }

    #[test]
    fn a_streamed_lattice_pass_pays_no_write_allocate() {
        // On that host, D3Q19 256³, 16 threads (MLUPS, 2-3 runs each): f32 dim_t 2
        // 260×12 with the last level streamed 492-533, written directly 396-445 (naive
        // 362-398); f64 284 and 284 against 255 and 219 (naive 208 and 246).
        let m = server_avx2();
        for dtype in [DType::F32, DType::F64] {
            let plan = lattice_plan(&m, dtype, [256; 3], Engine::Blocked, Some(2));
            let naive = lattice_plan(&m, dtype, [256; 3], Engine::Naive, None);
            let (c, n) = (plan.chosen(), naive.chosen());
            // Two steps per pass move half the naive sweep's bytes per update (before ghost
            // zones, which the candidate's rate leaves out), and on x86-64 the streamed half
            // costs 2/3 of the probe's ordinary stores.
            let streamed = if cfg!(target_arch = "x86_64") {
                1.5
            } else {
                1.0
            };
            let want = n.memory_mups * 2.0 * streamed;
            assert!((c.memory_mups / want - 1.0).abs() < 1e-9, "{plan}\n{naive}");
        }
    }

    /// The 16-core host as its probes saw two of its boots.
    fn server_boot(bandwidth_gbs: f64, efficiency: f64, cache_mib: usize) -> Machine {
        let mut m = server_slice();
        m.bandwidth_gbs = bandwidth_gbs;
        m.core_bandwidth_gbs = 16.2;
        m.compute_efficiency = efficiency;
        m.measured_cache_bytes = cache_mib << 20;
        m.cache_gbs = 330.0;
        m.private_cache_gbs = 620.0;
        m
    }

    #[test]
    fn a_grid_that_fits_the_last_level_cache_streams_at_its_rate() {
        // 16-core host, star7 f32 256³ (103.6 GB/s memory probe): both
        // grids (128 MiB) fit the 128 MiB of usable last-level cache; naive 14.1-19.5k MUPS
        // (up to 156 GB/s counted), the blocked plan ranked by memory's rate (dim_t 8 143x48)
        // 8.6-10.8k, dim_t 4 262x24 13.8-15.1k. A grid pair above the cache (288³, 182 MiB)
        // and every 512³ grid stay in memory, where blocking still pays.
        let m = server_boot(103.6, 0.42, 128);
        let plan = |n: usize, engine: Option<Engine>| {
            let b = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [n; 3])
                .machine(m.clone())
                .threads(16);
            match engine {
                Some(e) => b.engine(e),
                None => b,
            }
            .build()
            .unwrap()
        };
        let naive = plan(256, Some(Engine::Naive));
        assert!(
            naive.predicted_mups() > 14_000.0,
            "{}",
            naive.predicted_mups()
        );
        assert_eq!(plan(256, None).engine(), Engine::Naive);
        assert!(plan(256, Some(Engine::Blocked)).dim_t() <= 4);
        let outside = plan(288, Some(Engine::Naive));
        assert!(
            outside.predicted_mups() < 0.7 * naive.predicted_mups(),
            "{} against {}",
            outside.predicted_mups(),
            naive.predicted_mups()
        );
        assert_eq!(plan(288, None).engine(), Engine::Blocked);
        assert_eq!(plan(512, None).engine(), Engine::Blocked);
    }

    #[test]
    fn a_core_waits_for_memory_and_computes_in_turn() {
        // star7 f32 512^3 there (MUPS): naive 7225 and 7740 on 16 threads (min(compute,
        // memory) predicted 9020 and 13213), 1027 on one thread (predicted 1663); blocked
        // dim_t 2 514x36 10982, dim_t 3 516x38 12628, dim_t 4 518x24 13834 on 16 threads,
        // dim_t 2 514x63 1626 on one. min() rated dim_t 2 as good as 3-4 and, with few
        // threads, the naive sweep best.
        for (m, naive_measured) in [
            (server_boot(72.2, 0.37, 128), 7225.0),
            (server_boot(105.7, 0.43, 32), 7740.0),
        ] {
            let plan = |threads, engine: Option<Engine>| {
                let b = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [512; 3])
                    .machine(m.clone())
                    .threads(threads);
                match engine {
                    Some(e) => b.engine(e),
                    None => b,
                }
                .build()
                .unwrap()
            };
            let naive = plan(16, Some(Engine::Naive)).chosen().predicted_mups;
            assert!(
                (naive / naive_measured - 1.0).abs() < 0.25,
                "naive predicted {naive:.0}, measured {naive_measured}"
            );
            let blocked = plan(16, Some(Engine::Blocked));
            assert!(blocked.dim_t() >= 3, "{blocked}");
            assert!(
                (10_000.0..16_000.0).contains(&blocked.chosen().predicted_mups),
                "{blocked}"
            );
            for threads in [1, 2, 4, 8] {
                let p = plan(threads, None);
                assert!(p.engine() == Engine::Blocked && p.dim_t() >= 2, "{p}");
            }
            // box27's arithmetic covers its traffic (γ < Γ): it overlaps, and naive wins
            // (measured 5,520-6,341 MUPS against blocked dim_t 3's 5,230-5,916).
            let boxed =
                PlanBuilder::new(Stencil::from_name("box27").unwrap(), DType::F32, [512; 3])
                    .machine(m.clone())
                    .build()
                    .unwrap();
            assert_eq!(boxed.engine(), Engine::Naive, "{boxed}");
        }
    }

    /// The planner's decisions for the cases users hit, on each recorded machine (all its
    /// cores, nothing fixed but the machine): the engine and dim_t. The expected values are the
    /// model's decisions on those recorded figures, not measurements: a change to the model
    /// that flips one shows up here, to be confirmed against the measurements quoted in the
    /// tests above and this table updated.
    #[test]
    fn the_planners_decisions_on_recorded_machines() {
        let machines: [(&str, Machine); 4] = [
            ("2-core Zen 5 EPYC", zen5_slice()),
            ("2-core Zen 3 EPYC", epyc_slice()),
            ("2-core Xeon", xeon_slice()),
            ("16-core host, AVX-512 boot", server_avx512()),
        ];
        let n = |e: Engine, d: usize| (e, d);
        let (naive, blocked) = (Engine::Naive, Engine::Blocked);
        // The decision on each machine above: engine and dim_t.
        type Decisions = [(Engine, usize); 4];
        // (kernel, dtype, edge of the cubic grid, the decisions)
        let cases: [(&str, DType, usize, Decisions); 8] = [
            // Both grids fit every machine's usable cache: compute-bound, nothing to block.
            ("star7", DType::F32, 64, [n(naive, 1); 4]),
            // The 16-core host's 128 MiB of fast L3 holds both 64 MiB grids.
            (
                "star7",
                DType::F32,
                256,
                [n(blocked, 7), n(blocked, 7), n(blocked, 5), n(naive, 1)],
            ),
            (
                "star7",
                DType::F32,
                512,
                [n(blocked, 8), n(blocked, 8), n(blocked, 4), n(blocked, 4)],
            ),
            // γ < Γ: the arithmetic covers the traffic.
            ("box27", DType::F32, 256, [n(naive, 1); 4]),
            ("star:4", DType::F32, 256, [n(naive, 1); 4]),
            (
                "d3q19",
                DType::F32,
                128,
                [n(blocked, 5), n(blocked, 4), n(blocked, 4), n(blocked, 4)],
            ),
            (
                "d3q19",
                DType::F32,
                256,
                [n(blocked, 4), n(blocked, 4), n(blocked, 3), n(blocked, 3)],
            ),
            (
                "star7",
                DType::F64,
                256,
                [n(blocked, 7), n(blocked, 7), n(blocked, 4), n(blocked, 4)],
            ),
        ];
        let mut wrong = Vec::new();
        let mut table = String::new();
        for (name, dtype, edge, expected) in cases {
            let kernel: Kernel = if name == "d3q19" {
                CLOSED_LATTICE.into()
            } else {
                Stencil::from_name(name).unwrap().into()
            };
            let mut row = Vec::new();
            for ((machine, m), want) in machines.iter().zip(expected) {
                let plan = PlanBuilder::new(kernel.clone(), dtype, [edge; 3])
                    .machine(m.clone())
                    .build()
                    .unwrap();
                let got = (plan.engine(), plan.dim_t());
                row.push(format!("n({:?}, {})", got.0, got.1).to_lowercase());
                if got != want {
                    wrong.push(format!(
                        "{name} {dtype} {edge}^3 on the {machine}: {got:?}, expected {want:?}"
                    ));
                }
            }
            table += &format!("{name} {dtype} {edge}: [{}]\n", row.join(", "));
        }
        assert!(
            wrong.is_empty(),
            "{}\nthe decisions:\n{table}",
            wrong.join("\n")
        );
    }
}
