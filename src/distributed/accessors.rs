//! The accessors every distributed state shares, generated from one source.

/// The accessors every distributed state has: the whole grid's dimensions, the split, this
/// rank's block, its local state (`$local`, described by `$what`) and the steps between
/// exchanges. One source for the three states.
macro_rules! split_accessors {
    ($state:ident, $local:ty, $what:literal) => {
        impl<T: $crate::real::Real> $state<T> {
            /// The communicator of the ranks the state is split over (its own duplicate of
            /// the one it was made with).
            pub fn communicator(&self) -> &mpi::topology::SimpleCommunicator {
                &self.comm
            }

            /// The whole grid's dimensions.
            pub fn dims(&self) -> [usize; 3] {
                self.decomposition.dims
            }

            /// How the grid is split.
            pub fn decomposition(&self) -> &$crate::distributed::decompose::Decomposition {
                &self.decomposition
            }

            /// This rank's part.
            pub fn block(&self) -> &$crate::distributed::decompose::Block {
                &self.block
            }

            #[doc = concat!("This rank's local ", $what, " (block and halos; [`Block::global`](crate::distributed::Block::global) maps its y and z indices).")]
            pub fn local(&self) -> &$local {
                &self.local
            }

            /// Time steps advanced between halo exchanges.
            pub fn steps_per_exchange(&self) -> usize {
                self.steps_per_exchange
            }

            /// How the halos travel between the ranks' GPUs, once a run on them has chosen
            /// (`None` before, and for runs on the CPU).
            pub fn gpu_halos(&self) -> Option<$crate::tuning::GpuHalos> {
                self.device.as_ref().map(|d| d.path())
            }
        }
    };
}
pub(crate) use split_accessors;
