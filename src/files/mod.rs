//! Files as the library reads and writes them, whatever they hold: whole-file writes that
//! leave the old file or the new one and never a part ([`write_whole`], [`Staged`]; the
//! temporary files of writes killed mid-way are removed by later writes), checks
//! that a place can be written before a run starts, and inputs opened only as regular files
//! of a sane size. The output formats (`output`) and the lattice checkpoints sit on top.

mod input;
mod stale;
mod whole;
mod writable;

pub use self::input::{open_regular_file, read_text_file};
pub(crate) use self::whole::{commit_durable, stage_durable};
pub use self::whole::{remove_unfinished, write_whole, write_whole_durable, Staged};
pub use self::writable::{check_output_target, check_writable_dir, check_writable_file};
