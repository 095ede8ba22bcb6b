//! Which cores this process's workers use: those it may run on, or, for one of several MPI
//! ranks started on a host without binding, its own share of them.

/// The cores this process pins its workers to: those it may run on, or, where the ranks of an
/// MPI job on this host were started without binding (each may run on every core, so their
/// pinned workers would pile onto the same first cores), this rank's share of them (its place
/// from [`host_ranks`]).
pub(crate) fn pinning_cores() -> Vec<core_affinity::CoreId> {
    rank_share(core_affinity::get_core_ids().unwrap_or_default())
}

/// This process's place among the MPI ranks on its host, `(rank, ranks)`, as the launcher
/// names it: OpenMPI in `OMPI_COMM_WORLD_LOCAL_RANK` and `OMPI_COMM_WORLD_LOCAL_SIZE`, MPICH's
/// Hydra in `MPI_LOCALRANKID` and `MPI_LOCALNRANKS`, MVAPICH2 in `MV2_COMM_WORLD_LOCAL_RANK`
/// and `MV2_COMM_WORLD_LOCAL_SIZE`; `None` outside an MPI job.
pub fn host_ranks() -> Option<(usize, usize)> {
    let local = |key: &str| std::env::var(key).ok()?.parse::<usize>().ok();
    [
        ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
        ("MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"),
    ]
    .iter()
    .find_map(|(rank, size)| Some((local(rank)?, local(size)?)))
}

/// This rank's share of `cores` (the cores this process may run on), as [`pinning_cores`]
/// takes it; all of them outside an MPI job.
fn rank_share<C: Copy>(cores: Vec<C>) -> Vec<C> {
    // SAFETY: sysconf only reads a system setting.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    match host_ranks() {
        Some((rank, ranks)) => local_share(cores, rank, ranks, online),
        None => cores,
    }
}

/// Of the `cores` each of `ranks` ranks on a host of `online` cores may run on, rank `rank`'s
/// share: an equal slice where the ranks' sets must overlap (more cores in all than the host
/// has), else all of them (the ranks were bound to cores of their own).
fn local_share<C: Copy>(cores: Vec<C>, rank: usize, ranks: usize, online: usize) -> Vec<C> {
    if ranks < 2 || rank >= ranks || cores.len() < ranks || cores.len() * ranks <= online {
        return cores;
    }
    let share = cores.len() / ranks;
    cores[rank * share..(rank + 1) * share].to_vec()
}

/// How many cores this process's workers should use: what the system lets it use, or, for
/// an unbound MPI rank sharing its host (see [`pinning_cores`]), its share of them. The
/// planner's thread count.
pub(crate) fn usable_cores() -> usize {
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let all = core_affinity::get_core_ids().unwrap_or_default();
    let count = all.len();
    let mine = rank_share(all).len();
    if mine < count {
        mine.clamp(1, available)
    } else {
        available
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbound_ranks_pin_to_their_own_share_of_the_cores() {
        let all: Vec<usize> = (0..16).collect();
        // Two unbound ranks on 16 cores: halves.
        assert_eq!(
            local_share(all.clone(), 0, 2, 16),
            (0..8).collect::<Vec<_>>()
        );
        assert_eq!(
            local_share(all.clone(), 1, 2, 16),
            (8..16).collect::<Vec<_>>()
        );
        // Three unbound ranks: five each, the last core left over.
        assert_eq!(
            local_share(all.clone(), 2, 3, 16),
            (10..15).collect::<Vec<_>>()
        );
        // Ranks bound to eight cores each keep them; so does a rank alone.
        let bound: Vec<usize> = (8..16).collect();
        assert_eq!(local_share(bound.clone(), 1, 2, 16), bound);
        assert_eq!(local_share(all.clone(), 0, 1, 16), all);
        // More ranks than cores, or a rank index out of range: no slicing.
        assert_eq!(local_share(vec![0, 1], 1, 4, 2), vec![0, 1]);
        assert_eq!(local_share(all.clone(), 5, 2, 16), all);
    }

    #[test]
    fn usable_cores_are_at_least_one_and_at_most_the_available() {
        let n = usable_cores();
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!((1..=available).contains(&n), "{n} of {available}");
    }
}
