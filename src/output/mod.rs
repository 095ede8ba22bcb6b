//! Writing results for people and other tools: PNG pictures of slices with a colour map.

mod png;

pub use self::png::{write_png, ColorMap, Slice};
