//! Writing results for people and other tools: PNG pictures of slices with a colour map, and
//! VTK ImageData files of whole fields for ParaView.

mod png;
mod vti;

pub(crate) use self::png::write_rgb;
pub use self::png::{write_png, ColorMap, Slice};
pub use self::vti::{interleave, write_lattice_vti, write_vti, VtiArray, VtiValues};
