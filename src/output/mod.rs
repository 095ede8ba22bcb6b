//! Writing results for people and other tools: PNG pictures of slices with a colour map (bare,
//! or as figures with title, axes and colour bar), and VTK ImageData files of whole fields for
//! ParaView; NumPy `.npy` arrays (written and read), SEG-Y shot records and shot-gather
//! figures for seismic work; images read and written as channel planes for the 2D kernels
//! ([`Picture`]); checks that output places can be written before a run starts, and that
//! input files are regular files of a sane size.

mod figure;
mod gather;
mod npy;
mod picture;
mod png;
mod segy;
mod vti;

pub use self::figure::{
    check_png_slice, decade_ticks, log_ticks, minor_log_ticks, nice_ticks, write_png_slice,
    PictureAxis, PictureLayout, PictureOptions, PixelRect,
};
pub(crate) use self::figure::{
    format_fixed, format_significant, plot_err, register_font, tick_decimals, TickedAxis,
};
pub use self::gather::write_gather_png;
pub use self::npy::{read_npy_f64, read_npy_shape, write_npy};
pub use self::picture::Picture;
pub(crate) use self::png::write_rgb;
pub use self::png::{write_png, ColorMap, Slice, MAX_PICTURE_PIXELS};
pub use self::segy::{check_segy_positions, write_segy, SegyShot, SegyTrace, SEGY_MAX_16};
pub use self::vti::{
    interleave, lattice_arrays, write_lattice_vti, write_lattice_vti_piece, write_pvti, write_vti,
    write_vti_piece, write_vti_spaced, PvtiPiece, VtiArray, VtiBuffer, VtiValues,
};
#[cfg(feature = "mpi")]
pub(crate) use self::vti::{lattice_moments, write_moments_vti_piece};
pub use crate::files::{
    check_output_target, check_writable_dir, check_writable_file, open_regular_file,
    read_text_file, remove_unfinished, write_whole, write_whole_durable, Staged,
};
